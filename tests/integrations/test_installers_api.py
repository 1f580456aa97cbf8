"""The installers as a script calls them (#28): the functions the CLI runs, on real files.

A script that onboards projects gets exactly what ``otelhooks claude-code install`` and
``otelhooks codex|gemini install`` write, and a wrong argument is refused before any file is
touched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import (
    INSTALLED_EVENTS,
    ProjectChange,
    install,
    install_project,
    is_ours,
    settings_path,
    uninstall,
    uninstall_project,
)
from otelhooks.integrations.coding_agents import hooks_path, install_agent, uninstall_agent

THEIRS = '{\n  "permissions": {"allow": ["Bash(ls)"]}\n}\n'


def _cli(*args: str, home: Path) -> None:
    """The real console command, in a process of its own with its own home."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "otelhooks", *args], env=env, check=True, text=True,
                   capture_output=True)  # fmt: skip


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("http", [None, "http://127.0.0.1:4319"])
def test_install_project_writes_the_bytes_the_command_writes(
    http: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    by_command, by_script = tmp_path / "by-command", tmp_path / "by-script"
    for project in (by_command, by_script):
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "settings.json").write_text(THEIRS)
    _cli("claude-code", "install", "--project", str(by_command),
         *(("--http", http) if http else ()), home=tmp_path / "home")  # fmt: skip
    result = install_project(project=by_script, http=http)
    for local in (False, True):
        made = _bytes(settings_path(project=by_command, local=local))
        # the command form names its project's hooks file by its full path
        made = made and made.replace(str(by_command).encode(), str(by_script).encode())
        assert _bytes(settings_path(project=by_script, local=local)) == made
    assert [c.path.name for c in result.changes if c.changed] == [
        "settings.json" if http else "settings.local.json"
    ]
    starter = by_script / ".claude" / "otelhooks.yaml"
    assert result.hooks_file == starter
    assert starter.read_bytes() == (by_command / ".claude" / "otelhooks.yaml").read_bytes()
    uninstall_project(project=by_script)
    assert (by_script / ".claude" / "settings.json").read_text() == THEIRS
    assert not starter.exists()


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_install_agent_writes_the_hooks_the_command_writes(dialect: str, tmp_path: Path) -> None:
    hooks = tmp_path / "policy.yaml"
    hooks.write_text("hooks: []\n")
    _cli(dialect, "install", "--project", str(tmp_path / "by-command"), "--hooks", str(hooks),
         "--no-traces", home=tmp_path / "home")  # fmt: skip
    change = install_agent(dialect, project=tmp_path / "by-script", hooks_file=hooks)
    made = hooks_path(dialect, project=tmp_path / "by-command").read_bytes()
    assert change.path.read_bytes() == made
    assert change.verb == "created"
    assert uninstall_agent(dialect, project=tmp_path / "by-script").verb == "deleted"


@pytest.mark.parametrize(
    "events",
    [["PreToolUse", "WorktreeCreate"], ["pretooluse"], "PreToolUse"],
    ids=["an event whose output Claude Code takes as a path", "a misspelt event", "one str"],
)
def test_an_event_install_does_not_hook_is_refused_before_the_file_is_read(
    events: list[str] | str, tmp_path: Path
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(THEIRS)
    with pytest.raises(ValueError, match="not events install hooks"):
        install(settings, events=events)
    assert settings.read_text() == THEIRS


def test_a_subset_of_the_events_is_installed_and_nothing_else(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    change = install(str(settings), events=["PreToolUse", "SessionEnd"])
    hooks = json.loads(settings.read_text())["hooks"]
    assert sorted(hooks) == sorted(change.added) == ["PreToolUse", "SessionEnd"]
    assert all(is_ours(h) for groups in hooks.values() for g in groups for h in g["hooks"])
    assert set(change.added) < set(INSTALLED_EVENTS)


def test_an_unknown_dialect_is_refused_without_writing(tmp_path: Path) -> None:
    refused = r"no installer for dialect 'claude' \(known: codex, gemini\)"
    with pytest.raises(ValueError, match=refused):
        install_agent("claude", project=tmp_path, hooks_file="x.yaml")
    with pytest.raises(ValueError, match=refused):
        uninstall_agent("claude", project=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "action",
    [lambda p: install_project(project=p, traces_out=None), lambda p: uninstall_project(project=p)],
    ids=["install the command form", "uninstall"],
)
def test_a_refused_second_settings_file_leaves_the_first_as_it_was(
    action: Callable[[Path], ProjectChange], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "p"
    install_project(project=project, http="http://127.0.0.1:4319")  # ours in the shared file
    shared = settings_path(project=project)
    before = shared.read_bytes()
    settings_path(project=project, local=True).write_text('{"a": 1, "a": 2}')
    with pytest.raises(ValueError, match="the key 'a' is given twice"):
        action(project)
    assert shared.read_bytes() == before  # not emptied of ours while the other was refused


def test_an_empty_hooks_object_from_before_goes_with_ours(tmp_path: Path) -> None:
    """The one exception docs/adapters.md names to uninstall giving back the bytes."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "m", "hooks": {}}\n')
    install(settings, http="http://127.0.0.1:4319")
    uninstall(settings)
    assert settings.read_text() == '{"model": "m"}\n'
