"""The event log in PostgreSQL, through the store API: two stores on one database stand for two
``serve`` instances (each its own pool and ``LISTEN`` connection)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from otelhooks import AgentEventsConfig, EventEntry
from otelhooks._store._open import open_store
from otelhooks._store._pg_eventlog import PostgresEventLog
from otelhooks._store._postgres import PostgresStore
from tests._postgres import PostgresCluster


def _entry(n: int, *, trace: bool = True) -> EventEntry:
    ids = (f"{n + 1:032x}", f"{n + 1:016x}") if trace else (None, None)
    return EventEntry(1_700_000_000_000 + n, "bot", "s", None, "calc/add",
                      "after_tool_result", False, True, f"{n:016x}", "ok", *ids)  # fmt: skip


@pytest.fixture
def instances(pg_url: str) -> Iterator[tuple[PostgresEventLog, PostgresEventLog]]:
    stores = [open_store(pg_url), open_store(pg_url)]
    config = AgentEventsConfig(name="fleet", capacity=100_000)
    logs = [store.event_log(config) for store in stores]
    try:
        assert all(isinstance(log, PostgresEventLog) for log in logs)
        yield logs[0], logs[1]  # type: ignore[misc]
    finally:
        for log in logs:
            log.close()
        for store in stores:
            store.close()


def test_two_instances_append_into_one_gapless_seq_order(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = instances
    per = 500

    def fill(log: PostgresEventLog, first: int) -> None:
        for n in range(first, first + per):
            assert log.append(_entry(n))

    threads = [threading.Thread(target=fill, args=(log, i * per)) for i, log in enumerate((a, b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert a.flush(30)
    assert b.flush(30)
    batch = a.read(0, 10_000)
    assert [r.seq for r in batch.records] == list(range(1, 2 * per + 1))
    assert sorted(r.ts - 1_700_000_000_000 for r in batch.records) == list(range(2 * per))
    assert b.read(0, 10_000).records == batch.records
    assert a.epoch == b.epoch == batch.epoch


def test_a_cursor_from_one_instance_continues_on_the_other(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = instances
    for n in range(10):
        a.append(_entry(n))
    assert a.flush(10)
    first = a.read(0, 4)
    for n in range(10, 15):
        b.append(_entry(n))
    assert b.flush(10)
    rest = b.read(first.next_since, 100)
    assert [r.seq for r in first.records + rest.records] == list(range(1, 16))
    assert rest.dropped_window == 0
    assert not rest.has_more


def test_a_write_through_one_instance_wakes_the_other_within_a_second(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    import asyncio
    import time

    a, b = instances
    store = b.store
    assert isinstance(store, PostgresStore)
    assert store.listener().connected.wait(10)

    async def wait_for_wake() -> float:
        woken = b.signal.arm()
        started = time.monotonic()
        threading.Thread(target=lambda: (a.append(_entry(1)), a.flush(5))).start()
        await asyncio.wait_for(woken.wait(), 5)
        return time.monotonic() - started

    elapsed = asyncio.run(wait_for_wake())
    assert elapsed < 1.0
    assert [r.seq for r in b.read(0, 10).records] == [1]


def test_a_retried_record_of_a_span_is_stored_once(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = instances
    for n in range(5):
        a.append(_entry(n))
    assert a.flush(10)
    for n in range(3, 8):  # 3 and 4 again, as a retry on the other instance would send them
        b.append(_entry(n))
    assert b.flush(10)
    records = a.read(0, 100).records
    assert [r.seq for r in records] == list(range(1, 9))
    assert [r.span_id for r in records] == [f"{n + 1:016x}" for n in range(8)]
    assert b.duplicates_skipped == 2


def test_records_without_a_span_are_never_merged(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, _ = instances
    for _ in range(3):
        a.append(_entry(0, trace=False))
    assert a.flush(10)
    assert [r.seq for r in a.read(0, 10).records] == [1, 2, 3]


def test_retention_deletes_the_oldest_and_reports_the_gap(pg_url: str) -> None:
    store = open_store(pg_url)
    log = store.event_log(AgentEventsConfig(name="short", durable=True, path="x", retention=5))
    try:
        for n in range(12):
            log.append(_entry(n))
            assert log.flush(10)
        batch = log.read(0, 100)
        assert [r.seq for r in batch.records] == list(range(8, 13))
        assert batch.oldest == 8
        assert batch.dropped_window == 7
        newest = log.read(0, 2, newest=True)
        assert [r.seq for r in newest.records] == [11, 12]
    finally:
        log.close()
        store.close()


def test_a_record_twice_in_one_batch_is_stored_once(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, _ = instances
    for n in (0, 1, 0, 2, 1):
        a.append(_entry(n))
    assert a.flush(10)
    records = a.read(0, 100).records
    assert [(r.seq, r.span_id) for r in records] == [
        (1, f"{1:016x}"),
        (2, f"{2:016x}"),
        (3, f"{3:016x}"),
    ]
    assert a.duplicates_skipped == 2


def test_a_batch_larger_than_the_retention_keeps_its_newest_records(pg_url: str) -> None:
    store = open_store(pg_url)
    log = store.event_log(AgentEventsConfig(name="tiny", durable=True, path="x", retention=3))
    try:
        log.append(_entry(100))
        assert log.flush(10)
        for n in range(10):  # one batch: written together
            log.append(_entry(n))
        assert log.flush(10)
        batch = log.read(0, 100)
        assert [r.seq for r in batch.records] == [9, 10, 11]
        assert [r.span_id for r in batch.records] == [f"{n + 1:016x}" for n in (7, 8, 9)]
        assert (batch.oldest, batch.dropped_window) == (9, 8)
        assert log.stats().head == 11
    finally:
        log.close()
        store.close()


def test_the_epoch_survives_reopening_the_log(pg_url: str) -> None:
    config = AgentEventsConfig(name="kept")
    first = open_store(pg_url)
    log = first.event_log(config)
    log.append(_entry(0))
    assert log.flush(10)
    epoch = log.epoch
    log.close()
    first.close()
    second = open_store(pg_url)
    again = second.event_log(config)
    try:
        assert again.epoch == epoch
        assert [r.seq for r in again.read(0, 10).records] == [1]
    finally:
        again.close()
        second.close()


def test_after_a_restart_reads_and_keyed_writes_run_again_on_a_fresh_connection(
    pg_url: str, cluster: PostgresCluster
) -> None:
    # Each is one statement without BEGIN (whose failure told the transaction its pooled
    # connection was dead): one that may run twice is run again on a fresh connection, once.
    store = open_store(pg_url)
    try:
        log = store.event_log(AgentEventsConfig(name="restart", capacity=1_000))
        assert log.append(_entry(0))
        assert log.flush(30)
        cluster.stop()
        cluster.start()
        assert [r.seq for r in log.read(0, 10).records] == [1]  # the pooled connection was dead
        cluster.stop()
        cluster.start()
        assert log.append(_entry(1))  # its dedupe key makes it safe to run twice
        assert log.flush(30)
        assert log.stats().head == 2
        assert log.lost == 0
        log.close()
    finally:
        store.close()


def test_a_record_holding_a_nul_byte_is_stored_with_the_others_of_its_batch(
    instances: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    """PostgreSQL text cannot hold NUL: such a record (a client's session id) is stored with
    U+FFFD, as a lone surrogate is. It failed its whole batch, other sessions' records too."""
    a, _ = instances
    entries = [
        _entry(0),
        _entry(1)._replace(session="bad\x00s", tool="calc\x00/add"),
        _entry(2)._replace(session="text \\u0000 stays"),
    ]
    for entry in entries:
        assert a.append(entry)
    assert a.flush(30)
    records = a.read(0, 100).records
    assert [(r.session, r.tool) for r in records] == [
        ("s", "calc/add"),
        ("bad\ufffds", "calc\ufffd/add"),
        ("text \\u0000 stays", "calc/add"),
    ]
    assert a.commit_failures == 0


def test_records_a_commit_fails_to_store_are_reported_lost(pg_url: str) -> None:
    store = open_store(pg_url)
    log = store.event_log(AgentEventsConfig(name="refused", capacity=100))
    assert isinstance(store, PostgresStore)
    lost: list[int] = []
    log.count_lost_with(lost.append)
    # the database refuses every record (as a full disk or a revoked grant would)
    store.statement(
        b"CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; "
        b"END $$ LANGUAGE plpgsql; CREATE TRIGGER refuse BEFORE INSERT ON otelhooks_events "
        b"FOR EACH ROW EXECUTE FUNCTION refuse()"
    )
    try:
        for n in range(3):
            log.append(_entry(n))
        assert log.flush(10)
        assert log.commit_failures == 3
        # Before, they were in the log's stats and a log line only: never in otelhooks.dropped.
        assert sum(lost) == 3
    finally:
        store.statement(b"DROP TRIGGER refuse ON otelhooks_events; DROP FUNCTION refuse()")
        log.close()
        store.close()
