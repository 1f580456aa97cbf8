"""``$CLAUDE_CONFIG_DIR`` moves the user's Claude Code settings: Claude Code 2.1 then reads
``$CLAUDE_CONFIG_DIR/settings.json`` and never ``~/.claude/settings.json`` (checked with the real
CLI: a deny hook in ``~/.claude`` does not run, the same hook in the folder the variable names
does; a ``~`` in the variable is not expanded). ``otelhooks claude-code install --user`` writes
where Claude Code reads, and looks there for ``disableAllHooks``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project, uninstall_project
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(CLI_TEST_S)

GUARD = """\
hooks:
  - id: no-rm-rf
    type: PreToolUse
    matcher: "*"
    command: |
      case "$HOOK_TOOL_INPUT" in *"rm -rf"*) echo "rm -rf is not allowed" >&2; exit 2 ;; esac
"""
RM = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -rf victim"}}]
# the bridge daemon an installed hook starts leaves soon after the test
BRIDGE_ENV = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}


def test_a_user_install_goes_where_claude_code_reads_the_users_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    config = home / ".config" / "claude"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / ".claude").mkdir()
    (project / ".claude" / "otelhooks.yaml").write_text(GUARD)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))

    result = install_project(user=True, traces_out=None)
    (change,) = result.changes
    assert change.path == config / "settings.json"
    assert "PreToolUse" in json.loads(change.path.read_text())["hooks"]
    assert not (home / ".claude").exists()

    need_cli(CLAUDE)
    env = {**BRIDGE_ENV, "CLAUDE_CONFIG_DIR": str(config)}
    run = run_claude(project, home, RM, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "rm -rf is not allowed" in run.told()

    assert uninstall_project(user=True).changes[0].verb == "deleted"
    assert not (config / "settings.json").exists()


def test_install_warns_of_disable_all_hooks_in_the_users_moved_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, config = tmp_path / "project", tmp_path / "claude-config"
    config.mkdir()
    (config / "settings.json").write_text('{"disableAllHooks": true}')
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))

    result = install_project(project=project, traces_out=None)
    (warning,) = [w for w in result.changes[-1].warnings if "disableAllHooks" in w]
    assert warning.startswith(f"no installed hook will run: {config / 'settings.json'} sets")
