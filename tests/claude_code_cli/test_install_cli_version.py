"""``otelhooks claude-code install`` asks the ``claude`` on ``PATH`` for its version: Claude Code
before 2.1.332 never fires ``PreSkillShellCommand``, so a skill's inline ``!`cmd` `` runs there
without the guards seeing it, and install says so on stderr (exit code unchanged, the hooks
written). The real CLI (2.1.337) gets no such warning; no ``claude`` on ``PATH``, nothing is said;
one that hangs is killed at the deadline and install warns that it could not tell.

Before, install said nothing whatever the version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.coding_agents_cli._runs import CLAUDE, require

pytestmark = pytest.mark.timeout(120)

OLD = "#!/bin/sh\necho '2.1.300 (Claude Code)'\n"
# exec: the shell is the process install kills, and no child of it keeps the pipe open
HANGS = "#!/bin/sh\nexec sleep 600\n"


def _on_path(folder: Path, script: str | None = None, *, real: bool = False) -> Path:
    folder.mkdir(parents=True)
    claude = folder / "claude"
    if real:
        claude.symlink_to(CLAUDE.resolve())
    elif script is not None:
        claude.write_text(script)
        claude.chmod(0o755)
    return folder


def _install(tmp_path: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "install", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


def _installed(tmp_path: Path) -> bool:
    settings = tmp_path / "project" / ".claude" / "settings.local.json"
    return "PreSkillShellCommand" in json.loads(settings.read_text())["hooks"]


def test_an_older_claude_on_path_gets_a_loud_warning_and_install_still_succeeds(
    tmp_path: Path,
) -> None:
    done = _install(tmp_path, _on_path(tmp_path / "bin", OLD))
    assert done.returncode == 0, done.stderr
    assert _installed(tmp_path)
    (line,) = [x for x in done.stderr.splitlines() if "skill shell commands" in x]
    assert line.startswith("warning: skill shell commands are unguarded")
    assert "2.1.300" in line
    assert "2.1.332" in line
    assert "skill shell" not in done.stdout


def test_the_real_claude_code_cli_gets_no_warning(tmp_path: Path) -> None:
    require(f"{CLAUDE.name} (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    done = _install(tmp_path, _on_path(tmp_path / "bin", real=True))
    assert done.returncode == 0, done.stderr
    assert _installed(tmp_path)
    assert "skill shell" not in done.stderr


def test_no_claude_on_path_is_no_warning(tmp_path: Path) -> None:
    done = _install(tmp_path, _on_path(tmp_path / "bin"))
    assert done.returncode == 0, done.stderr
    assert _installed(tmp_path)
    assert "skill shell" not in done.stderr


def test_a_claude_that_hangs_is_killed_and_install_says_it_could_not_tell(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    done = _install(tmp_path, _on_path(tmp_path / "bin", HANGS))
    assert time.monotonic() - started < 60
    assert done.returncode == 0, done.stderr
    assert _installed(tmp_path)
    (line,) = [x for x in done.stderr.splitlines() if "skill shell commands" in x]
    assert line.startswith("warning: skill shell commands may be unguarded")
    assert "no answer within" in line
