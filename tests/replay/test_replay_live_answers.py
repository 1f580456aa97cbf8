"""Replay and ``hooks test`` answer as the live runtime does, or say they cannot.

Each gap is shown on real recordings (the MCP gateway between the MCP SDK's client and
server, the coding agents' bridge, the demo run) and checked against the live answer:

- the gateway matches a call by its tool's annotation kinds (``@destructive`` ...), which its
  spans did not carry: replay of its own recording let a ``@destructive`` guard's call through,
  and ``hooks test`` said only that no hook matches;
- Gemini CLI names an MCP tool ``mcp_<server>_<tool>``, a matcher value live that replay did
  not rebuild from the recorded ``mcp__<server>__<tool>``;
- a command answering ``ask`` (Claude Code asks the person) read as a deny in both;
- arguments cut short by the exporter's attribute length limit were judged as if whole: a guard
  on them read "allow", the event marked as recorded with its content.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from otelhooks import semconv as sc
from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.testing import run_cli
from tests._realparts import written_lines
from tests.replay.conftest import replay_main
from tests.replay.test_replay_fidelity import _bridge

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
KINDS = REPO / "tests" / "coding_agents_cli" / "captured" / "kinds"

NO_DESTRUCTION = """
hooks:
  - id: no-destruction
    type: beforeToolCall
    matcher: "@destructive"
    command: "echo 'destructive tools need a person' >&2; exit 2"
"""


def _wait_for(traces: Path, text: str) -> None:
    deadline = time.monotonic() + 30
    while text not in written_lines(traces):
        assert time.monotonic() < deadline, f"no span of {text} in {traces}"
        time.sleep(0.05)


def _without(traces: Path, key: str) -> Path:
    """The recording as a gateway that did not write ``key`` would have made it."""
    older = traces.with_name("older.jsonl")
    lines = []
    for line in traces.read_text().splitlines():
        data = json.loads(line)
        for resource in data.get("resourceSpans", ()):
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    span["attributes"] = [a for a in span["attributes"] if a["key"] != key]
        lines.append(json.dumps(data))
    older.write_text("\n".join(lines) + "\n")
    return older


def test_a_kind_guard_denies_in_replay_what_the_gateway_denies(tmp_path: Path) -> None:
    from tests.mcp._harness import stdio_session, write_hooks

    policy = write_hooks(tmp_path, NO_DESTRUCTION)
    recorded = tmp_path / "recorded"
    recorded.mkdir()

    async def scenario() -> tuple[object, object]:
        async with stdio_session(tmp_path, [policy]) as session:
            await session.list_tools()
            live = await session.call_tool("purge", {"key": "k"})
        async with stdio_session(recorded) as session:  # no guard: recorded as allowed
            await session.list_tools()
            await session.call_tool("purge", {"key": "k"})
            await session.call_tool("lookup", {"key": "k"})
        return live, None

    live, _ = anyio.run(scenario)
    assert getattr(live, "is_error", None) is True
    traces = recorded / "traces.jsonl"
    _wait_for(traces, "tools/call lookup")
    run = replay_main(traces, "--hooks", policy, "--format", "json", "--fail-on", "deny")
    assert run.code == 1, run.stdout + run.stderr
    purge = run.one("event", event="before_tool_call", subject="testsrv/purge")
    assert purge["now"]["decision"] == "deny"
    assert purge["now"]["by"] == ["no-destruction"]
    assert [e for e in run.events() if e["subject"] == "testsrv/lookup"] == []

    # A recording made before the gateway wrote the kinds: not silently unmatched.
    run = replay_main(_without(traces, sc.TOOL_KINDS), "--hooks", policy, "--format", "json")
    assert run.code == 0, run.stderr
    purge = run.one("event", event="before_tool_call", subject="testsrv/purge")
    assert purge["now"]["decision"] == "allow"
    assert [n.split(":")[0] for n in purge["not_evaluable"]] == ["no-destruction"]
    assert "otelhooks.tool.kinds" in purge["not_evaluable"][0]
    summary = run.one("summary")
    assert summary["not_evaluated"] >= 2  # purge and lookup: either might have matched


def _gemini_mcp_call(event: str = "BeforeTool") -> dict[str, Any]:
    # Gemini CLI 0.61's BeforeTool of an MCP tool: its name, and the mcp_context it adds
    call: dict[str, Any] = json.loads((KINDS / "gemini-0.61.0-shell-BeforeTool.json").read_text())
    call |= {
        "hook_event_name": event,
        "tool_name": "mcp_testsrv_write_note",
        "tool_input": {"text": "hi"},
        "mcp_context": {"server_name": "testsrv", "tool_name": "write_note"},
    }
    if event == "AfterTool":
        call["tool_response"] = {"llmContent": "noted"}
    return call


def test_a_guard_on_geminis_mcp_name_denies_in_replay_as_live(tmp_path: Path) -> None:
    guard = tmp_path / "guard.yaml"
    guard.write_text(
        "hooks:\n  - id: no-notes\n    type: PreToolUse\n    matcher: mcp_testsrv_write_note\n"
        "    command: \"echo 'no notes' >&2; exit 2\"\n"
    )
    none = tmp_path / "none.yaml"
    none.write_text("hooks: []\n")
    live = run_hook(
        json.dumps(_gemini_mcp_call()),
        BridgeOptions(hooks=(str(guard),), state=str(tmp_path / "live.sqlite3"), dialect="gemini"),
        environ={},
    )
    assert json.loads(live.stdout)["decision"] == "deny"
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        hooks=(str(none),),
        state=str(tmp_path / "rec.sqlite3"),
        dialect="gemini",
        traces_out=str(traces),
    )
    for event in ("BeforeTool", "AfterTool"):
        assert run_hook(json.dumps(_gemini_mcp_call(event)), options, environ={}).stdout == ""
    run = replay_main(traces, "--hooks", guard, "--format", "json", "--fail-on", "deny")
    assert run.code == 1, run.stdout + run.stderr
    replayed = run.one("event", event="before_tool_call", subject="mcp__testsrv__write_note")
    assert replayed["now"] == {"decision": "deny", "by": ["no-notes"], "reason": "no notes"}


ASK = """\
hooks:
  - id: confirm-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "ask", "permissionDecisionReason": "rm needs a person"}}'
