"""Claude Code's ``settings.json`` hook schema, as its documentation writes it.

``fixtures/settings_from_docs.json`` is every settings example of the hooks reference and guide,
merged; ``fixtures/settings_fields.json`` has one handler per documented handler field (both name
their source). ``otelhooks validate`` accepts both; ``command`` and ``http`` handlers run, and the
others are warnings naming the file, line and hook.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from otelhooks import load_config
from otelhooks._config._claude_if import IfGate, IfRule
from otelhooks._config._claude_settings import ClaudeSettingsWarning
from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.testing import TestPipeline
from tests._webhook_server import Reply, WebhookServer, webhook_server
from tests.conformance.claude_code._bridge_cli import FIXTURES, REPO, fixture

FROM_DOCS = FIXTURES / "settings_from_docs.json"
FIELDS = FIXTURES / "settings_fields.json"


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def load_with_warnings(path: Path) -> tuple[list[Any], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hooks = list(load_config([path]).hooks)
    found = [str(w.message) for w in caught if issubclass(w.category, ClaudeSettingsWarning)]
    return hooks, found


@pytest.mark.parametrize("path", [FROM_DOCS, FIELDS], ids=["docs-examples", "every-field"])
def test_validate_accepts_the_documented_settings(path: Path) -> None:
    result = validate(path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 problems" in result.stdout


def test_validate_warns_for_handlers_it_cannot_run_naming_file_line_and_hook() -> None:
    result = validate(FIELDS)
    # validate's own warnings (counted; --strict fails on them), not Python's on stderr
    lines = [
        line.removeprefix("  warning: ")
        for line in result.stdout.splitlines()
        if line.startswith("  warning: ")
    ]
    skipped = {
        "settings_fields:PostToolUse[0].hooks[0]": "mcp_tool",
        "settings_fields:Stop[0].hooks[0]": "prompt",
        "settings_fields:Stop[0].hooks[1]": "agent",
    }
    for hook_id, kind in skipped.items():
        (line,) = [x for x in lines if f"hook {hook_id}:" in x and kind in x]
        assert line.startswith(f"{FIELDS}:")
        assert line.split(":")[1].isdigit()  # the line in the settings file


def test_every_documented_handler_of_a_runnable_type_becomes_a_hook() -> None:
    data = fixture("settings_from_docs.json")["hooks"]
    runnable = sum(
        1
        for groups in data.values()
        for group in groups
        for handler in group["hooks"]
        if handler["type"] in ("command", "http") and handler.get("shell") != "powershell"
        and not ("if" in handler and not _tool_event(_event_of(data, handler)))
    )  # fmt: skip
    hooks, _ = load_with_warnings(FROM_DOCS)
    assert len(hooks) == runnable


def _event_of(data: dict[str, Any], handler: dict[str, Any]) -> str:
    return next(e for e, gs in data.items() for g in gs if handler in g["hooks"])


def _tool_event(event: str) -> bool:
    return event in {
        "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"
    }  # fmt: skip


def test_handler_fields_map_to_what_runs() -> None:
    hooks, found = load_with_warnings(FIELDS)
    by_id = {h.id: h for h in hooks}
    gated = by_id["settings_fields:PreToolUse[0].hooks[0]"]
    assert isinstance(gated.handler, IfGate)  # "if": "Bash(git *)" gates the command
    assert gated.handler.inner.timeout == 120.0  # 120 s asked: Claude Code allows it
    assert not any("timeout 120 s" in w for w in found)
    exec_form = by_id["settings_fields:PreToolUse[0].hooks[1]"]
    assert exec_form.command == ["node", "${CLAUDE_PLUGIN_ROOT}/scripts/format.js", "--fix"]
    assert exec_form.timeout == 600.0  # Claude Code's default for a command
    http = by_id["settings_fields:PreToolUse[0].hooks[4]"]
    assert http.handler is not None
    assert http.handler.config.timeout == 30.0  # as the handler asks
    assert {"settings_fields:Stop[0].hooks[0]", "settings_fields:Stop[0].hooks[1]"}.isdisjoint(
        by_id
    )


def test_a_wrong_value_of_a_known_field_is_still_an_error(tmp_path: Path) -> None:
    bad = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "once": "yes"}]}]}}
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(bad))
    result = validate(path)
    assert result.returncode == 1
    assert "settings:Stop[0].hooks[0]" in result.stdout
    assert "once" in result.stdout


# -- http handlers: Claude Code's request and answer, against a real server ------------------------


def http_settings(tmp_path: Path, url: str) -> Path:
    """The reference's own http example (HTTP hook fields), pointed at the local server."""
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "http",
                            "url": f"{url}/hooks/pre-tool-use",
                            "timeout": 30,
                            "headers": {"Authorization": "Bearer $MY_TOKEN"},
                            "allowedEnvVars": ["MY_TOKEN"],
                        }
                    ],
                }
            ]
        }
    }
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(settings))
    return path


