"""What ``otelhooks codex install`` says Codex needs, checked against the real Codex CLI.

Codex skips hooks it does not trust without a word: a project's ``.codex/hooks.json`` runs only
for a project ``config.toml`` marks trusted, and any hook only once its content is trusted (in
``exec``: ``--dangerously-bypass-hook-trust``). With either missing, the installed guard does
not run and the scripted ``rm -r`` deletes; ``--user`` hooks need no project trust.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    CODEX_RM_GUARD,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_rm", "rm -r victim")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    need_cli(CODEX)
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "victim" / "keep.txt").write_text("precious")
    (root / "hooks.yaml").write_text(CODEX_RM_GUARD)
    return root


def test_project_hooks_do_not_run_in_an_untrusted_project(project: Path, tmp_path: Path) -> None:
    install_agent("codex", project=project, hooks_file=project / "hooks.yaml")
    home = tmp_path / "home"
    codex_config(home)  # no [projects."..."] trust_level
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()


def test_hooks_whose_content_is_not_trusted_do_not_run(project: Path, tmp_path: Path) -> None:
    install_agent("codex", project=project, hooks_file=project / "hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path), bypass_hook_trust=False)
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()


def test_user_hooks_guard_without_project_trust(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    change = install_agent("codex", user=True, hooks_file=project / "hooks.yaml")
    assert change.path == home / ".codex" / "hooks.json"
    codex_config(home)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