"""


def test_a_commands_ask_is_would_ask_in_replay_and_hooks_test(tmp_path: Path) -> None:
    (tmp_path / "ask.yaml").write_text(ASK)
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    args = {"command": "rm -rf build"}
    live = _bridge(tmp_path, "claude-code", "ask.yaml", "PreToolUse", "Bash", args)
    assert live is not None
    assert live["hookSpecificOutput"]["permissionDecision"] == "ask"  # a person decides
    for event in ("PreToolUse", "PostToolUse"):
        assert _bridge(tmp_path, "claude-code", "none.yaml", event, "Bash", args) is None

    run = replay_main(
        tmp_path / "traces-none.yaml.jsonl",
        "--hooks",
        tmp_path / "ask.yaml",
        "--format",
        "json",
        "--fail-on",
        "deny",
    )
    assert run.code == 0, run.stdout + run.stderr
    replayed = run.one("event", event="before_tool_call", subject="Bash")
    assert replayed["now"] == {
        "decision": "ask",
        "by": ["confirm-rm"],
        "reason": "rm needs a person",
    }
    assert replayed["change"] is None
    assert replayed["would_call"] == ["confirm-rm"]
    summary = run.one("summary")
    assert summary["changes"] == {}
    assert summary["not_evaluated"] == 1

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(
            "hooks", "test", str(tmp_path / "ask.yaml"), "--event", "PreToolUse", "--tool", "Bash"
        )
    assert code == 0
    assert "verdict: would ask a person (confirm-rm): rm needs a person" in out.getvalue()


READS = """\
hooks:
  - id: no-notes
    type: beforeToolCall
    matcher: "^fs/readFile$"
    script: guard.py:no_notes
"""
READS_PY = """\
from otelhooks import Block

def no_notes(event):
    if str(event.args.get("path", "")).endswith("notes.md"):
        return Block("notes are private")
"""


def _demo_cut_at(tmp_path: Path, limit: int) -> Path:
    """The demo recorded with content capture and ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=limit``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {
        "PYTHONPATH": str(REPO),
        sc.ENV_CAPTURE_CONTENT: "true",
        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": str(limit),  # the SDK cuts every longer string
    }
    traces = tmp_path / "traces.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", "--quiet", "--traces-out", str(traces)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "guard.py").write_text(READS_PY)
    (tmp_path / "policy.yaml").write_text(READS)
    return traces


LONG_PATH = """\
import otelhooks

oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False, capture_content=True)


@otelhooks.tool(identifier="fs", name="readFile", tracer=oh.tracer)
def read(path: str) -> str:
    return "text"


with oh.tracer.operation("reader") as op, op.step():
    read("projects/" + "x" * 40 + "/notes.md")
oh.shutdown()
"""


