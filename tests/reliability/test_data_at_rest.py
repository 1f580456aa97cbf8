"""Files otelhooks creates to keep data at rest are private (issue 13, deliverable 6): the durable
event log and the webhook outbox (with SQLite's ``-wal``/``-shm`` files and the writer lock) are
``0600``, in folders otelhooks creates ``0700``; folders that already existed keep their mode."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otelhooks import EventEntry, SqliteEventLog
from otelhooks._actions._outbox import Outbox
from otelhooks._private_files import private_file
from otelhooks.integrations.coding_agents._state import BridgeState


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def _usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the common default, under which files were 0644
    yield
    os.umask(previous)


def test_the_durable_event_log_is_private(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    db = tmp_path / "state" / "logs" / "events.sqlite3"
    log = SqliteEventLog(db)
    try:
        entry = EventEntry(
            1, "bot", None, None, "t", "after_tool_result", False, True, "", "ok", None, None
        )
        log.append(entry)
        assert log.flush(10)
        files = sorted(p.name for p in db.parent.iterdir())
        assert files == [
            "events.sqlite3",
            "events.sqlite3-shm",
            "events.sqlite3-wal",
            "events.sqlite3.lock",
        ]
        for name in files:
            assert mode(db.parent / name) == 0o600, name
        assert mode(db.parent) == 0o700
        assert mode(db.parent.parent) == 0o700
        assert mode(tmp_path) == 0o755  # not ours: left alone
    finally:
        log.close()


def test_an_existing_world_readable_log_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    SqliteEventLog(db).close()
    db.chmod(0o644)
    SqliteEventLog(db).close()
    assert mode(db) == 0o600


def test_the_webhook_outbox_is_private(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".otelhooks" / "outbox.sqlite3"
    outbox = Outbox(path)
    try:
        for file in path.parent.iterdir():
            assert mode(file) == 0o600, file.name
        assert mode(path) == 0o600
        assert mode(path.parent) == 0o700
        assert mode(path.parent.parent) == 0o700
    finally:
        outbox.close()


def test_a_device_named_as_a_data_file_keeps_its_mode(tmp_path: Path) -> None:
    """``--traces-out /dev/null`` (or a state file on a device): the gateway writes to it and the
    bridge falls back to its scratch state, and neither changes the device's mode. Before, run
    as root, both made it 0600, and ``/dev/null`` then refused every other user's programs."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # another name for /dev/null
    node.chmod(0o666)
    gateway = subprocess.run(
        [sys.executable, "-m", "otelhooks", "mcp", "--traces-out", str(node), "--",
         sys.executable, "-c", "pass"],
        input=b"", capture_output=True, timeout=120,
    )  # fmt: skip
    assert mode(node) == 0o666, gateway.stderr.decode()[-2000:]
    state = BridgeState(node)
    try:
        assert state.begin_tool("s", "toolu_1", "Bash", {"command": "ls"}) is not None
    finally:
        state.close()
    assert mode(node) == 0o666


def test_a_pipe_or_a_link_beside_a_data_file_is_left_alone(tmp_path: Path) -> None:
    """SQLite's side files are tightened only when they are regular files of the folder: a pipe
    named ``-wal`` is not waited on nor changed, and a link named ``-shm`` does not lead the
    tightening to the file it points at (before, ``chmod`` followed it)."""
    db = tmp_path / "events.sqlite3"
    os.mkfifo(tmp_path / "events.sqlite3-wal", 0o644)
    elsewhere = tmp_path / "someone-elses.txt"
    elsewhere.write_text("theirs")
    elsewhere.chmod(0o644)
    (tmp_path / "events.sqlite3-shm").symlink_to(elsewhere)
    private_file(db)
    assert mode(db) == 0o600
    assert mode(tmp_path / "events.sqlite3-wal") == 0o644
    assert mode(elsewhere) == 0o644
