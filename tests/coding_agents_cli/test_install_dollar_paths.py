"""A project, hooks file or virtualenv whose path holds a ``$``, with the real Codex and Gemini.

Gemini CLI 0.61 replaces ``$NAME`` and ``${NAME}`` in every string of its settings with its own
environment's value before it runs a hook, single quotes or not: a hooks file under
``p $HOME x`` became ``p /root x``, the bridge found no hooks file and the scripted ``rm -r``
ran. ``gemini install`` writes such a ``$`` so that no name follows it (``'p $''HOME x'``); the
``--fail-closed`` wrapper names no shell variable (a ``$s`` became an environment's ``0``: every
exit a pass, and the guard whose interpreter is gone let the tool run). Codex CLI 0.171 runs the
command as written; its case shows the same install guards there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import hooks_path, install_agent
from tests.coding_agents_cli._guarded import DENY_SHELL_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_rm", "rm -r victim")]
FOLDERS = {"name": "p $HOME x", "braces": "p ${HOME} x", "quote": "p '$HOME' x"}


def _project(tmp_path: Path, folder: str) -> Path:
    project = tmp_path / folder
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)
    return project


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
        **more,
    }


@pytest.mark.parametrize("folder", list(FOLDERS))
@pytest.mark.parametrize("dialect", ["gemini", "codex"])
def test_a_guard_installed_under_a_path_with_a_dollar_denies(
    dialect: str, folder: str, tmp_path: Path
) -> None:
    need_cli(GEMINI if dialect == "gemini" else CODEX)
    project = _project(tmp_path, FOLDERS[folder])
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    if dialect == "gemini":
        run = run_gemini(project, home, STEPS, extra_env=_env(tmp_path))
    else:
        codex_config(home, trusted=project)
        run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "deleting is not allowed here" in run.told()


def test_the_fail_closed_wrapper_blocks_whatever_gemini_s_environment_holds(
    tmp_path: Path,
) -> None:
    """An interpreter that is gone, and ``s`` set where Gemini CLI runs: still blocked."""
    need_cli(GEMINI)
    project = _project(tmp_path, "project")
    (project / "hooks.yaml").write_text("hooks: []\n")
    install_agent("gemini", project=project, hooks_file="hooks.yaml", fail_closed=True)
    path = hooks_path("gemini", project=project)
    data = json.loads(path.read_text())
    (group,) = data["hooks"]["BeforeTool"]
    handler = group["hooks"][0]
    handler["command"] = "/nonexistent/venv/bin/python3 " + handler["command"].split(" ", 1)[1]
    path.write_text(json.dumps(data))
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=_env(tmp_path, s="0"))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "the guard could not run (exit 127): blocked (--fail-closed)" in run.told()