@pytest.fixture
def server() -> Any:
    with webhook_server() as running:
        yield running


def ask(tmp_path: Path, server: WebhookServer, command: str) -> Any:
    documented = next(
        i["input"] for i in fixture("hook_inputs.json")["inputs"] if i["event"] == "PreToolUse"
    )
    payload = {**documented, "tool_input": {"command": command}}
    options = BridgeOptions(
        hooks=(str(http_settings(tmp_path, server.url)),), state=str(tmp_path / "state.db")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClaudeSettingsWarning)
        return run_hook(json.dumps(payload), options, environ={})


def test_an_http_handler_gets_claude_codes_input_and_its_deny_is_honoured(
    tmp_path: Path, server: WebhookServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOKEN", "tok-123")
    example = next(
        o["output"]
        for o in fixture("hook_outputs.json")["outputs"]
        if o["section"] == "Decision control" and "hookSpecificOutput" in o["output"]
    )  # the reference's PreToolUse deny: "Database writes are not allowed"
    server.routes["/hooks/pre-tool-use"] = Reply.json(example)
    response = ask(tmp_path, server, "psql -c 'drop table users'")
    decision = json.loads(response.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"] == "Database writes are not allowed"
    (got,) = server.requests("/hooks/pre-tool-use")
    body = got.json()
    assert (body["hook_event_name"], body["tool_name"]) == ("PreToolUse", "Bash")
    assert body["tool_input"] == {"command": "psql -c 'drop table users'"}
    assert body["session_id"] == "abc123"
    assert got.headers["authorization"] == "Bearer tok-123"
    assert got.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    "reply",
    [Reply(200), Reply(500), Reply(200, b"plain text")],
    ids=["empty-2xx-no-decision", "non-2xx-non-blocking", "not-json-non-blocking"],
)
def test_an_http_handler_without_a_decision_lets_the_call_through(
    tmp_path: Path, server: WebhookServer, reply: Reply
) -> None:
    server.routes["/hooks/pre-tool-use"] = reply
    response = ask(tmp_path, server, "ls")
    answer = json.loads(response.stdout) if response.stdout else {}
    assert response.exit_code == 0
    assert "hookSpecificOutput" not in answer  # no decision: the call goes through
    if reply.body or reply.status >= 300:
        # a non-blocking error, which Claude Code shows the person: so does the bridge
        assert answer["systemMessage"].startswith("otelhooks: a hook failed and did not decide")
    else:
        assert answer == {}
    assert len(server.requests("/hooks/pre-tool-use")) == 1


_PRE = {"hookEventName": "PreToolUse"}


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ({"continue": False, "stopReason": "halt"}, "halt"),
        ({"hookSpecificOutput": {**_PRE, "permissionDecision": "ask"}}, "asks for confirmation"),
        ({"hookSpecificOutput": {**_PRE, "permissionDecision": "defer"}}, "deferred"),
        (
            {
                "decision": "block",
                "reason": "block wins",
                "hookSpecificOutput": {**_PRE, "permissionDecision": "allow"},
            },
            "block wins",
        ),
    ],
    ids=["continue-false", "ask", "defer", "block-beside-allow"],
)
def test_an_http_handlers_answer_keeps_the_call_from_running_as_a_commands_does(
    tmp_path: Path, server: WebhookServer, pipe: TestPipeline, answer: Any, shown: str
) -> None:
    """Outside Claude Code (the settings loaded for another runtime) nobody can be asked: an
    http handler's ``ask``, ``defer`` and ``continue: false`` block, as a command's do."""
    server.routes["/hooks/pre-tool-use"] = Reply.json(answer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClaudeSettingsWarning)
        loaded = load_config(http_settings(tmp_path, server.url))
    pipe.register(*loaded.hooks)
    ran: list[Any] = []

    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "Bash", {"command": "rm -rf /"}, tool)
    assert ran == []
    assert shown in result.content


