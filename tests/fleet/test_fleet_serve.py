"""Two real ``otelhooks serve`` processes on one PostgreSQL: one log, one order, any instance.

The module's tests share one pair (starting two instances is most of each test's time): each
reads the log's head first and posts spans of ids no other test posts (the store skips a record
it holds already), so what it checks is what it wrote, whichever test ran before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests._postgres import PostgresCluster, new_database
from tests.fleet._fleet import all_records, events, start_instance
from tests.reliability._serve_proc import ServeProc, post_traces, tool_spans_json


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory, cluster: PostgresCluster
) -> Iterator[tuple[ServeProc, ServeProc]]:
    tmp_path = tmp_path_factory.mktemp("fleet")
    pg_url = new_database(cluster)
    a = start_instance(tmp_path, pg_url)
    try:
        b = start_instance(tmp_path, pg_url)
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def _head(url: str) -> int:
    return int(events(url, mode="version").json()["head"])


def test_spans_received_by_one_instance_are_listed_by_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    head = _head(a.url)
    assert post_traces(a.url, tool_spans_json(20, start=1000)).status_code == 200
    records = [r for r in all_records(b.url) if r["seq"] > head]
    assert [r["seq"] for r in records] == list(range(head + 1, head + 21))
    assert {r["span_id"] for r in records} == {f"{n + 1:016x}" for n in range(1000, 1020)}


def test_a_since_cursor_from_one_instance_is_valid_on_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    head = _head(a.url)
    assert post_traces(a.url, tool_spans_json(10, start=2000)).status_code == 200
    first = events(a.url, mode="drain", since=head, limit=6).json()
    assert post_traces(b.url, tool_spans_json(10, start=2010)).status_code == 200
    rest = events(b.url, mode="drain", since=first["next_since"], limit=100).json()
    assert rest["epoch"] == first["epoch"]
    seqs = [r["seq"] for r in first["events"] + rest["events"]]
    assert seqs == list(range(head + 1, head + 21))
    assert rest["dropped_window"] == 0


def test_a_long_poll_on_one_instance_is_woken_by_a_write_through_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    head = _head(b.url)
    answer: dict[str, object] = {}

    def poll() -> None:
        started = time.monotonic()
        answer["body"] = events(b.url, mode="wait", since=head, timeout=20).json()
        answer["at"] = time.monotonic() - started

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(1.0)  # the long-poll is waiting (it holds no record yet)
    posted = time.monotonic()
    assert post_traces(a.url, tool_spans_json(1, start=3000)).status_code == 200
    acked = time.monotonic() - posted
    waiter.join(25)
    body = answer["body"]
    assert isinstance(body, dict)
    assert [r["seq"] for r in body["events"]] == [head + 1]
    assert not body["timed_out"]
    woken_after_post = float(answer["at"]) - 1.0  # type: ignore[arg-type]
    assert woken_after_post < acked + 1.0, (woken_after_post, acked)


def test_version_reports_the_shared_head_on_every_instance(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    head = _head(a.url)
    assert post_traces(a.url, tool_spans_json(7, start=4000)).status_code == 200
    assert post_traces(b.url, tool_spans_json(5, start=4007)).status_code == 200
    assert _head(a.url) == head + 12
    assert _head(b.url) == head + 12
