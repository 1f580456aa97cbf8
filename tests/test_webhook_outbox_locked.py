"""delivery: queue under a locked outbox file: another process holds SQLite's write lock
(a second otelhooks process, a backup tool, a ``sqlite3`` shell left in a transaction)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from otelhooks import CriticalHookDeliveryError, WebhookDeliverer
from otelhooks.testing import TestPipeline
from tests._webhook_server import Received, Reply, WebhookServer

# Holds BEGIN IMMEDIATE on the file from the line it reads on stdin, for argv[2] seconds
# (or until killed), then commits.
NEIGHBOUR = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    sys.stdin.readline()
    db.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    db.execute("COMMIT")
    print("released", flush=True)
    """
)


class Neighbour:
    def __init__(self, path: Path, hold_s: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", NEIGHBOUR, str(path), str(hold_s)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.locked = threading.Event()

    def lock(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "locked"
        self.locked.set()

    def released(self, timeout_s: float) -> bool:
        assert self.proc.stdout is not None
        self.proc.wait(timeout_s)
        return "released" in self.proc.stdout.read()


@pytest.fixture
def outbox_path(tmp_path: Path) -> Path:
    return tmp_path / "outbox.db"


@pytest.fixture
def queued(pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer) -> None:
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip


def lock_at_first_request(server: WebhookServer, neighbour: Neighbour) -> None:
    """The first delivery takes the lock for the neighbour, then fails (503): the pump's next
    write (the retry's reschedule) meets the lock. Later ones are accepted."""

    def reply(_got: Received) -> Reply:
        if not neighbour.locked.is_set():
            neighbour.lock()
            return Reply(503)
        return Reply(204)

    server.routes["/q"] = reply


def run_one_tool(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        step.run_tool("calc", "add", {}, lambda: "1")


@pytest.mark.usefixtures("queued")
def test_a_queued_webhook_is_delivered_once_a_neighbours_write_lock_is_released(
    pipe: TestPipeline, server: WebhookServer, outbox_path: Path
) -> None:
    neighbour = Neighbour(outbox_path, hold_s=6.5)  # past SQLite's 5 s busy timeout
    lock_at_first_request(server, neighbour)
    with capture_logs() as logs:
        run_one_tool(pipe)  # nothing is enqueued after this
        assert neighbour.released(30)
        got = server.wait_for("/q", 2, timeout_s=20)
    assert len(got) == 2  # the retry, once the lock was released
    assert {r.headers["idempotency-key"] for r in got} == {got[0].headers["idempotency-key"]}
    said = [e for e in logs if e["event"] == "outbox store unavailable, deliveries wait"]
    assert len(said) == 1  # once, however long the lock lasted
    assert said[0]["path"] == str(outbox_path)
    assert "database is locked" in said[0]["error"]


@pytest.mark.usefixtures("queued")
def test_a_shutdown_while_the_outbox_is_locked_keeps_its_deadline_and_reports_what_stayed(
    pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer, outbox_path: Path
) -> None:
    neighbour = Neighbour(outbox_path, hold_s=120)  # held until killed
    try:
        lock_at_first_request(server, neighbour)
        run_one_tool(pipe)
        assert server.wait_for("/q", 1)
        waiting = time.monotonic() + 20
        while not deliverer.reports() and time.monotonic() < waiting:
            time.sleep(0.05)  # until the pump met the lock (its retry's reschedule)
        assert [r.line() for r in deliverer.reports()] == [
            f"0 of 1 webhooks delivered to {outbox_path} (1 dropped): 1 still queued in the "
            "outbox (database is locked)"
        ]
        started = time.monotonic()
        deliverer.shutdown(1.0)
        took = time.monotonic() - started
        lines = [r.line() for r in deliverer.reports()]
    finally:
        neighbour.proc.kill()
        neighbour.proc.wait(10)
    assert took < 2.0, took
    assert lines == [
        f"0 of 1 webhooks delivered to {outbox_path} (1 dropped): 1 still queued in the outbox "
        "(database is locked); delivered at the next start"
    ]


@pytest.mark.parametrize("fallback", ["fetch", "none"])
def test_an_enqueue_the_locked_outbox_cannot_store_follows_the_hooks_fallback(
    pipe: TestPipeline,
    deliverer: WebhookDeliverer,
    server: WebhookServer,
    outbox_path: Path,
    fallback: str,
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue", "fallback": fallback}}
    )  # fmt: skip
    run_one_tool(pipe)  # stored and delivered through the outbox
    assert len(server.wait_for("/q", 1)) == 1
    neighbour = Neighbour(outbox_path, hold_s=120)  # held until killed
    try:
        neighbour.lock()
        with capture_logs() as logs:
            if fallback == "none":
                with pytest.raises(CriticalHookDeliveryError):
                    run_one_tool(pipe)
            else:
                run_one_tool(pipe)  # the insert waits 0.25 s at most, then fetch
                assert len(server.wait_for("/q", 2)) == 2  # delivered while still locked
    finally:
        neighbour.proc.kill()
        neighbour.proc.wait(10)
    if fallback == "fetch":
        said = [e for e in logs if e["event"] == "outbox unavailable, falling back to fetch"]
        assert len(said) == 1
        assert "database is locked" in said[0]["error"]


def test_a_flush_keeps_its_deadline_while_an_enqueue_waits_on_the_lock(
    pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer, outbox_path: Path
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip
    run_one_tool(pipe)
    assert len(server.wait_for("/q", 1)) == 1
    neighbour = Neighbour(outbox_path, hold_s=120)  # held until killed
    try:
        neighbour.lock()
        agent = threading.Thread(target=run_one_tool, args=(pipe,))
        agent.start()  # its insert waits at most 0.25 s for the lock
        time.sleep(0.1)  # the insert is waiting
        started = time.monotonic()
        deliverer.flush(1.0)
        took = time.monotonic() - started
        agent.join(30)
    finally:
        neighbour.proc.kill()
        neighbour.proc.wait(10)
    assert took < 2.0, took
    assert len(server.wait_for("/q", 2)) == 2  # the waiting enqueue fell back to fetch


# The bound an enqueue waits for the outbox (0.25 s), with room for a loaded machine; SQLite's
# own busy timeout, which it waited before, is 5 s.
BOUND_S = 1.5


def exclusive_neighbour(path: Path) -> subprocess.Popen[str]:
    """A process holding ``BEGIN EXCLUSIVE`` on ``path`` until killed (created if missing)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", NEIGHBOUR.replace("IMMEDIATE", "EXCLUSIVE"), str(path), "120"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "locked"
    return proc


def timed(pipe: TestPipeline) -> float:
    started = time.monotonic()
    run_one_tool(pipe)
    return time.monotonic() - started


@pytest.mark.parametrize("outbox", ["in use", "first opened"])
def test_an_enqueue_under_a_neighbours_exclusive_lock_waits_a_short_bound_then_falls_back(
    pipe: TestPipeline,
    deliverer: WebhookDeliverer,
    server: WebhookServer,
    outbox_path: Path,
    outbox: str,
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip
    before = 0
    if outbox == "in use":
        run_one_tool(pipe)  # stored and delivered through the outbox
        before = len(server.wait_for("/q", 1))
    neighbour = exclusive_neighbour(outbox_path)
    try:
        with capture_logs() as logs:
            took = timed(pipe)  # on this (the agent's) thread
            got = server.wait_for("/q", before + 1)  # delivered while still locked
    finally:
        neighbour.kill()
        neighbour.wait(10)
    assert took < BOUND_S, took  # was 5.0 s
    assert len(got) == before + 1
    said = [e for e in logs if e["event"] == "outbox unavailable, falling back to fetch"]
    assert len(said) == 1
    assert "locked" in said[0]["error"] or "busy" in said[0]["error"]


def test_sessions_enqueuing_at_once_under_the_lock_do_not_wait_one_behind_another(
    pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer, outbox_path: Path
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip
    run_one_tool(pipe)
    assert len(server.wait_for("/q", 1)) == 1
    neighbour = exclusive_neighbour(outbox_path)
    took: list[float] = []
    try:
        sessions = [threading.Thread(target=lambda: took.append(timed(pipe))) for _ in range(4)]
        for session in sessions:
            session.start()
        for session in sessions:
            session.join(60)
        got = server.wait_for("/q", 5)
    finally:
        neighbour.kill()
        neighbour.wait(10)
    assert len(took) == 4
    assert max(took) < BOUND_S, took  # was 5, 10, 15 and 20 s, one behind the other
    assert len(got) == 5  # each delivered, from memory


def stalled_line(deliverer: WebhookDeliverer, outbox_path: Path) -> bool:
    """Whether the deliverer's reports still say the outbox file's deliveries wait."""
    return any(r.destination == str(outbox_path) for r in deliverer.reports())


def test_a_long_lock_costs_later_enqueues_no_wait_and_the_outbox_serves_again_after(
    pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer, outbox_path: Path
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip
    run_one_tool(pipe)
    assert len(server.wait_for("/q", 1)) == 1
    neighbour = exclusive_neighbour(outbox_path)
    try:
        took = [timed(pipe) for _ in range(6)]
        assert len(server.wait_for("/q", 7)) == 7
    finally:
        neighbour.kill()
        neighbour.wait(10)
    assert sum(took) < 2 * BOUND_S, took  # was 6 x 5.0 s
    # until the pump found the store available again: the outbox's own line leaves the
    # reports (the fallback's line for the URL stays, so not until the reports are empty)
    waiting = time.monotonic() + 20
    while stalled_line(deliverer, outbox_path) and time.monotonic() < waiting:
        time.sleep(0.05)
    assert not stalled_line(deliverer, outbox_path)
    with capture_logs() as logs:
        run_one_tool(pipe)  # stored in the outbox again: no fallback
        assert len(server.wait_for("/q", 8)) == 8
    assert not [e for e in logs if e["event"] == "outbox unavailable, falling back to fetch"]


def test_an_outbox_locked_before_its_first_open_costs_later_enqueues_no_wait(
    pipe: TestPipeline, deliverer: WebhookDeliverer, server: WebhookServer, outbox_path: Path
) -> None:
    server.routes["/q"] = Reply(204)
    pipe.register(
        {"id": "q", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue"}}
    )  # fmt: skip
    neighbour = exclusive_neighbour(outbox_path)  # before this process ever opened it
    try:
        took = [timed(pipe) for _ in range(10)]
        assert len(server.wait_for("/q", 10)) == 10  # each delivered directly
    finally:
        neighbour.kill()
        neighbour.wait(10)
    assert sum(took) < BOUND_S, took  # was 0.26 s each: every enqueue tried to open it again
    stored = False
    giving_up = time.monotonic() + 20
    while not stored and time.monotonic() < giving_up:  # opened again 2 s after the first try
        with capture_logs() as logs:
            run_one_tool(pipe)
        stored = not [e for e in logs if e["event"] == "outbox unavailable, falling back to fetch"]
        time.sleep(0.2)
    assert stored
