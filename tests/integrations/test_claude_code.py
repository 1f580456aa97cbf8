"""``otelhooks claude-code``, run as Claude Code runs hooks: one process per event, JSON on stdin.

The payloads follow Claude Code's documented hook input (``session_id``, ``transcript_path``,
``cwd``, ``permission_mode``, ``hook_event_name`` and the event's own fields).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks.integrations.claude_code import session_trace_id
from tests._webhook_server import WebhookServer, webhook_server

HOOKS = """
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
  - id: tool-done
    type: PostToolUse
    webhook: {{url: "{url}/tools"}}
  - id: tool-failed
    type: PostToolUseFailure
    webhook: {{url: "{url}/failed"}}
  - id: turn-done
    type: Stop
    webhook: {{url: "{url}/done"}}
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class Claude:
    """Starts ``otelhooks claude-code`` the way Claude Code starts a hook command."""

    tmp: Path
    hooks: Path
    traces: Path
    state: Path

    def _cmd(self, deny_mode: str) -> list[str]:
        return [
            sys.executable, "-m", "otelhooks", "claude-code",
            "--hooks", str(self.hooks), "--traces-out", str(self.traces),
            "--state", str(self.state), "--deny-mode", deny_mode,
        ]  # fmt: skip

    def payload(self, session: str, event: str, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": session,
            "transcript_path": str(self.tmp / f"{session}.jsonl"),
            "cwd": str(self.tmp),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }

    def start(
        self, session: str, event: str, *, deny_mode: str = "json", **fields: Any
    ) -> subprocess.Popen[str]:
        env = {**os.environ, "HOME": str(self.tmp)}
        env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
        env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)  # content capture off
        proc = subprocess.Popen(
            self._cmd(deny_mode),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(self.payload(session, event, **fields)))
        proc.stdin.close()
        return proc

    @staticmethod
    def wait(proc: subprocess.Popen[str]) -> Run:
        assert proc.stdout is not None
        assert proc.stderr is not None
        code = proc.wait(30)
        return Run(code, proc.stdout.read(), proc.stderr.read())

    def send(self, session: str, event: str, **fields: Any) -> Run:
        return self.wait(self.start(session, event, **fields))

    def together(self, *events: tuple[str, str, dict[str, Any]]) -> list[Run]:
        """Several hook processes at once, as Claude Code runs the hooks of parallel tools."""
        procs = [self.start(s, e, **f) for s, e, f in events]
        return [self.wait(p) for p in procs]

    def spans(self) -> list[dict[str, Any]]:
        return read_otlp_json_lines(self.traces)


def make_claude(tmp: Path, server: WebhookServer) -> Claude:
    hooks = tmp / "hooks.yaml"
    hooks.write_text(HOOKS.format(url=server.url))
    return Claude(tmp, hooks, tmp / "traces.jsonl", tmp / "state.sqlite3")


@pytest.fixture
def claude(tmp_path: Path, server: WebhookServer) -> Claude:
    return make_claude(tmp_path, server)


@dataclass
class Scenario:
    runs: dict[str, Run]
    claude: Claude
    server: WebhookServer


