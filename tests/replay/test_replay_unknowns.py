"""Replay and ``hooks test`` never read as "allow" (or as a deny) what they could not judge.

- a name or id the exporter's attribute length limit cut (an agent's name, a session id, a
  tool call id) was matched and handed to hooks as if whole: a guard on the agent's name, or a
  command comparing ``$HOOK_SESSION_ID``, read "changes: none" and replay exited 0;
- ``hooks test`` judged a payload as the in-process runtimes do only: a user could not see that
  Codex CLI gets a deny where Claude Code gets ``ask``;
- a command's ``permissionDecision: "defer"`` (Claude Code holds the call for a decision made
  elsewhere) read as a deny in replay's report and as "blocked" in ``hooks test``;
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.testing import run_cli
from tests.replay.conftest import replay_main
from tests.replay.test_replay_fidelity import _bridge
from tests.replay.test_replay_recorded_limit import unsay_limit

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]

AGENT = """\
import otelhooks

oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False, capture_content=True)


@otelhooks.tool(identifier="fs", name="rm", tracer=oh.tracer)
def rm(path: str) -> str:
    return "deleted"


with oh.tracer.operation("research-assistant", session_id="session-0123456789abcdef") as op:
    with op.step():
        rm("/")
oh.shutdown()
"""
# Live, both deny: the run by the agent's name, the call by the run's session.
GUARDS = """\
hooks:
  - id: no-research
    type: before_agent_start
    matcher: ^research-assistant$
    command: exit 2
  - id: session-guard
    type: before_tool_call
    matcher: fs/rm
    command: 'test "$HOOK_SESSION_ID" = session-0123456789abcdef && exit 2; exit 0'
"""


@pytest.mark.parametrize(
    ("limit", "said", "tool_call"),
    [
        # the tool span shows the limit itself (its 16-digit argument fingerprint was cut)
        (14, False, "gen_ai.tool.call.id 'call_"),
        # it shows nothing: its run's span does (the agent's name is shorter than its span
        # name says), and the call inherits that name (and session id) from it
        (17, False, "gen_ai.agent.name 'research-assistan'"),
        # the recording's resource says the limit: the call's own id is as long
        (17, True, "gen_ai.tool.call.id '"),
    ],
)
def test_a_cut_agent_name_session_or_call_id_is_not_a_policy_that_passed(
    tmp_path: Path, limit: int, said: bool, tool_call: str
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(REPO), "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": str(limit)}
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
    if not said:  # as a recording made by a TracerProvider of the user's own
        unsay_limit(tmp_path / "traces.jsonl")
    (tmp_path / "policy.yaml").write_text(GUARDS)
    run = replay_main(
        tmp_path / "traces.jsonl", "--hooks", tmp_path / "policy.yaml", "--format", "json"
    )
    assert run.code == 2, run.stdout
    summary = run.one("summary")
    assert summary["events"] == 0
    assert summary["unreadable"] == 2  # the run and the call
    agent = f"gen_ai.agent.name {'research-assistant'[:limit]!r} was cut short, or may have been"
    run_line, call_line = sorted(
        (line for line in run.stderr.splitlines() if "could not read" in line),
        key=lambda line: agent not in line,
    )
    assert agent in run_line
    assert tool_call in call_line


DEFER = """\
hooks:
  - id: hold-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "defer", "permissionDecisionReason": "the release manager decides"}}'
"""


@pytest.mark.parametrize(("dialect", "now"), [("claude-code", "defer"), ("codex", "deny")])
def test_a_commands_defer_is_reported_as_a_defer_not_a_deny(
    tmp_path: Path, dialect: str, now: str
) -> None:
    (tmp_path / "defer.yaml").write_text(DEFER)
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    args = {"command": "rm -rf build"}
    live = _bridge(tmp_path, dialect, "defer.yaml", "PreToolUse", "Bash", args)
    assert live is not None
    # live: Claude Code is told "defer"; Codex CLI cannot defer, and the bridge denies
    assert live["hookSpecificOutput"]["permissionDecision"] == now
    for event in ("PreToolUse", "PostToolUse"):
        assert _bridge(tmp_path, dialect, "none.yaml", event, "Bash", args) is None

    run = replay_main(
        tmp_path / "traces-none.yaml.jsonl",
        "--hooks",
        tmp_path / "defer.yaml",
        "--format",
        "json",
        "--fail-on",
        "deny",
    )
    replayed = run.one("event", event="before_tool_call", subject="Bash")
    assert replayed["now"] == {
        "decision": now,
        "by": ["hold-rm"],
        "reason": "the release manager decides",
    }
    summary = run.one("summary")
    if now == "defer":  # held for someone replay never asks: not evaluated, not a change
        assert run.code == 0, run.stdout + run.stderr
        assert replayed["change"] is None
        assert replayed["would_call"] == ["hold-rm"]
        assert summary["changes"] == {}
        assert summary["not_evaluated"] == 1
    else:
        assert run.code == 1, run.stdout + run.stderr
        assert summary["changes"] == {"deny": 1}


def test_hooks_test_says_a_commands_defer_holds_the_call(tmp_path: Path) -> None:
    (tmp_path / "defer.yaml").write_text(DEFER)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(
            "hooks", "test", str(tmp_path / "defer.yaml"), "--event", "PreToolUse", "--tool", "Bash"
        )
    assert code == 0
    assert "verdict: would defer the call (hold-rm): the release manager decides" in out.getvalue()


ASK = """\
hooks:
  - id: confirm-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "ask", "permissionDecisionReason": "rm needs a person"}}'
"""


@pytest.mark.parametrize(
    ("dialect", "event", "said"),
    [
        ("claude-code", "PreToolUse", "ask"),
        ("codex", "PreToolUse", "deny"),
        ("gemini", "BeforeTool", "ask"),
    ],
)
def test_hooks_test_gives_the_answer_each_cli_gets_live(
    tmp_path: Path, dialect: str, event: str, said: str
) -> None:
    (tmp_path / "ask.yaml").write_text(ASK)
    args = {"command": "rm -rf build"}
    live = _bridge(tmp_path, dialect, "ask.yaml", event, "Bash", args)  # a real process
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(
            "hooks",
            "test",
            str(tmp_path / "ask.yaml"),
            "--dialect",
            dialect,
            "--event",
            event,
            "--tool",
            "Bash",
            "--args",
            json.dumps(args),
        )
    assert code == 0, out.getvalue()
    lines = out.getvalue().splitlines()
    assert f"exit code: {2 if said == 'deny' else 0}" in lines  # Codex's deny is exit 2 too
    (stdout,) = (line.removeprefix("stdout: ") for line in lines if line.startswith("stdout: "))
    assert json.loads(stdout) == live  # exactly the live bridge's answer
    specific = live.get("hookSpecificOutput", {})
    assert live.get("decision", specific.get("permissionDecision")) == said
