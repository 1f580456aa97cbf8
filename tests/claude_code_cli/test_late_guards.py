"""A guard whose decision arrives late, through the bridge, with the real Claude Code CLI.

Claude Code waits for a command hook up to the hook's own ``timeout`` and takes what it says
then: a guard with ``"timeout": 90`` that denies after 27 s denies (the control case, the guard
in Claude Code's own settings). Given to otelhooks as the bridge's hooks file, the same guard was
answered at the bridge's 25 s as a failing hook (exit 1), and Claude Code ran ``rm -rf victim``.
Now ``install`` gives the entry a timeout that covers the guard's (and tells the bridge with
``--hook-timeout``), and the bridge waits that long. A guard the bridge cannot wait for (the
hooks file gained it after ``install``: Claude Code would end the hook at 30 s) is cut short
loudly: a deny that names it, not exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, run_claude_p

pytestmark = pytest.mark.timeout(150)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
REASON = "rm -rf is not allowed here"


def _guards(sleep_s: int) -> dict[str, object]:
    late_deny = f"sleep {sleep_s}; echo '{REASON}' >&2; exit 2"
    handler = {"type": "command", "command": late_deny, "timeout": 90}
    return {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}


def _project(tmp_path: Path) -> Path:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / "victim").mkdir()
    (project / "victim" / "keep.txt").write_text("precious")
    return project


def _rm(project: Path, tmp_path: Path) -> str:
    """Run a scripted ``rm -rf victim``; what the model was told of it."""
    api = MessagesApi([ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim"})])
    result = run_claude_p(api, "clean up", project, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.dumps(api.requests[-1]["messages"][-1])


@pytest.mark.parametrize("where", ["claude-code-itself", "through-the-bridge"])
def test_a_guard_that_denies_within_its_own_timeout_denies(where: str, tmp_path: Path) -> None:
    project = _project(tmp_path)
    settings = project / ".claude" / "settings.local.json"
    if where == "claude-code-itself":
        settings.write_text(json.dumps(_guards(27)))
    else:
        (project / ".claude" / "guards.json").write_text(json.dumps(_guards(27)))
        install(settings, hooks_file=".claude/guards.json")
    told = _rm(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious", told
    assert REASON in told
    if where == "through-the-bridge":
        (entry,) = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]
        assert entry["timeout"] >= 90 + 5  # the guard's time and the bridge's margin
        assert f"--hook-timeout {entry['timeout']}" in entry["command"]


def test_a_guard_the_bridge_cannot_wait_for_is_a_deny_that_says_so(tmp_path: Path) -> None:
    project = _project(tmp_path)
    guards = project / ".claude" / "guards.json"
    guards.write_text(json.dumps({"hooks": {}}))
    settings = project / ".claude" / "settings.local.json"
    install(settings, hooks_file=".claude/guards.json")  # no guard yet: Claude Code gives 30 s
    guards.write_text(json.dumps(_guards(60)))  # a guard of 90 s, added after install
    told = _rm(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious", told
    assert (
        "otelhooks could not check this tool call, so it is blocked: no answer within 25 s, "
        "hook guards:PreToolUse[0].hooks[0] cut short (its timeout: 91 s)"
    ) in told
    assert "fail-closed" not in told  # install wrote no --fail-closed: the reason claimed it