def pre(use_id: str, tool: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_name": tool, "tool_input": tool_input, "tool_use_id": use_id}


def post(use_id: str, tool: str, response: Any, **tool_input: Any) -> dict[str, Any]:
    return {**pre(use_id, tool, **tool_input), "tool_response": response}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """One session with interleaved and concurrent tool uses, two denials, and a second
    session running at the same time (run once; each test checks one aspect)."""
    with webhook_server() as server:
        claude = make_claude(tmp_path_factory.mktemp("claude"), server)
        runs = play(claude)
        # the hook processes deliver their webhooks after they answer: wait for all of them
        # (a loaded machine takes seconds per delivery process)
        for path, count in (("/tools", 5), ("/failed", 1), ("/done", 2)):
            server.wait_for(path, count, timeout_s=120)
        yield Scenario(runs, claude, server)


def play(claude: Claude) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    a, b = "sess-A", "sess-B"
    runs["start"] = claude.send(a, "SessionStart", source="startup", model="claude-sonnet")
    runs["prompt"] = claude.send(a, "UserPromptSubmit", prompt="make the tests pass")
    runs["pre1"] = claude.send(a, "PreToolUse", **pre("toolu_1", "Read", file_path="/w/a.py"))
    runs["notify"] = claude.send(
        a, "Notification", message="Claude needs your attention", notification_type="idle_prompt"
    )
    # two tool uses of A start together, while session B starts a turn
    runs["pre2"], runs["pre3"], runs["b-prompt"] = claude.together(
        (a, "PreToolUse", pre("toolu_2", "Bash", command="pytest -q")),
        (a, "PreToolUse", pre("toolu_3", "Grep", pattern="def test_")),
        (b, "UserPromptSubmit", {"prompt": "hello"}),
    )
    runs["b-pre"] = claude.send(b, "PreToolUse", **pre("toolu_9", "Read", file_path="/x"))
    # they end out of order, some at the same time
    runs["post2"], runs["b-post"] = claude.together(
        (a, "PostToolUse", post("toolu_2", "Bash", {"stdout": "3 passed"}, command="pytest -q")),
        (b, "PostToolUse", post("toolu_9", "Read", {"file": "x"}, file_path="/x")),
    )
    runs["post1"] = claude.send(
        a, "PostToolUse", **post("toolu_1", "Read", {"content": "print(1)"}, file_path="/w/a.py")
    )
    runs["fail3"] = claude.send(
        a, "PostToolUseFailure", **pre("toolu_3", "Grep", pattern="def test_"), error="timeout"
    )
    runs["deny-json"] = claude.send(
        a, "PreToolUse", **pre("toolu_4", "Bash", command="rm -rf build")
    )
    runs["deny-exit2"] = claude.send(
        a, "PreToolUse", deny_mode="exit2", **pre("toolu_5", "Bash", command="rm -rf /")
    )
    runs["pre6"] = claude.send(a, "PreToolUse", **pre("toolu_6", "Write", file_path="/etc/x"))
    runs["refused6"] = claude.send(
        a, "PermissionDenied", **pre("toolu_6", "Write", file_path="/etc/x"), reason="auto mode"
    )
    runs["stop"], runs["b-stop"] = claude.together(
        (a, "Stop", {"stop_hook_active": False}), (b, "Stop", {"stop_hook_active": False})
    )
    runs["end"] = claude.send(a, "SessionEnd", reason="logout")
    return runs


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = span["attributes"]
    return found


def test_every_hook_process_succeeds_and_only_denials_answer(scenario: Scenario) -> None:
    quiet = {k: r for k, r in scenario.runs.items() if not k.startswith("deny")}
    assert {k: (r.code, r.stdout) for k, r in quiet.items()} == {k: (0, "") for k in quiet}


def test_a_deny_answers_with_a_permission_decision_in_json(scenario: Scenario) -> None:
    run = scenario.runs["deny-json"]
    assert run.code == 0
    assert run.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is not allowed here",
        }
    }


def test_a_deny_answers_with_exit_code_2_and_the_reason_on_stderr(scenario: Scenario) -> None:
    run = scenario.runs["deny-exit2"]
    assert (run.code, run.stdout, run.stderr.strip().splitlines()[-1]) == (
        2,
        "",
        "rm -rf is not allowed here",
    )


def test_a_session_is_one_trace_and_each_tool_use_one_span_under_its_turn(
    scenario: Scenario,
) -> None:
    spans = scenario.claude.spans()
    a_trace = format(session_trace_id("sess-A"), "032x")
    b_trace = format(session_trace_id("sess-B"), "032x")
    assert {s["traceId"] for s in spans} == {a_trace, b_trace}
    a_spans = [s for s in spans if s["traceId"] == a_trace]
    (turn,) = by_name(a_spans, "invoke_agent claude-code")
    assert attrs(turn)["otelhooks.operation.complete_reason"] == "done"
    tools = [s for s in a_spans if s["name"].startswith("execute_tool ")]
    ids = sorted(attrs(s)["gen_ai.tool.call.id"] for s in tools)
    assert ids == ["toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5", "toolu_6"]  # one each
    for tool in tools:
        assert tool["parentSpanId"] == turn["spanId"]
        assert int(turn["startTimeUnixNano"]) <= int(tool["startTimeUnixNano"])
        assert int(tool["startTimeUnixNano"]) <= int(tool["endTimeUnixNano"])
        assert int(tool["endTimeUnixNano"]) <= int(turn["endTimeUnixNano"])
    lifecycle = {s["name"]: s for s in a_spans if s["name"].startswith("agent_lifecycle")}
    assert sorted(lifecycle) == [
        "agent_lifecycle notification",
        "agent_lifecycle session_end",
        "agent_lifecycle session_start",
    ]
    assert lifecycle["agent_lifecycle notification"]["parentSpanId"] == turn["spanId"]
    (b_tool,) = [s for s in spans if s["traceId"] == b_trace and s["name"] == "execute_tool Read"]
    (b_turn,) = by_name([s for s in spans if s["traceId"] == b_trace], "invoke_agent claude-code")
    assert b_tool["parentSpanId"] == b_turn["spanId"]


def tool_spans(scenario: Scenario) -> dict[str, dict[str, Any]]:
    spans = scenario.claude.spans()
    return {attrs(s)["gen_ai.tool.call.id"]: s for s in spans if "execute_tool" in s["name"]}


