"""Replay and ``hooks test`` match a tool by every name the live bridge matches it by.

The Claude Code and Codex bridges offer a guard's matcher the tool's name, the names the MCP
gateway gives an MCP tool (``mcp__memory__create`` is also ``memory/create`` and ``create``),
and the names the CLI itself matches the tool by (Codex runs a ``Write`` or ``Edit`` hook on its
``apply_patch``, and applies a ``Bash`` command that runs its patcher as one). Replay of their
recordings and ``otelhooks hooks test`` offered the recorded name only, so a guard the live
bridge enforces was reported as not matching: "changes: none" for a policy that denies. Real
processes: the one-process bridge answers each event, and records the session that replay then
reads.
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

import pytest

from otelhooks import semconv as sc
from otelhooks.testing import run_cli
from tests._realparts import written_lines
from tests.replay.conftest import replay_main

REPO = Path(__file__).resolve().parents[2]

# each guard names the tool as the live bridge matches it, not as the CLI reports it
GUARDS = """\
hooks:
  - id: no-create
    type: PreToolUse
    matcher: create_entities
    command: echo 'no creating' >&2; exit 2
  - id: no-write
    type: PreToolUse
    matcher: Write
    command: echo 'no writing' >&2; exit 2
"""
MCP_CALL = ("mcp__memory__create_entities", {"entities": []}, "no-create")
PATCH_CALL = ("apply_patch", {"input": "*** Begin Patch"}, "no-write")
# a shell command Codex applies as a patch: matched by apply_patch's names too
SHELL_PATCH_CALL = ("Bash", {"command": "apply_patch <<'EOF'\n*** Begin Patch\nEOF"}, "no-write")


def _bridge(
    folder: Path, dialect: str, hooks: str, event: str, tool: str, args: dict[str, Any]
) -> dict[str, Any] | None:
    """One hook event through the one-process bridge (a real process); its answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    env |= {
        "PYTHONPATH": str(REPO),
        "OTELHOOKS_BRIDGE_STATE": str(folder / f"state-{hooks}.sqlite3"),
        sc.ENV_CAPTURE_CONTENT: "true",
    }
    payload = {
        "session_id": "s-fidelity",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": args,
        "tool_use_id": f"use-{tool}",
        "cwd": str(folder),
    }
    if event == "PostToolUse":
        payload["tool_response"] = "done"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "otelhooks",
            dialect,
            "--hooks",
            hooks,
            "--traces-out",
            str(folder / f"traces-{hooks}.jsonl"),
        ],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=60,
        check=False,
    )
    # Codex CLI's deny is exit 2 too (its reason on stderr), read whatever stdout holds
    denied = dialect == "codex" and '"permissionDecision": "deny"' in done.stdout
    assert done.returncode == (2 if denied else 0), done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.mark.parametrize(
    ("dialect", "call"),
    [
        ("claude-code", MCP_CALL),
        ("codex", MCP_CALL),
        ("codex", PATCH_CALL),
        ("codex", SHELL_PATCH_CALL),
    ],
)
def test_replay_denies_what_the_live_bridge_denies(
    tmp_path: Path, dialect: str, call: tuple[str, dict[str, Any], str]
) -> None:
    tool, args, guard = call
    (tmp_path / "guards.yaml").write_text(GUARDS)
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    live = _bridge(tmp_path, dialect, "guards.yaml", "PreToolUse", tool, args)
    assert live is not None
    assert live["hookSpecificOutput"]["permissionDecision"] == "deny"
    # the same call recorded with no guard, then replayed through the guards
    for event in ("PreToolUse", "PostToolUse"):
        assert _bridge(tmp_path, dialect, "none.yaml", event, tool, args) is None
    run = replay_main(
        tmp_path / "traces-none.yaml.jsonl",
        "--hooks",
        tmp_path / "guards.yaml",
        "--format",
        "json",
        "--fail-on",
        "deny",
    )
    assert run.code == 1, run.stdout + run.stderr
    replayed = run.one("event", event="before_tool_call", subject=tool)
    assert replayed["now"]["decision"] == "deny"
    assert replayed["now"]["by"] == [guard]


