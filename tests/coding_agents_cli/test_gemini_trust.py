"""What ``otelhooks gemini install`` says Gemini CLI needs, checked against the real Gemini CLI.

Headless Gemini CLI 0.61 refuses to run in an untrusted folder and suggests ``--skip-trust``,
which trusts the folder for the session, but only after the project's settings were read: the
run goes on with none of the project's hooks, and the scripted ``rm -r`` deletes, without a
word. A project install now says so (and what to do instead); the user's hooks guard such a run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX_RM_GUARD,
    GEMINI,
    bridge_env,
    gemini_settings,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_rm", "rm -r victim")]
# Gemini CLI's own default: folder trust on (the other tests turn it off)
FOLDER_TRUST = {"security": {"auth": {"selectedType": "gemini-api-key"}}}


def test_a_gemini_project_install_says_skip_trust_runs_none_of_its_hooks(tmp_path: Path) -> None:
    change = install_agent("gemini", project=tmp_path, hooks_file="hooks.yaml")
    said = [w for w in change.warnings if "--skip-trust" in w]
    assert len(said) == 1
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in said[0]
    assert "--user" in said[0]


def test_a_gemini_user_install_says_nothing_of_folder_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    change = install_agent("gemini", user=True, hooks_file=tmp_path / "hooks.yaml")
    assert not [w for w in change.warnings if "--skip-trust" in w]


def test_project_hooks_do_not_run_under_skip_trust(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    run = run_gemini(
        project,
        tmp_path / "home",
        STEPS,
        extra_env=bridge_env(tmp_path),
        settings=FOLDER_TRUST,
        skip_trust=True,
    )
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()


def test_user_hooks_guard_under_skip_trust(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(GEMINI)
    home = tmp_path / "home"
    gemini_settings(home, FOLDER_TRUST)  # the user's settings; install merges into them
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "hooks.yaml").write_text(CODEX_RM_GUARD)
    install_agent("gemini", user=True, hooks_file=tmp_path / "hooks.yaml")
    run = run_gemini(project, home, STEPS, extra_env=bridge_env(tmp_path), skip_trust=True)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"


def test_a_gemini_project_install_says_a_subfolder_session_runs_none_of_its_hooks(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI 0.61 reads the ``.gemini/settings.json`` of the folder it starts in and none
    above it, in a git repository too: started in a subfolder, the scripted ``rm -r`` ran past
    the project's installed guard, and install said nothing of it."""
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    sub = project / "sub"
    (sub / "victim").mkdir(parents=True)
    (sub / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    said = [w for w in change.warnings if "subfolder" in w]
    assert said == [
        "Gemini CLI reads a project's .gemini/settings.json only when started in that folder "
        f"({project}): a session started in a subfolder runs none of these hooks, without a "
        "word; start Gemini CLI there, or install with --user"
    ]
    monkeypatch.setenv("HOME", str(tmp_path / "other-home"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    user = install_agent("gemini", user=True, hooks_file=project / "hooks.yaml")
    assert not [w for w in user.warnings if "subfolder" in w]

    need_cli(GEMINI)
    home = tmp_path / "home"
    run = run_gemini(sub, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (sub / "victim").exists()
    run = run_gemini(project, home, STEPS, extra_env=bridge_env(tmp_path))  # the guard, at the root
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").exists()
