"""Two real ``otelhooks serve`` processes on one PostgreSQL: one log, one order, any instance."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet._fleet import all_records, events, start_instance
from tests.reliability._serve_proc import ServeProc, post_traces, tool_spans_json


@pytest.fixture
def fleet(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServeProc, ServeProc]]:
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


def test_spans_received_by_one_instance_are_listed_by_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    assert post_traces(a.url, tool_spans_json(20)).status_code == 200
    records = all_records(b.url)
    assert [r["seq"] for r in records] == list(range(1, 21))
    assert {r["span_id"] for r in records} == {f"{n + 1:016x}" for n in range(20)}


def test_a_since_cursor_from_one_instance_is_valid_on_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    assert post_traces(a.url, tool_spans_json(10)).status_code == 200
    first = events(a.url, mode="drain", since=0, limit=6).json()
    assert post_traces(b.url, tool_spans_json(10, start=10)).status_code == 200
    rest = events(b.url, mode="drain", since=first["next_since"], limit=100).json()
    assert rest["epoch"] == first["epoch"]
    seqs = [r["seq"] for r in first["events"] + rest["events"]]
    assert seqs == list(range(1, 21))
    assert rest["dropped_window"] == 0


def test_a_long_poll_on_one_instance_is_woken_by_a_write_through_the_other(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    answer: dict[str, object] = {}

    def poll() -> None:
        started = time.monotonic()
        answer["body"] = events(b.url, mode="wait", since=0, timeout=20).json()
        answer["at"] = time.monotonic() - started

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(1.0)  # the long-poll is waiting (it holds no record yet)
    posted = time.monotonic()
    assert post_traces(a.url, tool_spans_json(1)).status_code == 200
    acked = time.monotonic() - posted
    waiter.join(25)
    body = answer["body"]
    assert isinstance(body, dict)
    assert [r["seq"] for r in body["events"]] == [1]
    assert not body["timed_out"]
    woken_after_post = float(answer["at"]) - 1.0  # type: ignore[arg-type]
    assert woken_after_post < acked + 1.0, (woken_after_post, acked)


def test_version_reports_the_shared_head_on_every_instance(
    fleet: tuple[ServeProc, ServeProc],
) -> None:
    a, b = fleet
    assert post_traces(a.url, tool_spans_json(7)).status_code == 200
    assert post_traces(b.url, tool_spans_json(5, start=7)).status_code == 200
    assert events(a.url, mode="version").json()["head"] == 12
    assert events(b.url, mode="version").json()["head"] == 12
