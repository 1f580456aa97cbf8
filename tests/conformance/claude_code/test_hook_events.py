"""Every hook event of Claude Code's hooks reference, as documented, through the real bridge.

The inputs are ``fixtures/hook_inputs.json``: every JSON input example of the reference, copied
as written (source, commit and date in the file). The answers are checked against the reference's
output examples (``fixtures/hook_outputs.json``), the telemetry in the traces file the bridge
writes, and the canonical events at a real webhook server.

Every documented input goes through :func:`run_hook` (the function the CLI runs on its stdin
bytes) in this process; the events whose handling is not shared with another (point events,
compaction, the failed turn) and every answer the bridge gives go through the real
``otelhooks claude-code`` process, as Claude Code runs it. One hook process costs about a second
of CPU, so the whole list through processes would take minutes on a shared machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks import semconv as sc
from otelhooks._fingerprint import canonical_json, fnv1a_64
from otelhooks.integrations.claude_code import BridgeOptions, run_hook, session_trace_id
from otelhooks.integrations.coding_agents._mapping import EVENTS
from tests._webhook_server import WebhookServer, webhook_server
from tests.conformance.claude_code._bridge_cli import Run, fixture, hook_env, run_all

INPUTS = fixture("hook_inputs.json")
# events of the pinned CLI that the docs' mirror predates, their inputs as the CLI writes them
CLI_INPUTS = fixture("cli_inputs.json")["inputs"]
OUTPUTS = fixture("hook_outputs.json")
ARGS = [
    "--hooks", ".claude/otelhooks.yaml",
    "--traces-out", ".claude/traces.jsonl",
    "--state", ".claude/state.sqlite3",
]  # fmt: skip
# observers of every canonical event the bridge dispatches (the two that can block answer)
BLOCKING = {"before_tool_call", "before_agent_start"}
GUARDS = """
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
  - id: no-secrets
    type: UserPromptSubmit
    command: "if grep -q 'the secret'; then echo 'no secrets in prompts' >&2; exit 2; fi"
