"""A stopped bridge daemon with the real Codex CLI and Gemini CLI: the installed guard still denies.

Both CLIs run a hook past its timeout as a non-blocking failure: the tool runs, even with
``--fail-closed`` (docs/adapters.md, "What each CLI cannot do"). A stopped daemon used to hold
the hook client until then. A first run (a scripted ``touch``) starts the daemon; the test stops
it (``SIGSTOP``); the second run's ``rm -r victim`` is answered within seconds by the
one-process bridge, the guard's deny: the folder survives, the model is told the guard's reason,
and the stopped daemon has been killed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import RM_GUARD
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
from tests.integrations._daemon_procs import daemon_pid, until_gone

pytestmark = pytest.mark.timeout(CLI_TEST_S)

TOUCH = [("call_touch", "touch started")]
RM = [("call_rm", "rm -r victim")]
# The client's fallback is the same with and without --fail-closed (both are run with real
# processes in tests/reliability/test_stopped_daemon.py): each CLI runs it once, as installed
# by default, where a hook killed at its timeout would have let the rm run.


def _env(tmp_path: Path, runtime_dir: Path) -> dict[str, str]:
    return {
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "60",
    }


def _install(dialect: str, project: Path) -> None:
    (project / "hooks.yaml").write_text(RM_GUARD)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")


def _stop_the_daemon(project: Path, runtime_dir: Path, first: CliRun) -> int:
    assert first.returncode == 0, skip_reason(first)
    assert (project / "started").exists()
    pid = daemon_pid(runtime_dir)
    os.kill(pid, signal.SIGSTOP)
    return pid


def _survived(project: Path, run: CliRun, told: str, pid: int) -> None:
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", told
    assert "deleting is not allowed here" in told
    assert until_gone(pid)


def test_codex_guard_denies_with_a_stopped_daemon(
    project: Path, tmp_path: Path, runtime_dir: Path
) -> None:
    need_cli(CODEX)
    _install("codex", project)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = _env(tmp_path, runtime_dir)
    pid = _stop_the_daemon(project, runtime_dir, run_codex(project, home, TOUCH, extra_env=env))
    run = run_codex(project, home, RM, extra_env=env)
    _survived(project, run, run.told(), pid)


def test_gemini_guard_denies_with_a_stopped_daemon(
    project: Path, tmp_path: Path, runtime_dir: Path
) -> None:
    need_cli(GEMINI)
    _install("gemini", project)
    home = tmp_path / "home"
    env = _env(tmp_path, runtime_dir)
    pid = _stop_the_daemon(project, runtime_dir, run_gemini(project, home, TOUCH, extra_env=env))
    run = run_gemini(project, home, RM, extra_env=env)
    _survived(project, run, run.told(), pid)
    assert "the bridge daemon did not answer" in run.stderr