def test_a_tool_span_lasts_from_its_pre_to_its_post_process(scenario: Scenario) -> None:
    tools = tool_spans(scenario)
    start = {k: int(s["startTimeUnixNano"]) for k, s in tools.items()}
    end = {k: int(s["endTimeUnixNano"]) for k, s in tools.items()}
    assert start["toolu_1"] < start["toolu_2"]  # toolu_1 started first...
    assert end["toolu_2"] < end["toolu_1"]  # ...and ended after toolu_2 (interleaved)
    assert end["toolu_1"] < end["toolu_3"]
    assert end["toolu_1"] - start["toolu_1"] > 100_000_000  # it spans several hook processes


def test_outcomes_and_hook_decisions_are_on_the_tool_spans(scenario: Scenario) -> None:
    tools = tool_spans(scenario)
    assert attrs(tools["toolu_1"])["otelhooks.tool.outcome"] == "success"
    failed = tools["toolu_3"]
    assert failed["status"]["code"] == 2
    assert attrs(failed)["otelhooks.tool.outcome"] == "error"
    for denied_id in ("toolu_4", "toolu_5"):
        denied = attrs(tools[denied_id])
        assert denied["otelhooks.tool.outcome"] == "denied"
        assert denied["otelhooks.hook.decision"] == "deny"
        assert denied["otelhooks.hook.decided_by"] == "no-rm"
        assert denied["otelhooks.hook.classification"] == "hook_denied"
    assert attrs(tools["toolu_2"])["otelhooks.hook.decision"] == "allow"
    assert attrs(tools["toolu_6"])["otelhooks.tool.outcome"] == "denied"  # by Claude Code itself


def test_hook_webhooks_reach_a_real_local_server(scenario: Scenario) -> None:
    server = scenario.server
    a_trace = format(session_trace_id("sess-A"), "032x")
    done = {r.json()["toolCallId"]: r.json() for r in server.requests("/tools")}
    # as in process, a denied call ends with an after_tool_call carrying the blocked result
    assert sorted(done) == ["toolu_1", "toolu_2", "toolu_4", "toolu_5", "toolu_9"]
    assert done["toolu_4"]["result"]["state"]["classification"] == "hook_denied"
    # Content capture is off in these hook processes: no arguments or output leave by webhook.
    assert not {"args", "toolInput", "toolOutput", "content"} & set(done["toolu_2"])
    assert (done["toolu_2"]["apiName"], done["toolu_2"]["success"]) == ("Bash", True)
    assert (done["toolu_2"]["sessionKey"], done["toolu_2"]["traceId"]) == ("sess-A", a_trace)
    (failed,) = [r.json() for r in server.requests("/failed")]
    assert (failed["toolCallId"], failed["error"]) == ("toolu_3", "timeout")
    turns = sorted(r.json()["sessionKey"] for r in server.requests("/done"))
    assert turns == ["sess-A", "sess-B"]


def test_a_blocked_prompt_answers_decision_block(claude: Claude, tmp_path: Path) -> None:
    claude.hooks.write_text(
        "hooks:\n"
        "  - id: no-secrets\n"
        "    type: UserPromptSubmit\n"
        "    command: \"echo 'prompts may not contain secrets' >&2; exit 2\"\n"
    )
    run = claude.send("sess-C", "UserPromptSubmit", prompt="my password is hunter2")
    assert (run.code, run.json()) == (
        0,
        {"decision": "block", "reason": "prompts may not contain secrets"},
    )
    (turn,) = by_name(claude.spans(), "invoke_agent claude-code")
    assert attrs(turn)["otelhooks.operation.complete_reason"] == "interrupted"


def test_bad_input_is_a_non_blocking_error(claude: Claude) -> None:
    proc = subprocess.run(
        claude._cmd("json"), input="not json", capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert "not JSON" in proc.stderr


def test_a_hook_process_exporting_only_to_a_file_never_imports_requests(tmp_path: Path) -> None:
    """requests (with urllib3 and charset-normalizer) is the OTLP/HTTP exporter's client: the
    bridge imported it into every hook process, exporting somewhere or not (about 35 ms of a
    process's 430 ms of imports)."""
    (tmp_path / "hooks.yaml").write_text("hooks: []\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["HOME"] = str(tmp_path)
    event = {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": str(tmp_path)}
    files = ["--hooks", str(tmp_path / "hooks.yaml"), "--state", str(tmp_path / "state.sqlite3")]
    files += ["--traces-out", str(tmp_path / "traces.jsonl")]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "otelhooks", "claude-code", *files],
        input=json.dumps({**event, "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "otelhooks.integrations.coding_agents._bridge" in loaded  # the bridge ran
    assert loaded & {"requests", "urllib3"} == set()
