"""``sudo otelhooks ... install --user`` says that it wrote root's settings, not the user's.

``sudo`` runs install as root with ``HOME`` set to root's home: ``--user`` wrote
``/root/.claude/settings.json`` (``/root/.codex/hooks.json``, ``/root/.gemini/settings.json``)
and said ``created``, while the user who ran ``sudo`` runs the CLI with their own home's
settings, which hold none of the hooks: every tool ran unguarded, without a word. All three
installers now warn on stderr that no installed hook will run for that user, naming the file.
``sudo`` is stood for by what it leaves in the environment (``SUDO_UID``, ``SUDO_USER``, root's
``HOME``) around the real ``otelhooks`` command, run as root.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from tests.coding_agents_cli._runs import (
    CODEX,
    CODEX_RM_GUARD,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def nobody() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("install must run as root, as under sudo")
    return pwd.getpwnam("nobody")


def _install(root_home: Path, sudo: pwd.struct_passwd | None, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root_home),
        "OTELHOOKS_CODEX_SYSTEM_DIR": str(root_home / "no-etc-codex"),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(root_home / "no-system-settings.json"),
        "OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR": str(root_home / "no-managed-settings"),
    }
    if sudo is not None:
        env.update(SUDO_UID=str(sudo.pw_uid), SUDO_GID=str(sudo.pw_gid), SUDO_USER=sudo.pw_name)
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", *args, "--no-traces"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


FILES = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}


@pytest.mark.parametrize("cli", list(FILES))
def test_a_user_install_under_sudo_says_it_wrote_roots_file(
    cli: str, nobody: pwd.struct_passwd, tmp_path: Path
) -> None:
    root_home = tmp_path / "root-home"
    root_home.mkdir()
    hooks = str(tmp_path / "hooks.yaml")
    err = _install(root_home, nobody, cli, "install", "--user", "--hooks", hooks)
    written = root_home / FILES[cli]
    assert written.is_file()
    said = f"warning: no installed hook will run for {nobody.pw_name}: install ran as root (sudo)"
    assert f"{said} and wrote {written}, in root's home" in err
    assert nobody.pw_dir in err
    # without sudo (root's own install), and a project install under sudo: no such warning
    assert "(sudo)" not in _install(root_home, None, cli, "install", "--user", "--hooks", hooks)
    project = tmp_path / "project"
    project.mkdir()
    err = _install(root_home, nobody, cli, "install", "--project", str(project), "--hooks", hooks)
    assert "(sudo)" not in err


def test_the_users_codex_runs_none_of_the_hooks_in_roots_home(
    nobody: pwd.struct_passwd, project: Path, tmp_path: Path
) -> None:
    """Why install must say so: the real Codex CLI run with the user's home deletes."""
    need_cli(CODEX)
    root_home, user_home = tmp_path / "root-home", tmp_path / "user-home"
    (root_home / ".codex").mkdir(parents=True)
    (tmp_path / "hooks.yaml").write_text(CODEX_RM_GUARD)
    hooks = str(tmp_path / "hooks.yaml")
    codex_config(user_home, trusted=project)
    err = _install(root_home, nobody, "codex", "install", "--user", "--hooks", hooks)
    assert "no installed hook will run" in err
    env = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}
    run = run_codex(project, user_home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()
