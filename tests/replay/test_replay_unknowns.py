"""Replay and ``hooks test`` never read as "allow" (or as a deny) what they could not judge.

- a command's ``permissionDecision: "defer"`` (Claude Code holds the call for a decision made
  elsewhere) read as a deny in replay's report and as "blocked" in ``hooks test``;
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from otelhooks.testing import run_cli
from tests.replay.conftest import replay_main
from tests.replay.test_replay_fidelity import _bridge

pytestmark = pytest.mark.timeout(120)

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
