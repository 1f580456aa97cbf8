"""The event log stores: the in-memory ring and the durable SQLite log, read by cursor."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from otelhooks import EventEntry, RingEventLog, SqliteEventLog


def entry(detail: str = "ok", *, tool: str | None = "calc/add", ts: int = 1) -> EventEntry:
    return EventEntry(
        ts, "bot", "s1", "u1", tool, "after_tool_result", False, True, "00ff", detail, None, None
    )


def fill(log: RingEventLog | SqliteEventLog, count: int) -> None:
    for i in range(1, count + 1):
        assert log.append(entry(f"r{i}"))
    assert log.flush()


# -- the ring --------------------------------------------------------------------------------


def test_ring_numbers_records_from_one_and_reads_after_the_cursor() -> None:
    log = RingEventLog(100)
    fill(log, 5)
    batch = log.read(2, 10)
    assert [r.seq for r in batch.records] == [3, 4, 5]
    assert [r.detail for r in batch.records] == ["r3", "r4", "r5"]
    assert (batch.next_since, batch.head, batch.oldest, batch.has_more) == (5, 5, 1, False)
    assert batch.dropped_window == 0


def test_ring_limit_leaves_has_more() -> None:
    log = RingEventLog(100)
    fill(log, 5)
    batch = log.read(0, 2)
    assert [r.seq for r in batch.records] == [1, 2]
    assert batch.has_more
    assert batch.next_since == 2


def test_ring_overflow_evicts_the_oldest_and_reports_the_dropped_window() -> None:
    log = RingEventLog(10)
    fill(log, 25)
    from_start = log.read(0, 100)
    assert [r.seq for r in from_start.records] == list(range(16, 26))
    assert from_start.dropped_window == 15
    assert from_start.oldest == 16
    assert log.read(12, 100).dropped_window == 3
    caught_up = log.read(20, 100)
    assert [r.seq for r in caught_up.records] == [21, 22, 23, 24, 25]
    assert caught_up.dropped_window == 0


def test_ring_overflow_keeps_the_newest_records_intact() -> None:
    log = RingEventLog(3)
    fill(log, 7)
    assert [r.detail for r in log.read(0, 10).records] == ["r5", "r6", "r7"]


def test_newest_read_returns_the_tail_oldest_first() -> None:
    log = RingEventLog(100)
    fill(log, 10)
    batch = log.read(0, 3, newest=True)
    assert [r.seq for r in batch.records] == [8, 9, 10]
    assert batch.has_more  # 1..7 are after the cursor and were not returned


def test_cursor_past_the_head_reads_nothing_and_drops_nothing() -> None:
    log = RingEventLog(10)
    fill(log, 3)
    batch = log.read(50, 10)
    assert batch.records == []
    assert (batch.next_since, batch.dropped_window, batch.has_more) == (50, 0, False)


def test_each_ring_has_its_own_epoch() -> None:
    assert RingEventLog().epoch != RingEventLog().epoch


def test_concurrent_ring_appends_get_distinct_consecutive_seqs() -> None:
    log = RingEventLog(10_000)

    def produce(n: int) -> None:
        for i in range(1000):
            log.append(entry(f"{n}:{i}"))

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = log.read(0, 10_000).records
    assert [r.seq for r in records] == list(range(1, 4001))
    assert len({r.detail for r in records}) == 4000


# -- the durable log ---------------------------------------------------------------------------


def test_durable_records_survive_reopening_with_the_same_epoch(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    first = SqliteEventLog(path)
    fill(first, 5)
    epoch = first.epoch
    first.close()
    second = SqliteEventLog(path)
    try:
        assert second.epoch == epoch
        assert [r.detail for r in second.read(0, 10).records] == ["r1", "r2", "r3", "r4", "r5"]
        second.append(entry("r6"))
        assert second.flush()
        assert [r.seq for r in second.read(5, 10).records] == [6]
    finally:
        second.close()


def test_durable_log_keeps_numbering_even_if_rows_are_gone(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    log = SqliteEventLog(path)
    fill(log, 3)
    log.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM events")
    log = SqliteEventLog(path)
    try:
        log.append(entry("after"))
        assert log.flush()
        assert [r.seq for r in log.read(0, 10).records] == [4]
    finally:
        log.close()


def test_durable_retention_deletes_the_oldest_and_reports_the_dropped_window(
    tmp_path: Path,
) -> None:
    log = SqliteEventLog(tmp_path / "events.sqlite3", retention=10)
    try:
        fill(log, 25)
        batch = log.read(0, 100)
        assert [r.seq for r in batch.records] == list(range(16, 26))
        assert batch.dropped_window == 15
        assert log.stats().oldest == 16
    finally:
        log.close()


def test_durable_log_round_trips_every_field(tmp_path: Path) -> None:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    original = EventEntry(
        123,
        "bot",
        None,
        "u",
        None,
        "after_loop",
        True,
        False,
        None,
        "max_steps",
        "ab" * 16,
        "c" * 16,
    )
    try:
        log.append(original)
        assert log.flush()
        (record,) = log.read(0, 1).records
        assert tuple(record)[1:] == tuple(original)
    finally:
        log.close()


def test_durable_append_does_not_wait_for_the_disk(tmp_path: Path) -> None:
    # The writer commits every 30 s or per 1,024 entries: appends that return with nothing
    # committed yet did not wait for the disk, however long the machine took to run them.
    log = SqliteEventLog(tmp_path / "events.sqlite3", commit_interval_s=30)
    try:
        for i in range(1000):
            log.append(entry(f"r{i}"))
        assert log.stats().head == 0  # all queued, none committed (none readable yet)
        assert log.flush()
        assert log.stats().head == 1000
    finally:
        log.close()


def test_durable_log_drops_and_counts_when_the_writer_queue_is_full(tmp_path: Path) -> None:
    log = SqliteEventLog(
        tmp_path / "events.sqlite3", max_queue_size=4, max_batch_size=4, commit_interval_s=5
    )
    try:
        accepted = [log.append(entry(f"r{i}")) for i in range(6)]
        assert accepted.count(False) >= 1
        assert log.flush()
        stats = log.stats()
        assert stats.dropped == accepted.count(False)
        assert stats.head == accepted.count(True)  # the numbering has no gap
    finally:
        log.close()


def test_closing_the_durable_log_commits_what_is_queued(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    log = SqliteEventLog(path, commit_interval_s=5)
    for i in range(10):
        log.append(entry(f"r{i}"))
    log.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (10,)


def test_reading_a_closed_durable_log_raises(tmp_path: Path) -> None:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    log.close()
    with pytest.raises(RuntimeError, match="closed"):
        log.read(0, 1)