def test_the_bridge_passes_an_http_handlers_ask_on_for_claude_code_to_ask(
    tmp_path: Path, server: WebhookServer
) -> None:
    answer = {"hookSpecificOutput": {**_PRE, "permissionDecision": "ask"}}
    server.routes["/hooks/pre-tool-use"] = Reply.json(answer)
    response = ask(tmp_path, server, "rm -rf /")
    decision = json.loads(response.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "ask"


# -- the ``if`` field: the reference's own Bash table, and a guard behind it -----------------------

IF_ROWS = fixture("if_rules.json")["rows"]


@pytest.mark.parametrize("row", IF_ROWS, ids=[f"{r['if']} {r['command']}" for r in IF_ROWS])
def test_if_rules_decide_as_the_references_bash_table_says(row: dict[str, Any]) -> None:
    assert IfRule(row["if"]).matches("Bash", {"command": row["command"]}) is row["runs"]


@pytest.mark.parametrize(
    ("rule", "tool", "args", "runs"),
    [
        ("Edit(*.ts)", "Edit", {"file_path": "src/a/b.ts"}, True),
        ("Edit(*.ts)", "Edit", {"file_path": "src/a/b.py"}, False),
        ("Edit(src/**)", "Edit", {"file_path": "src/a/b.py"}, True),
        ("Edit(src/**)", "Edit", {"file_path": "lib/src/b.py"}, False),
        ("Edit(**/src/**)", "Edit", {"file_path": "lib/src/b.py"}, True),
        ("Bash(git *)", "Write", {"file_path": "x"}, False),
        ("Bash", "Bash", {"command": "anything"}, True),
        ("mcp__memory", "mcp__memory__create_entities", {}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://docs.example.com/a"}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.org/"}, False),
        ("Bash(npm run test:*)", "Bash", {"command": "npm run test:unit"}, True),
        ("Bash(git *)", "Bash", {"command": 7}, True),  # cannot tell: fails open
    ],
)
def test_if_rules_of_the_permission_syntax(
    rule: str, tool: str, args: dict[str, Any], runs: bool
) -> None:
    assert IfRule(rule).matches(tool, args) is runs


def guard_settings(tmp_path: Path) -> Path:
    """The reference's example shape: a blocking script behind ``"if": "Bash(rm *)"``."""
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "if": "Bash(rm *)",
                            "command": "echo 'Blocked: rm commands are not allowed' >&2; exit 2",
                        }
                    ],
                }
            ]
        }
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    return path


@pytest.mark.parametrize(
    ("command", "denied"),
    [("echo $(rm -rf /)", True), ("echo $(date)", False), ("FOO=1 rm -rf build", True)],
)
def test_a_command_behind_if_runs_only_for_matching_calls(
    tmp_path: Path, command: str, denied: bool
) -> None:
    documented = next(
        i["input"] for i in fixture("hook_inputs.json")["inputs"] if i["event"] == "PreToolUse"
    )
    options = BridgeOptions(hooks=(str(guard_settings(tmp_path)),), state=str(tmp_path / "s.db"))
    payload = {**documented, "tool_input": {"command": command}}
    response = run_hook(json.dumps(payload), options, environ={})
    assert response.exit_code == 0, response.stderr
    if denied:
        decision = json.loads(response.stdout)["hookSpecificOutput"]
        assert decision["permissionDecisionReason"] == "Blocked: rm commands are not allowed"
    else:
        assert response.stdout == ""
