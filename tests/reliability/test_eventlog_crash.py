"""The durable event log survives ``kill -9`` between an append and a consumer's read.

A real agent process fills a durable ``agent_events`` log and serves it; a consumer reads part
of it over ``/v1/events``; the agent appends more (committed) and is killed with SIGKILL before
the consumer reads those. The log is opened again by another process (here: the test's), and
the consumer resumes from its cursor: every ``seq`` arrives exactly once, none is reused, and
what was read before the crash is what the log holds after it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from otelhooks import EventEntry, EventLogClient, EventLogServer, EventRecord, SqliteEventLog

TOKEN = "crash-test-token"
BEFORE, AFTER = 30, 20  # records read before the crash, and appended just before it

AGENT = textwrap.dedent(
    """
    import sys, time
    from opentelemetry.sdk.trace import TracerProvider
    from otelhooks import AgentEvents, AgentEventsConfig, AgentTracer, EventLogServer
    from otelhooks import HookSpanProcessor

    path, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    events = AgentEvents(AgentEventsConfig(name="crash", durable=True, path=path))
    provider = TracerProvider(shutdown_on_exit=False)
    hooks = HookSpanProcessor()
    provider.add_span_processor(hooks)
    events.install(hooks)
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks)

    def run(first, count):
        with tracer.operation("crash-bot", session_id="s") as op, op.step() as step:
            for i in range(first, first + count):
                step.run_tool("shop", "order_create", {"i": i}, lambda i: "ok")
        assert hooks.force_flush(10_000) and events.log.flush()  # observed and committed

    run(0, before)
    server = EventLogServer([events.log], token=sys.argv[4]).start()
    print(server.url, flush=True)
    sys.stdin.readline()  # the consumer has read
    run(before, after)
    print("appended", flush=True)
    time.sleep(60)  # SIGKILL arrives here: no close, no shutdown
    """
)


@dataclass(frozen=True)
class Crashed:
    """The log file after the crash, and the consumer's cursor, epoch and records from before."""

    path: Path
    cursor: int
    epoch: str | None
    read_before: list[EventRecord]


@pytest.fixture
def crashed(tmp_path: Path) -> Crashed:
    path = tmp_path / "events.sqlite3"
    proc = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(path), str(BEFORE), str(AFTER), TOKEN],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
        consumer = EventLogClient(url, token=TOKEN, limit=1000)
        read_before = consumer.drain()
        consumer.close()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "appended"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Crashed(path, consumer.cursor, consumer.epoch, read_before)


def serve(log: SqliteEventLog) -> EventLogServer:
    return EventLogServer([log], token=TOKEN).start()


def resume(crashed: Crashed, server: EventLogServer) -> list[EventRecord]:
    resumed = EventLogClient(server.url, token=TOKEN, since=crashed.cursor, epoch=crashed.epoch)
    try:
        return resumed.drain()
    finally:
        resumed.close()


def test_after_the_crash_the_consumer_gets_every_later_seq_exactly_once(crashed: Crashed) -> None:
    assert [r.seq for r in crashed.read_before] == list(range(1, BEFORE + 1))
    log = SqliteEventLog(crashed.path)
    server = serve(log)
    try:
        after = resume(crashed, server)
    finally:
        server.stop()
        log.close()
    assert [r.seq for r in after] == list(range(BEFORE + 1, BEFORE + AFTER + 1))


def test_what_was_read_before_the_crash_is_unchanged_after_it(crashed: Crashed) -> None:
    log = SqliteEventLog(crashed.path)
    server = serve(log)
    try:
        with EventLogClient(server.url, token=TOKEN, limit=1000) as client:
            everything = client.drain()
    finally:
        server.stop()
        log.close()
    assert everything[:BEFORE] == crashed.read_before


def test_numbering_goes_on_after_the_crash_without_reusing_a_seq(crashed: Crashed) -> None:
    log = SqliteEventLog(crashed.path)
    log.append(
        EventEntry(
            0, "crash-bot", "s", None, "shop/order_create", "after_tool_result", False, True,
            "", "after restart", None, None,
        )
    )  # fmt: skip
    assert log.flush()
    server = serve(log)
    try:
        after = resume(crashed, server)
    finally:
        server.stop()
        log.close()
    assert [r.seq for r in after][-1] == BEFORE + AFTER + 1
    assert after[-1].detail == "after restart"
    assert len({r.seq for r in after}) == len(after) == AFTER + 1
