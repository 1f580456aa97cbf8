"""A prompt guard (``UserPromptSubmit``; Gemini CLI's ``BeforeAgent``) blocks the real CLI's turn.

The bridge answers Claude Code's ``{"decision": "block"}``: Codex takes it as is, Gemini gets
``{"decision": "deny"}``. Either way the model is never asked (the scripted API receives no
request) and nothing is deleted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

GUARD = """\
hooks:
  - id: no-cleanup
    type: UserPromptSubmit
    command: "echo 'no clean-ups today' >&2; exit 2"
"""
STEPS = [("call_rm", "rm -r victim")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "hooks.yaml").write_text(GUARD)
    return root


def test_codex_prompt_guard_blocks_the_turn(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    install_agent("codex", project=project, hooks_file=project / "hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert run.requests == []
    assert (project / "victim").exists()


def test_gemini_before_agent_guard_blocks_the_turn_with_its_reason(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    install_agent("gemini", project=project, hooks_file=project / "hooks.yaml")
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert run.requests == []
    assert (project / "victim").exists()
    assert "no clean-ups today" in " ".join(json.loads(run.stdout).get("warnings") or [])
