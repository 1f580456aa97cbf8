"""``$GEMINI_CLI_HOME`` set: Gemini CLI 0.61 reads the user's settings from
``$GEMINI_CLI_HOME/.gemini/settings.json``, not ``~/.gemini``.

``gemini install --user`` wrote ``~/.gemini/settings.json``, which Gemini CLI then never read:
``created``, and the real CLI ran the scripted ``rm -r victim``; a project install read the
wrong user file for the settings that turn hooks off. Now both follow the variable, and
``uninstall --user`` removes the hooks there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import DENY_SHELL_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    GEMINI,
    gemini_settings,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

REPO = Path(__file__).resolve().parents[2]


def _otelhooks(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "gemini", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
        timeout=60,
        check=False,
    )


def test_a_user_install_goes_where_gemini_cli_reads_the_users_settings(
    project: Path, tmp_path: Path
) -> None:
    home, gemini_home = tmp_path / "home", tmp_path / "gemini-home"
    users = gemini_settings(gemini_home)  # the scripted API's settings, where Gemini CLI looks
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(DENY_SHELL_GUARD)
    env = {"HOME": str(home), "GEMINI_CLI_HOME": str(gemini_home)}
    args = ["install", "--user", "--hooks", str(hooks), "--no-traces"]
    done = _otelhooks(*args, env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{users}: updated"), done.stdout
    assert not (home / ".gemini").exists()

    need_cli(GEMINI)
    extra = {"GEMINI_CLI_HOME": str(gemini_home), "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "s.db")}
    run = run_gemini(project, gemini_home, [("call_rm", "rm -r victim")], extra_env=extra)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "deleting is not allowed here" in run.told()

    done = _otelhooks("uninstall", "--user", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "hooks" not in json.loads(users.read_text())


def test_a_project_install_reads_the_users_settings_under_gemini_cli_home(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemini_home = tmp_path / "gemini-home"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    users = gemini_settings(gemini_home, {"hooksConfig": {"enabled": False}})
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)
    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    (off,) = [w for w in change.warnings if w.startswith("no installed hook will run")]
    assert str(users) in off
