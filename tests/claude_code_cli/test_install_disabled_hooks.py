"""``disableAllHooks: true`` in any of the project's or the user's Claude Code settings files
turns every hook off, ours included: ``otelhooks claude-code install`` says so, and the real
Claude Code CLI 2.1 shows why it must (the installed ``rm -rf`` guard of the starter hook file
never runs). The project's local file overrides its shared file, which overrides the user's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(CLI_TEST_S)
# the bridge daemon an installed hook starts leaves soon after the test
BRIDGE_ENV = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}

# where each case writes disableAllHooks: {file: value}; "~" is the user's settings.json
CASES = {
    "shared-true": ({"settings.json": True}, True),
    "user-true": ({"~": True}, True),
    "local-false-over-shared-true": ({"settings.json": True, "settings.local.json": False}, False),
}


def _write(project: Path, home: Path, where: dict[str, bool]) -> None:
    for name, value in where.items():
        path = home / ".claude" / "settings.json" if name == "~" else project / ".claude" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"disableAllHooks": value}))


@pytest.mark.parametrize("case", list(CASES))
def test_install_warns_when_claude_code_runs_no_hook_and_claude_code_proves_it(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, disabled = CASES[case]
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    _write(project, home, where)
    monkeypatch.setenv("HOME", str(home))

    result = install_project(project=project, traces_out=None)
    warned = [w for w in result.changes[-1].warnings if "disableAllHooks" in w]
    assert bool(warned) is disabled
    if disabled:
        (warning,) = warned
        assert warning.startswith("no installed hook will run")
        source = home / ".claude" / "settings.json" if "~" in where else project / ".claude"
        assert str(source) in warning

    need_cli(CLAUDE)
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -rf victim"}}]
    run = run_claude(project, home, steps, extra_env=BRIDGE_ENV)
    assert run.returncode == 0, skip_reason(run)
    # the starter guard denies rm -rf only when Claude Code runs hooks
    assert (project / "victim").exists() is not disabled


# a file with a known setting of the wrong type ("model": 5), which Claude Code ignores whole:
# its disableAllHooks turns nothing off, nor back on ({file: settings}, hooks off)
IGNORED = {
    "ignored-shared-true": ({"settings.json": {"disableAllHooks": True, "model": 5}}, False),
    "ignored-shared-false-over-user-true": (
        {"settings.json": {"disableAllHooks": False, "model": 5}, "~": {"disableAllHooks": True}},
        True,
    ),
}


@pytest.mark.parametrize("case", list(IGNORED))
def test_install_reads_disable_all_hooks_only_where_claude_code_does(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: the first case warned that no hook would run (Claude Code ran them), the second
    # said nothing (Claude Code ran none)
    where, disabled = IGNORED[case]
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    for name, settings in where.items():
        path = home / ".claude" / "settings.json" if name == "~" else project / ".claude" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))
    monkeypatch.setenv("HOME", str(home))

    result = install_project(project=project, traces_out=None)
    warned = [w for w in result.changes[-1].warnings if "disableAllHooks" in w]
    assert bool(warned) is disabled, warned
    if disabled:
        assert str(home / ".claude" / "settings.json") in warned[0]

    need_cli(CLAUDE)
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -rf victim"}}]
    run = run_claude(project, home, steps, extra_env=BRIDGE_ENV)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists() is not disabled
