"""A state file its neighbours broke never silences a guard.

The command bridge's state file (``$OTELHOOKS_BRIDGE_STATE``) is shared by every hook process of
the machine. A process stopped while it holds the file's write lock, a file that is not a
database or has another version's tables, a path that is a folder: each used to fail the bridge
(exit 1, after which Claude Code and Codex run the tool) or hold it past its answer time (the
25 s deadline, then the same exit 1), though the guard's decision does not need the file. Now
the event is handled with a scratch state, the problem is logged, and the guard answers. Real
processes: the one-process bridge, the hook client with its bridge daemon, and a real lock
holder.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from otelhooks.integrations.claude_code import BridgeState
from tests.integrations._daemon_procs import (
    NO_RM,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    hook,
    one_process,
    runtime_folder,
)

pytestmark = pytest.mark.timeout(120)

WAIT_S = 5.0  # the state file's wait (``STATE_WAIT_S``), which the processes here use
# a process that takes the file's write lock, says so, and stops itself holding it
HOLD_LOCK = """\
import os, signal, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS neighbour (n)")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO neighbour VALUES (1)")
print("locked", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""


@contextlib.contextmanager
def stopped_lock_holder(path: Path) -> Iterator[int]:
    """A real process, stopped while it holds ``path``'s write lock; killed at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        deadline = time.monotonic() + 30
        while Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] != "T":
            assert time.monotonic() < deadline, "the lock holder did not stop"
            time.sleep(0.02)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _folder(path: Path) -> None:
    path.mkdir()


def _not_a_database(path: Path) -> None:
    path.write_bytes(b"not a database, " * 512)


def _other_tables(path: Path) -> None:
    # a file another version left: its tables are not these (a tool row fails half-way, after
    # the turn's row was written, so the transaction must roll back, not stay half done)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE tools (something_else TEXT)")
        db.commit()


BROKEN: dict[str, Callable[[Path], None]] = {
    "a folder": _folder,
    "not a database": _not_a_database,
    "other tables": _other_tables,
}


def _bridge(project: Path, command: str, dialect: str = "claude-code") -> Hooked:
    return one_process(project, bash(f"t-{command.split()[0]}", command, "s1"), dialect=dialect)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    return tmp_path


@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_the_guard_decides_whatever_state_file_it_finds(project: Path, broken: str) -> None:
    state = project / "state.sqlite3"
    BROKEN[broken](state)
    denied = _bridge(project, "rm -rf build")
    assert denied.deny_reason() == "rm -rf is not allowed here"
    assert "the state file cannot be used" in denied.stderr
    assert str(state) in denied.stderr
    allowed = _bridge(project, "ls -la")  # and an allowed call is allowed
    assert (allowed.returncode, allowed.stdout.strip()) == (0, ""), allowed.stderr
    if broken == "other tables":  # the half-done transaction was rolled back
        with contextlib.closing(sqlite3.connect(state)) as db:
            assert db.execute("SELECT count(*) FROM operations").fetchone()[0] == 0


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
def test_a_stopped_process_holding_the_lock_delays_the_guard_but_cannot_silence_it(
    project: Path, dialect: str
) -> None:
    with stopped_lock_holder(project / "state.sqlite3"):
        denied = _bridge(project, "rm -rf build", dialect)
    assert denied.deny_reason() == "rm -rf is not allowed here"
    assert "database is locked" in denied.stderr
    # the file's wait, far inside the 25 s after which the answer would be a failure (exit 1)
    assert WAIT_S - 0.5 < denied.seconds < WAIT_S + 8


def test_the_daemon_waits_once_for_a_stopped_neighbour_then_answers_at_once(
    project: Path,
) -> None:
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        assert hook(env, bash("t0", "ls")).returncode == 0  # the daemon starts, on a free file
        daemon_pid(runtime)
        with stopped_lock_holder(project / "state.sqlite3"):
            first = hook(env, bash("t1", "rm -rf build"))
            second = hook(env, bash("t2", "rm -rf dist"))
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"
    assert first.seconds < WAIT_S + 8
    assert second.seconds < 2.0  # the file is left alone for a while: no second wait


def test_a_state_that_waited_in_vain_keeps_to_its_scratch_then_returns_to_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite3"
    state = BridgeState(path, wait_s=0.3)
    try:
        with capture_logs() as logs, stopped_lock_holder(path):
            tool = state.begin_tool("s1", "t1", "Bash", {})
            started = time.monotonic()
            # the pair is joined in the scratch state, and the file is not waited for again
            assert state.end_tool("s1", "t1") == tool
            assert time.monotonic() - started < 0.25
        (logged,) = logs
        assert logged["log_level"] == "error"
        assert logged["state_file"] == str(path)
        assert "database is locked" in logged["problem"]
        time.sleep(0.35)  # the neighbour is gone: the file is tried again, and used
        state.begin_tool("s1", "t2", "Bash", {})
        with contextlib.closing(sqlite3.connect(path)) as db:
            rows = db.execute("SELECT tool_use_id FROM tools").fetchall()
        assert rows == [("t2",)]
        assert state.end_tool("s1", "t1") is None  # what the scratch held ended with it
    finally:
        state.close()


def test_a_neighbour_that_only_reads_is_no_problem(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    state = BridgeState(path, wait_s=0.3)
    state.begin_tool("s1", "t1", "Bash", {})
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT * FROM tools").fetchall()  # a read transaction held open
        with capture_logs() as logs:
            assert state.end_tool("s1", "t1") is not None
    assert logs == []
    state.close()
