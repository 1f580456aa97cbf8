"""A guard whose decision arrives late, through the bridge, with the real Claude Code CLI.

Claude Code waits for a command hook up to the hook's own ``timeout`` and takes what it says
then: a guard with ``"timeout": 90`` that denies after 27 s denies (the control case, the guard
in Claude Code's own settings). Given to otelhooks as the bridge's hooks file, the same guard was
answered at the bridge's 25 s as a failing hook (exit 1), and Claude Code ran ``rm -rf victim``.
Now ``install`` gives the entry a timeout that covers the guard's (and tells the bridge with
``--hook-timeout``), and the bridge waits that long; ``otelhooks validate`` warns of an entry
whose timeout no longer does. A guard the bridge cannot wait for (the
hooks file gained it after ``install``: Claude Code would end the hook at 30 s) is cut short
loudly: a deny that names it, not exit 1.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from otelhooks.testing import run_cli
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


def test_an_entry_timeout_lowered_below_its_guards_runs_the_tool_and_validate_warns(
    tmp_path: Path,
) -> None:
    """The entry ``install`` wrote covers the 90 s guard; its ``timeout`` lowered by hand to
    10 s, Claude Code ends the hook there and runs ``rm -rf victim`` although the guard was to
    deny at 14 s: what ``otelhooks validate`` now warns of (before, it said nothing)."""
    project = _project(tmp_path)
    guards = project / ".claude" / "guards.json"
    guards.write_text(json.dumps(_guards(14)))
    settings = project / ".claude" / "settings.local.json"
    install(settings, hooks_file=".claude/guards.json")
    written = json.loads(settings.read_text())
    written["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 10
    settings.write_text(json.dumps(written))
    _rm(project, tmp_path)
    assert not (project / "victim").exists()  # the guard never had its time: the tool ran
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_cli("validate", "--strict", str(settings)) == 1
    assert (
        "hooks.PreToolUse[0].hooks[0] (the otelhooks hook) is shorter than hook "
        "guards:PreToolUse[0].hooks[0] may take (91 s, its own timeout): timeout 10 s, "
        "--hook-timeout 106: Claude Code ends the hook at 10 s, before the guards' time, and "
        "runs the tool unguarded"
    ) in out.getvalue()
