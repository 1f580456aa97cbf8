"""A hook's rewrite and its ``ask``, with the real Codex CLI and Gemini CLI.

A guard that rewrites the scripted ``rm -r victim`` and allows the new arguments: each CLI runs
the rewritten command instead (Codex from Claude Code's ``updatedInput``, Gemini from its
``hookSpecificOutput.tool_input``). A hook that asks a person to confirm: Codex 0.171 ignores
``ask`` (the original call would run), so otelhooks denies the call and the model is told why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import rewrite_guard
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    CliRun,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_rm", "rm -r victim")]


def _install(dialect: str, project: Path, decision: str) -> None:
    (project / "hooks.yaml").write_text(rewrite_guard(decision))
    install_agent(dialect, project=project, hooks_file="hooks.yaml")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }


def _codex(project: Path, tmp_path: Path) -> CliRun:
    need_cli(CODEX)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    return run


def test_codex_runs_the_arguments_a_hook_rewrote_and_allowed(project: Path, tmp_path: Path) -> None:
    _install("codex", project, "allow")
    _codex(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert (project / "note.txt").read_text() == "rewritten\n"


def test_gemini_runs_the_arguments_a_hook_rewrote_and_allowed(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    _install("gemini", project, "allow")
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert (project / "note.txt").read_text() == "rewritten\n"


def test_codex_denies_what_a_hook_asks_a_person_to_confirm(project: Path, tmp_path: Path) -> None:
    _install("codex", project, "ask")
    run = _codex(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert not (project / "note.txt").exists()
    told = " ".join(
        json.dumps(item.get("output"))
        for item in run.requests[-1]["input"]
        if item.get("type") == "function_call_output"
    )
    assert "Codex CLI cannot ask a person, so otelhooks denies it" in told