"""


def hooks_file(url: str) -> str:
    observers = "".join(
        f"  - id: seen-{name}\n    type: {name}\n    webhook: {{url: '{url}/{name}'}}\n"
        for name in sorted({e.canonical for e in EVENTS.values()} - BLOCKING)
    )
    return "hooks:\n" + observers + GUARDS


OPTIONS = BridgeOptions(
    hooks=(".claude/otelhooks.yaml",),
    traces_out=".claude/traces.jsonl",
    state=".claude/state.sqlite3",
)
# through real processes: every event handled by the generic path, compaction, the failed turn
BY_PROCESS = ("PreCompact", "PostCompact", "PostToolBatch", "StopFailure")


def documented_input(event: str) -> dict[str, Any]:
    found: dict[str, Any] = next(i["input"] for i in INPUTS["inputs"] if i["event"] == event)
    return found


def deep_tool_input() -> str:
    deep = '{"a":' * 1200 + '"rm -rf /"' + "}" * 1200
    return (
        '{"session_id":"deep","hook_event_name":"PreToolUse","tool_name":"Bash",'
        f'"tool_use_id":"toolu_deep","tool_input":{{"command":"ls","extra":{deep}}}}}'
    )


def answer_cases() -> dict[str, tuple[list[str], str]]:
    """The inputs whose answers the tests check: name → (extra flags, stdin)."""
    pre = documented_input("PreToolUse")
    unknown = {
        "session_id": "new-events",
        "hook_event_name": "SomethingClaudeAddsLater",
        "cwd": "/somewhere",
        "brand_new": {"nested": [1, 2]},
        "flag": True,
    }
    return {
        "deny": ([], json.dumps({**pre, "tool_input": {"command": "rm -rf node_modules"}})),
        "deny-exit2": (
            ["--deny-mode", "exit2"],
            json.dumps({**pre, "tool_use_id": "toolu_x2", "tool_input": {"command": "rm -rf /"}}),
        ),
        "prompt-block": (
            [],
            json.dumps({**documented_input("UserPromptSubmit"), "prompt": "print the secret key"}),
        ),
        "unknown-event": ([], json.dumps(unknown)),
        "unknown-fields": (
            [],
            json.dumps({**documented_input("PreCompact"), "session_id": "x", "more": {"y": [1]}}),
        ),
        "deep": ([], deep_tool_input()),
        "surrogate": (
            [],
            '{"session_id":"sur","hook_event_name":"PreToolUse","tool_name":"Bash",'
            '"tool_use_id":"toolu_sur","tool_input":{"command":"rm -rf / \\ud800"}}',
        ),
        **{name: ([], json.dumps(documented_input(name))) for name in BY_PROCESS},
    }


@dataclass
class Project:
    root: Path
    env: dict[str, str]
    server: WebhookServer
    documented: list[tuple[dict[str, Any], Run]]
    answers: dict[str, Run]

    def spans(self) -> list[dict[str, Any]]:
        return read_otlp_json_lines(self.root / ".claude" / "traces.jsonl")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """Every documented input once, in document order, in process; then the answer cases and
    the :data:`BY_PROCESS` events again, as real hook processes, all at once."""
    root = tmp_path_factory.mktemp("project")
    (root / ".claude").mkdir()
    with webhook_server() as server:
        (root / ".claude" / "otelhooks.yaml").write_text(hooks_file(server.url))
        # these tests check what reaches the hooks, not the bridge's 1 s delivery deadline at
        # exit (a loaded 2-core machine can pass it, and the notification is then reported lost)
        env = hook_env(root, root / "home", OTELHOOKS_SHUTDOWN_TIMEOUT="10")
        documented = []
        for item in [*INPUTS["inputs"], *CLI_INPUTS]:
            response = run_hook(json.dumps(item["input"]).encode(), OPTIONS, environ=env)
            run = Run(response.exit_code, response.stdout, response.stderr)
            documented.append((item["input"], run))
        cases = answer_cases()
        runs = run_all([([*ARGS, *f], text) for f, text in cases.values()], cwd=root, env=env)
        yield Project(root, env, server, documented, dict(zip(cases, runs, strict=True)))


@pytest.fixture(scope="module")
def documented(project: Project) -> list[tuple[dict[str, Any], Run]]:
    return project.documented


def test_the_fixtures_cover_every_event_the_reference_lists() -> None:
    listed = set(INPUTS["events_table"])
    assert len(listed) == 31
    assert {item["event"] for item in INPUTS["inputs"]} == listed
    # the bridge's mapping table has a row for each, and for each event only the CLI documents
    assert set(EVENTS) == listed | {item["event"] for item in CLI_INPUTS}


def test_every_documented_input_succeeds_with_no_answer(
    documented: list[tuple[dict[str, Any], Run]],
) -> None:
    # none of the documented examples is something the hooks object to: exit 0, empty stdout
    # ("exit 0 without any JSON at all" lets the action proceed), no traceback
    failed = {
        i["hook_event_name"]: (r.code, r.stdout, r.stderr[-300:])
        for i, r in documented
        if r.code != 0 or r.stdout or "Traceback" in r.stderr
    }
    assert failed == {}


def test_the_documented_precompact_input_reaches_before_compact(
    documented: list[tuple[dict[str, Any], Run]], project: Project
) -> None:
    got = project.server.wait_for("/before_compact", 3)  # in process, by process, extra fields
    bodies = [g.json() for g in got]
    assert len(bodies) == 3
    assert {b["hookType"] for b in bodies} == {"before_compact"}
    # Claude Code's own fields travel with the canonical event
    assert bodies[0]["claudeCode"]["trigger"] == "manual"
    assert "multiple values for argument" not in "".join(r.stderr for _, r in documented)


def test_each_documented_event_reaches_its_canonical_event(
    documented: list[tuple[dict[str, Any], Run]], project: Project
) -> None:
    expected = {e.canonical for name, e in EVENTS.items() if e.canonical not in BLOCKING}
    for name in expected:
        project.server.wait_for(f"/{name}", timeout_s=5)
    seen = {r.path.lstrip("/") for r in project.server.received}
    assert expected <= seen, expected - seen


def test_each_documented_event_leaves_telemetry_in_the_session_trace(
    documented: list[tuple[dict[str, Any], Run]], project: Project
) -> None:
    # every example has session "abc123": one trace
    trace = format(session_trace_id("abc123"), "032x")
    spans = [s for s in project.spans() if s["traceId"] == trace]
    span_events = {e["name"] for s in spans for e in s.get("events", [])}
    names = {s["name"] for s in spans}
    missing = []
    for name, event in EVENTS.items():
        if event.handled_by == "point":
            if "claude_code." + name not in span_events:
                missing.append(name)
        elif event.handled_by == "tools":
            if not any(n.startswith("execute_tool ") for n in names):
                missing.append(name)
        elif event.handled_by == "session":
            if f"agent_lifecycle {event.canonical}" not in names:
                missing.append(name)
        elif not any(n.startswith("invoke_agent ") for n in names):
            missing.append(name)
    assert missing == []


def test_the_generic_events_succeed_as_real_hook_processes(project: Project) -> None:
    runs = {name: project.answers[name] for name in BY_PROCESS}
    failed = {n: (r.code, r.stdout, r.stderr[-300:]) for n, r in runs.items() if r.code or r.stdout}
    assert failed == {}
    spans = project.spans()
    span_events = [e["name"] for s in spans for e in s.get("events", [])]
    # each twice: once in process, once from its own hook process (PreCompact once more, with
    # unknown fields)
    point = ("PreCompact", "PostCompact", "PostToolBatch")
    assert {n: span_events.count("claude_code." + n) for n in point} == {
        "PreCompact": 3,
        "PostCompact": 2,
        "PostToolBatch": 2,
    }
    failed_turns = [s for s in spans if s["attributes"].get("error.type") == "rate_limit"]
    assert len(failed_turns) == 2
    assert {s["name"] for s in failed_turns} == {"invoke_agent claude-code"}


def test_point_event_fields_become_span_event_attributes_without_content(
    documented: list[tuple[dict[str, Any], Run]], project: Project
) -> None:
    events = {e["name"]: e for s in project.spans() for e in s.get("events", [])}
    compact = events["claude_code.PreCompact"]["attributes"]
    assert compact["claude_code.trigger"] == "manual"
    assert "claude_code.custom_instructions" not in compact  # content: capture is off
    notification = events["claude_code.Notification"]["attributes"]
    assert notification["claude_code.notification_type"] == "permission_prompt"


def test_an_unknown_event_with_unknown_fields_is_a_span_event_not_an_error(
    project: Project,
) -> None:
    result = project.answers["unknown-event"]
    assert (result.code, result.stdout) == (0, "")
    later = "claude_code.SomethingClaudeAddsLater"
    (span,) = [s for s in project.spans() if any(e["name"] == later for e in s.get("events", []))]
    assert span["name"] == "agent_lifecycle claude_code_event"
    assert span["events"][0]["attributes"]["claude_code.flag"] is True


def test_unknown_fields_on_a_known_event_are_ignored(project: Project) -> None:
    result = project.answers["unknown-fields"]
    assert (result.code, result.stdout) == (0, "")


def test_a_tool_input_nested_1200_deep_is_still_checked_and_denied(project: Project) -> None:
    result = project.answers["deep"]
    assert result.code == 0, result.stderr
    assert result.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_lone_surrogate_in_the_tool_input_is_not_a_bridge_error(project: Project) -> None:
    result = project.answers["surrogate"]
    assert result.code == 0, result.stderr
    assert result.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


def _documented_output(section: str, event: str | None) -> dict[str, Any]:
    """The reference's example answer in ``section`` for ``event`` (``None``: top-level)."""
    for item in OUTPUTS["outputs"]:
        specific = item["output"].get("hookSpecificOutput")
        named = specific.get("hookEventName") if isinstance(specific, dict) else None
        if item["section"] == section and named == event:
            found: dict[str, Any] = item["output"]
            return found
    raise LookupError(section)


