"""``otelhooks claude-code install --fail-closed`` with the real Claude Code CLI: a guard that
cannot answer at all blocks the call.

The bridge answers its own failures (a hooks file that does not load, a hook that fails) with a
deny; what it cannot answer is a hook process that never runs or never returns: the interpreter
``install`` wrote is gone (a removed virtualenv), ``otelhooks serve`` is down, the bridge daemon is
stopped. Claude Code's default for those is a non-blocking error and the tool runs; the guard
entries ``--fail-closed`` writes carry ``onFailure: "block"``, so Claude Code blocks instead. Each
case runs a scripted ``rm -r victim``: the folder must survive, and without ``--fail-closed``
(the control) the same break lets it run. The hooks file itself allows everything: a block can
only come from ``onFailure``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import reserved_port
from tests.coding_agents_cli._runs import (
    CLAUDE,
    CLI_TEST_S,
    CliRun,
    need_cli,
    run_claude,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

ALLOW_ALL = "hooks:\n  - {id: look, type: PostToolUse, command: 'true'}\n"
RM = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(ALLOW_ALL)
    return project


def _install(project: Path, *, fail_closed: bool, http: str | None = None) -> Path:
    settings = project / ".claude" / "settings.json"
    install(settings, http=http, hooks_file="hooks.yaml", events=["PreToolUse"],
            fail_closed=fail_closed)  # fmt: skip
    return settings


def _edit_entry(settings: Path, **fields: Any) -> None:
    data = json.loads(settings.read_text())
    (group,) = data["hooks"]["PreToolUse"]
    group["hooks"][0].update(fields)
    settings.write_text(json.dumps(data))


def _rm(project: Path, tmp_path: Path, env: dict[str, str] | None = None) -> CliRun:
    run = run_claude(project, tmp_path / "home", RM, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    return run


def _blocked(project: Path, run: CliRun) -> None:
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert 'onFailure is "block"' in run.told(), run.told()


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "control"])
def test_an_interpreter_that_is_gone(project: Path, tmp_path: Path, fail_closed: bool) -> None:
    settings = _install(project, fail_closed=fail_closed)
    data = json.loads(settings.read_text())
    command = data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    # what a removed virtualenv leaves: the hook command's interpreter path no longer exists
    _edit_entry(settings, command="/nonexistent/venv/bin/python3 " + command.split(" ", 1)[1])
    run = _rm(project, tmp_path)
    if fail_closed:
        _blocked(project, run)
    else:  # Claude Code's default: a non-blocking error, and the tool runs
        assert not (project / "victim").exists(), run.told()


def test_a_server_that_is_down(project: Path, tmp_path: Path) -> None:
    with reserved_port() as dead_port:
        _install(project, fail_closed=True, http=f"http://127.0.0.1:{dead_port}")
        _blocked(project, _rm(project, tmp_path, {"OTELHOOKS_INGEST_TOKEN": "t"}))


def _daemon_pid(folder: Path) -> int:
    """The bridge daemon serving a socket in ``folder`` (it is started by the first event)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for sock in folder.glob("cc-*.sock"):
            for proc in Path("/proc").iterdir():
                try:
                    cmdline = (proc / "cmdline").read_bytes()
                except OSError:
                    continue
                if proc.name.isdigit() and str(sock).encode() in cmdline:
                    return int(proc.name)
        time.sleep(0.1)
    raise AssertionError(f"no bridge daemon serves a socket in {folder}")


@pytest.fixture
def stopped_daemon() -> Iterator[list[int]]:
    stopped: list[int] = []
    yield stopped
    for pid in stopped:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


def test_a_stopped_daemon(project: Path, tmp_path: Path, stopped_daemon: list[int]) -> None:
    settings = _install(project, fail_closed=True)
    run_dir = tmp_path / "run"
    env = {"XDG_RUNTIME_DIR": str(run_dir), "OTELHOOKS_BRIDGE_DAEMON_IDLE": "60"}
    touch = [{"id": "call_touch", "tool": "Bash", "args": {"command": "touch started"}}]
    # with the entry's own timeout: the first event starts the daemon, which on a loaded
    # machine takes longer than the 2 s below (Claude Code then blocked the touch)
    first = run_claude(project, tmp_path / "home", touch, extra_env=env)  # starts the daemon
    assert first.returncode == 0, skip_reason(first)
    assert (project / "started").exists(), first.told()
    pid = _daemon_pid(run_dir)
    # Claude Code gives up on the hook before the hook client finds the daemon stopped (3 s:
    # test_stopped_daemon.py) and answers through the one-process bridge (which allows here)
    _edit_entry(settings, timeout=2)
    os.kill(pid, signal.SIGSTOP)
    stopped_daemon.append(pid)
    _blocked(project, _rm(project, tmp_path, env))