def test_a_guard_on_arguments_cut_short_is_not_evaluated_not_allowed(tmp_path: Path) -> None:
    # a limit of 40 cuts the arguments (65 characters), and none of the names and ids (at a
    # limit that cuts an id too, the span is not replayed at all: see test_replay_unknowns.py)
    (tmp_path / "agent.py").write_text(LONG_PATH)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(REPO), "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "40"}
    done = subprocess.run(
        [sys.executable, "agent.py"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "guard.py").write_text(READS_PY)
    (tmp_path / "policy.yaml").write_text(READS)
    run = replay_main(
        tmp_path / "traces.jsonl", "--hooks", tmp_path / "policy.yaml", "--format", "json"
    )
    assert run.code == 0, run.stderr
    reads = [
        e
        for e in run.events()
        if e["subject"] == "fs/readFile" and e["event"] == "before_tool_call"
    ]
    assert reads, run.stdout
    for read in reads:
        assert read["content_recorded"] is False
        assert [n.split(":")[0] for n in read["not_evaluable"]] == ["no-notes"]
        assert "cut short" in read["not_evaluable"][0]
    assert run.one("summary")["not_evaluated"] >= len(reads)


def test_a_recording_whose_operation_names_were_cut_is_not_a_policy_that_passed(
    tmp_path: Path,
) -> None:
    # a limit of 11 or less cuts gen_ai.operation.name itself ("execute_too"): replay found no
    # intercept event, reported "0 events replayed, changes: none" and exited 0
    traces = _demo_cut_at(tmp_path, 11)
    run = replay_main(
        traces, "--hooks", tmp_path / "policy.yaml", "--format", "json", "--fail-on", "deny"
    )
    assert run.code == 2, run.stderr
    summary = run.one("summary")
    assert summary["events"] == 0
    assert summary["unreadable"] >= 7  # the demo's tool calls, at least
    assert "gen_ai.operation.name 'execute_too' was cut short" in run.stderr
    assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in summary["unreadable_first"][0]


LONG_NAME = """\
import otelhooks

oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False, capture_content=True)


@otelhooks.tool(identifier="fs", name="delete_everything", tracer=oh.tracer)
def delete(path: str) -> str:
    return "deleted"


with oh.tracer.operation("cleaner") as op, op.step():
    delete("/")
oh.shutdown()
"""


def test_a_tool_name_cut_short_is_named_not_a_policy_that_passed(tmp_path: Path) -> None:
    # the limit cut gen_ai.tool.name ("delete_every"): a guard on "delete_everything" matched
    # nothing and replay said "changes: none", exit 0
    (tmp_path / "agent.py").write_text(LONG_NAME)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(REPO), "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "12"}
    done = subprocess.run(
        [sys.executable, "agent.py"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "policy.yaml").write_text(
        "hooks:\n  - id: no-delete\n    type: beforeToolCall\n"
        "    matcher: delete_everything\n    command: exit 2\n"
    )
    run = replay_main(tmp_path / "traces.jsonl", "--hooks", tmp_path / "policy.yaml")
    assert run.code == 2, run.stdout
    assert "gen_ai.tool.name 'delete_every' was cut short" in run.stderr


def test_hooks_test_names_a_guard_that_matches_a_gateway_tool_by_its_kind(tmp_path: Path) -> None:
    """``hooks test --tool testsrv/purge`` said only "no hook matches" of a ``@destructive``
    guard the gateway runs on that call (a tool never listed is destructive by default)."""
    (tmp_path / "hooks.yaml").write_text(NO_DESTRUCTION)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(
            "hooks",
            "test",
            str(tmp_path / "hooks.yaml"),
            "--event",
            "beforeToolCall",
            "--tool",
            "testsrv/purge",
        )
    assert code == 1
    assert "not evaluated: no-destruction match(es) an MCP tool by its annotation kinds" in (
        out.getvalue()
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_cli(
            "hooks",
            "test",
            str(tmp_path / "hooks.yaml"),
            "--event",
            "beforeToolCall",
            "--tool",
            "Bash",
        )
    assert "not evaluated" not in out.getvalue()  # no identifier: not a gateway's call


def test_a_commands_ask_stays_a_deny_in_replay_of_an_agent_that_cannot_ask(
    tmp_path: Path,
) -> None:
    """Codex CLI ignores an ``ask``, so the bridge denies the call: so does replay."""
    (tmp_path / "ask.yaml").write_text(ASK)
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    args = {"command": "rm -rf build"}
    live = _bridge(tmp_path, "codex", "ask.yaml", "PreToolUse", "Bash", args)
    assert live is not None
    assert live["hookSpecificOutput"]["permissionDecision"] == "deny"
    for event in ("PreToolUse", "PostToolUse"):
        assert _bridge(tmp_path, "codex", "none.yaml", event, "Bash", args) is None
    run = replay_main(
        tmp_path / "traces-none.yaml.jsonl", "--hooks", tmp_path / "ask.yaml", "--format", "json"
    )
    replayed = run.one("event", event="before_tool_call", subject="Bash")
    assert replayed["now"]["decision"] == "deny"
    assert replayed["would_call"] == []