def test_hooks_test_matches_an_mcp_tool_as_the_bridge_does(tmp_path: Path) -> None:
    (tmp_path / "guards.yaml").write_text(GUARDS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(
            "hooks",
            "test",
            str(tmp_path / "guards.yaml"),
            "--event",
            "PreToolUse",
            "--tool",
            MCP_CALL[0],
        )
    assert "verdict: blocked by no-create: no creating" in out.getvalue(), out.getvalue()
    assert code == 0


# -- approvals: a dry run never asks a person ---------------------------------------------------

ASK = """\
hooks:
  - id: ask-create
    type: PreToolUse
    matcher: mcp__memory__create_entities
    approval:
      timeout: 20
      default: allow
"""


def test_replay_never_asks_a_person_and_lists_the_approval_as_not_asked(tmp_path: Path) -> None:
    """Replay used to put each recorded call in the approvals inbox a person answers (a card
    for a call nobody waits for), wait out the approval's timeout per event, and report its
    default, "changes: none", where live a person decides. Now it is listed as not asked."""
    from otelhooks._actions._approval_inbox import process_inbox

    tool, args, _ = MCP_CALL
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    (tmp_path / "ask.yaml").write_text(ASK)
    for event in ("PreToolUse", "PostToolUse"):
        _bridge(tmp_path, "claude-code", "none.yaml", event, tool, args)
    inbox = process_inbox()
    cards: list[object] = []
    listener = cards.append  # one object: the inbox removes a listener by identity
    inbox.add_listener(listener)  # served: a person would see what is put here
    try:
        started = time.monotonic()
        run = replay_main(
            tmp_path / "traces-none.yaml.jsonl",
            "--hooks",
            tmp_path / "ask.yaml",
            "--format",
            "json",
        )
        seconds = time.monotonic() - started
    finally:
        inbox.remove_listener(listener)
    asked = [a for a in (*inbox.pending(), *inbox.answered()) if a.hook_id == "ask-create"]
    assert asked == []
    assert cards == []
    assert seconds < 10
    assert run.code == 0, run.stderr
    replayed = run.one("event", event="before_tool_call", subject=tool)
    assert replayed["would_call"] == ["ask-create"]
    assert replayed["now"]["decision"] == "allow"


# -- the JSON report is JSON -------------------------------------------------------------------

FAILING = """\
hooks:
  - id: broken
    type: beforeToolCall
    script: broken.py:guard
  - id: cap
    type: beforeToolCall
    budget: {operation_usd: 0.01}
"""


def test_the_json_report_has_only_json_on_stdout_when_hooks_log(tmp_path: Path) -> None:
    """A hook that fails, or a budget guard that sees no spend, logs a warning: it went to
    stdout, between the report's JSON lines, so a CI step parsing them failed on a log line."""
    (tmp_path / "broken.py").write_text("def guard(event):\n    raise RuntimeError('boom')\n")
    (tmp_path / "policy.yaml").write_text(FAILING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "otelhooks",
            "replay",
            str(REPO / "examples/replay/traces.jsonl"),
            "--hooks",
            str(tmp_path / "policy.yaml"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["type"] == "summary"
    assert any(r.get("errors") == ["broken: RuntimeError: boom"] for r in records)
    assert "hook failed" in done.stderr
    assert "budget guard sees no spend here" in done.stderr


# -- the MCP gateway's recordings ----------------------------------------------------------------


def test_replay_of_a_gateway_recording_denies_what_the_gateway_denies(tmp_path: Path) -> None:
    """The gateway matches a call as ``server/tool`` (``testsrv/write_note``) and records the
    tool's bare name with the server beside it; replay matched the bare name only, so the
    gateway's own guard read "changes: none" on the gateway's own recording."""
    import anyio

    from tests.mcp._harness import DENY_NOTES, DENY_SCRIPT, stdio_session, write_hooks

    policy = write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)

    async def scenario() -> tuple[object, object]:
        async with stdio_session(tmp_path, [policy]) as session:
            denied = await session.call_tool("write_note", {"text": "secret"})
        recorded = tmp_path / "recorded"
        recorded.mkdir()
        async with stdio_session(recorded) as session:  # no guard: recorded as allowed
            allowed = await session.call_tool("write_note", {"text": "secret"})
        return denied, allowed

    denied, allowed = anyio.run(scenario)
    assert getattr(denied, "is_error", None) is True
    assert getattr(allowed, "is_error", None) is False
    traces = tmp_path / "recorded" / "traces.jsonl"
    deadline = time.monotonic() + 30
    while "write_note" not in written_lines(traces):
        assert time.monotonic() < deadline, "the gateway wrote no span of the call"
        time.sleep(0.05)
    run = replay_main(traces, "--hooks", policy, "--format", "json", "--fail-on", "deny")
    assert run.code == 1, run.stdout + run.stderr
    replayed = run.one("event", event="before_tool_call", subject="testsrv/write_note")
    live_reason = denied.content[0].text  # type: ignore[attr-defined]
    assert replayed["now"] == {"decision": "deny", "by": ["no-notes"], "reason": live_reason}
