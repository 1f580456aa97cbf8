"""``otelhooks claude-code|codex|gemini install`` where the settings file is not a regular file.

A named pipe there held install forever (its read waited for a writer); a character device (a
settings file linked to a ``/dev/null``, here a copy of it made with ``mknod``) was replaced by
a regular file holding the hooks, which run as root replaces the machine's own. Each install now
refuses it, exit 1 naming what it is, and leaves it as it was. Each install runs as its own
process, with a time limit: the one before the fix never returned.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the file each install edits, under the project folder
TARGETS = {
    "claude-code": ".claude/settings.local.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}


def _install(dialect: str, project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(project.parent / "home")}
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", dialect, "install", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def _project(tmp_path: Path, dialect: str) -> tuple[Path, Path]:
    project = tmp_path / "project"
    target = project / TARGETS[dialect]
    target.parent.mkdir(parents=True)
    return project, target


@pytest.mark.parametrize("dialect", list(TARGETS))
def test_a_named_pipe_as_the_settings_file_is_refused_at_once(dialect: str, tmp_path: Path) -> None:
    project, target = _project(tmp_path, dialect)
    os.mkfifo(target)
    try:
        done = _install(dialect, project)
    except subprocess.TimeoutExpired:
        pytest.fail("install waited on the named pipe")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{target}: a named pipe, not a settings file" in done.stderr
    assert "nothing was changed" in done.stderr
    assert stat.S_ISFIFO(target.lstat().st_mode)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
@pytest.mark.parametrize("dialect", list(TARGETS))
def test_a_settings_file_linked_to_a_device_is_left_a_device(dialect: str, tmp_path: Path) -> None:
    project, target = _project(tmp_path, dialect)
    null = tmp_path / "dev" / "null"
    null.parent.mkdir()
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    target.symlink_to(null)
    done = _install(dialect, project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{null}: a character device, not a settings file" in done.stderr
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert sorted(p.name for p in null.parent.iterdir()) == ["null"]  # no temporary file left
    assert target.is_symlink()


# a file of the user's each install reads beside the one it edits (the hooks turned off, the
# neighbour hooks of the guard's event)
BESIDE = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}


@pytest.mark.parametrize("dialect", list(BESIDE))
def test_a_named_pipe_among_the_users_settings_does_not_hold_install(
    dialect: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    project, target = _project(tmp_path, dialect)
    users = tmp_path / "home" / BESIDE[dialect]
    users.parent.mkdir(parents=True)
    os.mkfifo(users)
    try:
        done = _install(dialect, project)
    except subprocess.TimeoutExpired:
        pytest.fail("install waited on the user's named pipe")
    assert done.returncode == 0, done.stdout + done.stderr
    assert target.is_file()