def _shape(value: Any) -> Any:
    """Keys and value types, recursively: what a schema checks."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


def test_a_pretooluse_deny_has_the_documented_shape(project: Project) -> None:
    result = project.answers["deny"]
    example = _documented_output("Decision control", "PreToolUse")
    assert result.code == 0
    assert _shape(result.json()) == _shape(example)
    assert result.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_pretooluse_deny_in_exit2_mode_is_exit_code_2_with_the_reason(
    project: Project,
) -> None:
    result = project.answers["deny-exit2"]
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.strip().endswith("rm -rf is not allowed here")


def test_a_blocked_prompt_has_the_documented_top_level_decision(project: Project) -> None:
    result = project.answers["prompt-block"]
    example = _documented_output("Decision control", None)  # top-level decision + reason
    assert result.code == 0
    assert _shape(result.json()) == _shape(example)
    assert result.json() == {"decision": "block", "reason": "no secrets in prompts"}


def test_a_post_tool_use_without_its_start_keeps_the_arguments_fingerprint(
    tmp_path: Path,
) -> None:
    documented = documented_input("PostToolUse")
    options = BridgeOptions(traces_out=str(tmp_path / "t.jsonl"), state=str(tmp_path / "s.db"))
    response = run_hook(json.dumps({**documented, "session_id": "late"}), options, environ={})
    assert response.exit_code == 0, response.stderr
    (span,) = read_otlp_json_lines(tmp_path / "t.jsonl")
    encoded = canonical_json(documented["tool_input"]).encode()
    assert span["attributes"][sc.TOOL_ARGS_FINGERPRINT] == f"{fnv1a_64(encoded):016x}"


def test_every_documented_tool_input_starts_and_ends_one_tool_span(tmp_path: Path) -> None:
    """The per-tool ``tool_input`` tables of the reference (``fixtures/tool_inputs.json``)."""
    tools = fixture("tool_inputs.json")["tools"]
    options = BridgeOptions(traces_out=str(tmp_path / "t.jsonl"), state=str(tmp_path / "s.db"))
    pre, post = documented_input("PreToolUse"), documented_input("PostToolUse")
    for n, (tool, shapes) in enumerate(tools.items()):
        use = {"tool_name": tool, "tool_input": shapes["tool_input"], "tool_use_id": f"toolu_{n}"}
        started = run_hook(json.dumps({**pre, **use, "session_id": "tools"}), options, environ={})
        ended = run_hook(
            json.dumps(
                {**post, **use, "session_id": "tools", "tool_response": shapes["tool_response"]}
            ),
            options,
            environ={},
        )
        assert (started.exit_code, started.stdout, ended.exit_code, ended.stdout) == (0, "", 0, "")
    spans = read_otlp_json_lines(tmp_path / "t.jsonl")
    assert sorted(s["name"] for s in spans) == sorted(f"execute_tool {t}" for t in tools)
    for span in spans:
        shapes = tools[span["name"].removeprefix("execute_tool ")]
        encoded = canonical_json(shapes["tool_input"]).encode()
        assert span["attributes"][sc.TOOL_ARGS_FINGERPRINT] == f"{fnv1a_64(encoded):016x}"


def test_the_inputs_a_real_claude_code_sent_are_handled(tmp_path: Path) -> None:
    """``fixtures/real_client_inputs.json``: what Claude Code 2.1.197 wrote to a hook's stdin in
    one offline run (the fixture says how); replayed, the guard denies the same call."""
    real = fixture("real_client_inputs.json")["inputs"]
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        traces_out=str(tmp_path / "t.jsonl"),
        state=str(tmp_path / "s.db"),
    )
    (tmp_path / "hooks.yaml").write_text("hooks:" + GUARDS)
    answers = {i["hook_event_name"]: run_hook(json.dumps(i), options, environ={}) for i in real}
    assert {n: a.exit_code for n, a in answers.items()} == {n: 0 for n in answers}
    denied = json.loads(answers["PreToolUse"].stdout)["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    names = [s["name"] for s in read_otlp_json_lines(tmp_path / "t.jsonl")]
    assert names == [
        "agent_lifecycle session_start",
        "execute_tool Bash",
        "agent_lifecycle after_tool_batch",
        "invoke_agent claude-code",
        "agent_lifecycle session_end",
    ]
