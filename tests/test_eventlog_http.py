"""``GET /v1/events`` on a real uvicorn server on 127.0.0.1, read with httpx and the client."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import (
    EventEntry,
    EventLog,
    EventLogClient,
    EventLogError,
    EventLogServer,
    EventRecord,
    RingEventLog,
    SqliteEventLog,
)

TOKEN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

StartServer = Callable[..., EventLogServer]


def entry(detail: str = "ok") -> EventEntry:
    return EventEntry(
        1, "bot", None, None, "calc/add", "after_tool_result", False, True, "00", detail, None, None
    )


@pytest.fixture
def start_server() -> Iterator[StartServer]:
    """Start servers on free ports; every one is stopped when the test ends."""
    started: list[EventLogServer] = []

    def start(*logs: EventLog, **options: Any) -> EventLogServer:
        server = EventLogServer(list(logs), token=TOKEN, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def shared() -> Iterator[EventLogServer]:
    """One server for the tests that only read (auth, parameters, routes): one record in it."""
    ring = RingEventLog()
    ring.append(entry("secret-detail"))
    server = EventLogServer([ring], token=TOKEN).start()
    yield server
    server.stop()


@pytest.fixture(params=["ring", "durable"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    made: EventLog = (
        RingEventLog(100_000) if request.param == "ring" else SqliteEventLog(tmp_path / "e.db")
    )
    yield made
    made.close()


def get(server: EventLogServer, query: str = "", **kwargs: Any) -> httpx.Response:
    headers = kwargs.pop("headers", AUTH)
    return httpx.get(f"{server.url}/v1/events?{query}", headers=headers, timeout=30, **kwargs)


# -- reading -------------------------------------------------------------------------------------


def test_concurrent_producers_and_one_consumer_see_every_seq_once_in_order(
    start_server: StartServer, log: EventLog
) -> None:
    server = start_server(log)
    producers, per_producer = 4, 300
    total = producers * per_producer
    seen: list[EventRecord] = []
    stop = threading.Event()

    def consume() -> None:
        with EventLogClient(server.url, token=TOKEN, limit=50, wait_timeout=5) as client:
            for record in client.follow(stop=stop):
                seen.append(record)
                if len(seen) == total:
                    return

    def produce(n: int) -> None:
        for i in range(per_producer):
            log.append(entry(f"{n}:{i}"))
            if i % 50 == 0:
                time.sleep(0.001)  # let the consumer catch up now and then: drain, then wait

    consumer = threading.Thread(target=consume)
    consumer.start()
    threads = [threading.Thread(target=produce, args=(n,)) for n in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    consumer.join(20)
    stop.set()
    assert not consumer.is_alive(), f"consumer saw {len(seen)} of {total}"
    assert [r.seq for r in seen] == list(range(1, total + 1))
    details = [r.detail for r in seen]
    assert sorted(details) == sorted(f"{n}:{i}" for n in range(producers) for i in range(300))
    for n in range(producers):
        mine = [int(d.split(":")[1]) for d in details if d.startswith(f"{n}:")]
        assert mine == sorted(mine)  # each producer's records in the order it appended them


def test_ring_overflow_over_http_reports_the_dropped_window(start_server: StartServer) -> None:
    ring = RingEventLog(10)
    server = start_server(ring)
    for i in range(25):
        ring.append(entry(f"r{i}"))
    body = get(server, "since=0&limit=100").json()
    assert [e["seq"] for e in body["events"]] == list(range(16, 26))
    assert (body["dropped_window"], body["oldest"], body["head"]) == (15, 16, 25)
    assert get(server, "since=12").json()["dropped_window"] == 3
    with EventLogClient(server.url, token=TOKEN) as client:
        assert len(client.drain()) == 10
        assert client.dropped == 15


def test_has_more_pages_through_the_log(start_server: StartServer) -> None:
    ring = RingEventLog(1000)
    server = start_server(ring)
    for i in range(25):
        ring.append(entry(f"r{i}"))
    first = get(server, "limit=10").json()
    assert (first["has_more"], first["next_since"]) == (True, 10)
    last = get(server, "since=20&limit=10").json()
    assert (last["has_more"], [e["seq"] for e in last["events"]]) == (False, [21, 22, 23, 24, 25])


def test_a_record_has_exactly_the_documented_fields(start_server: StartServer) -> None:
    ring = RingEventLog()
    server = start_server(ring)
    ring.append(entry())
    (record,) = get(server).json()["events"]
    assert list(record) == [
        "seq", "ts", "agent", "session", "user_id", "tool", "kind", "mutating", "success",
        "args_fp", "detail", "trace_id", "span_id",
    ]  # fmt: skip


def test_events_mode_returns_the_newest_records(start_server: StartServer) -> None:
    ring = RingEventLog()
    server = start_server(ring)
    for i in range(10):
        ring.append(entry(f"r{i}"))
    body = get(server, "mode=events&limit=3").json()
    assert [e["seq"] for e in body["events"]] == [8, 9, 10]
    assert body["has_more"]


def test_version_mode_returns_the_head_without_records(start_server: StartServer) -> None:
    ring = RingEventLog(5)
    server = start_server(ring)
    for i in range(8):
        ring.append(entry(f"r{i}"))
    body = get(server, "mode=version&since=1").json()
    assert body["events"] == []
    assert (body["version"], body["head"], body["oldest"], body["epoch"]) == (8, 8, 4, ring.epoch)
    assert (body["has_more"], body["dropped_window"], body["durable"]) == (True, 2, False)


# -- long-poll -----------------------------------------------------------------------------------


def test_a_long_poll_is_woken_by_a_new_record(start_server: StartServer, log: EventLog) -> None:
    server = start_server(log)
    appended_at: list[float] = []

    def append_later() -> None:
        time.sleep(0.3)
        appended_at.append(time.perf_counter())
        log.append(entry("late"))

    threading.Thread(target=append_later).start()
    started = time.perf_counter()
    body = get(server, "mode=wait&since=0&timeout=10").json()
    answered = time.perf_counter()
    assert [e["detail"] for e in body["events"]] == ["late"]
    assert not body["timed_out"]
    wake_latency = answered - appended_at[0]
    assert wake_latency < 0.5, f"woke {wake_latency * 1000:.1f} ms after the append"
    assert answered - started < 2  # nowhere near the 10 s timeout


def test_a_long_poll_with_records_waiting_answers_at_once(start_server: StartServer) -> None:
    ring = RingEventLog()
    server = start_server(ring)
    ring.append(entry())
    started = time.perf_counter()
    body = get(server, "mode=wait&since=0&timeout=10").json()
    assert len(body["events"]) == 1
    assert time.perf_counter() - started < 5  # at once: not the poll's 10 s timeout


def test_a_long_poll_times_out_empty(start_server: StartServer) -> None:
    server = start_server(RingEventLog())
    started = time.perf_counter()
    body = get(server, "mode=wait&timeout=0.3").json()
    elapsed = time.perf_counter() - started
    assert (body["events"], body["timed_out"]) == ([], True)
    assert 0.3 <= elapsed < 2


def test_long_polls_beyond_the_bound_get_503(start_server: StartServer) -> None:
    ring = RingEventLog()
    server = start_server(ring, max_waiters=2)
    answers: list[httpx.Response] = []
    pollers = [
        threading.Thread(target=lambda: answers.append(get(server, "mode=wait&timeout=10")))
        for _ in range(2)
    ]
    for p in pollers:
        p.start()
    deadline = time.monotonic() + 30
    while server.app.waiting < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.app.waiting == 2
    third = get(server, "mode=wait&timeout=10")
    assert third.status_code == 503
    assert third.headers["retry-after"] == "1"
    assert "events" not in third.json()
    ring.append(entry("wake"))
    for p in pollers:
        p.join(5)
    assert [a.status_code for a in answers] == [200, 200]
    assert all(a.json()["events"][0]["detail"] == "wake" for a in answers)
    assert get(server, "mode=wait&since=1&timeout=0").status_code == 200  # slots are free again


def test_a_client_that_goes_away_frees_its_long_poll_slot(start_server: StartServer) -> None:
    server = start_server(RingEventLog())
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(
            f"{server.url}/v1/events?mode=wait&timeout=30",
            headers=AUTH,
            timeout=httpx.Timeout(5, read=0.3),
        )
    deadline = time.monotonic() + 30
    while server.app.waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.app.waiting == 0


def test_stopping_the_server_ends_waiting_long_polls(start_server: StartServer) -> None:
    server = start_server(RingEventLog())
    answers: list[httpx.Response] = []
    poller = threading.Thread(target=lambda: answers.append(get(server, "mode=wait&timeout=30")))
    poller.start()
    while server.app.waiting == 0:
        time.sleep(0.01)
    started = time.perf_counter()
    server.stop()
    poller.join(5)
    assert time.perf_counter() - started < 3
    assert answers
    assert answers[0].status_code == 200
    assert answers[0].json()["events"] == []


# -- durable mode and restarts -------------------------------------------------------------------


def test_durable_log_survives_a_server_restart_between_two_reads(
    start_server: StartServer, tmp_path: Path
) -> None:
    path = tmp_path / "events.sqlite3"
    first_log = SqliteEventLog(path)
    for i in range(1, 51):
        first_log.append(entry(f"r{i}"))
    assert first_log.flush()
    first = start_server(first_log, owned=[first_log])
    client = EventLogClient(first.url, token=TOKEN, limit=20)
    page = client.fetch("drain")  # the consumer reads 20 records, then the server goes away
    assert [r.seq for r in page.records] == list(range(1, 21))
    client.cursor, client.epoch = page.next_since, page.epoch
    first.stop()

    second_log = SqliteEventLog(path)
    for i in range(51, 61):
        second_log.append(entry(f"r{i}"))
    assert second_log.flush()
    second = start_server(second_log, owned=[second_log])
    resumed = EventLogClient(second.url, token=TOKEN, since=client.cursor, epoch=client.epoch)
    rest = resumed.drain()
    assert [r.seq for r in rest] == list(range(21, 61))
    assert [r.detail for r in rest] == [f"r{i}" for i in range(21, 61)]
    assert resumed.dropped == 0
    assert resumed.epoch == client.epoch
    client.close()
    resumed.close()


def test_a_restarted_ring_resets_the_client_cursor(start_server: StartServer) -> None:
    before = RingEventLog()
    for i in range(30):
        before.append(entry(f"old{i}"))
    first = start_server(before)
    with EventLogClient(first.url, token=TOKEN) as client:
        assert len(client.drain()) == 30
        cursor, epoch = client.cursor, client.epoch
    after = RingEventLog()
    for i in range(3):
        after.append(entry(f"new{i}"))
    second = start_server(after)
    with EventLogClient(second.url, token=TOKEN, since=cursor, epoch=epoch) as client:
        assert [r.detail for r in client.drain()] == ["new0", "new1", "new2"]
        assert client.epoch == after.epoch


# -- auth and parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 401),
        ({"Authorization": "Bearer"}, 401),
        ({"Authorization": "Bearer wrong-token"}, 403),
        ({"Authorization": f"Bearer {TOKEN}x"}, 403),
    ],
)
def test_without_the_right_token_there_is_no_data(
    shared: EventLogServer, headers: dict[str, str], status: int
) -> None:
    server = shared
    for query in ("", "mode=wait&timeout=5", "mode=version", "mode=bogus"):
        response = get(server, query, headers=headers)
        assert response.status_code == status
        assert "events" not in response.json()
        assert "secret-detail" not in response.text
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_the_token_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, start_server: StartServer
) -> None:
    monkeypatch.setenv("OTELHOOKS_ADMIN_TOKEN", "from-env")
    server = EventLogServer([RingEventLog()]).start()
    try:
        assert get(server, headers={"Authorization": "Bearer from-env"}).status_code == 200
        assert get(server).status_code == 403
    finally:
        server.stop()


def test_a_server_without_a_token_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTELHOOKS_ADMIN_TOKEN", raising=False)
    with pytest.raises(Exception, match="OTELHOOKS_ADMIN_TOKEN"):
        EventLogServer([RingEventLog()])


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("since=abc", "since"),
        ("since=1.5", "since"),
        ("since=-1", "since"),
        ("since=99999999999999999999", "since"),
        ("limit=0", "limit"),
        ("limit=-5", "limit"),
        ("limit=1001", "limit"),
        ("limit=99999999999999999999", "limit"),
        ("mode=tail", "mode"),
        ("mode=", "mode"),
        ("mode=wait&timeout=-1", "timeout"),
        ("mode=wait&timeout=abc", "timeout"),
        ("mode=wait&timeout=nan", "timeout"),
        ("mode=wait&timeout=61", "timeout"),
        ("cursor=3", "cursor"),
        ("since=1&since=2", "since"),
        ("log=other", "log"),
    ],
)
def test_bad_parameters_get_400_naming_the_parameter(
    shared: EventLogServer, query: str, parameter: str
) -> None:
    response = get(shared, query)
    assert response.status_code == 400
    body = response.json()
    assert body["parameter"] == parameter
    assert parameter in body["message"]
    assert "events" not in body


def test_several_logs_are_chosen_by_name(start_server: StartServer) -> None:
    a, b = RingEventLog(name="a"), RingEventLog(name="b")
    b.append(entry("in-b"))
    server = start_server(a, b)
    assert get(server).json()["parameter"] == "log"
    assert [e["detail"] for e in get(server, "log=b").json()["events"]] == ["in-b"]
    with EventLogClient(server.url, token=TOKEN, log="b") as client:
        assert [r.detail for r in client.drain()] == ["in-b"]


def test_the_client_raises_with_the_parameter_and_status(shared: EventLogServer) -> None:
    server = shared
    client = EventLogClient(server.url, token=TOKEN, limit=5000)
    with client, pytest.raises(EventLogError) as info:
        client.drain()
    assert (info.value.status_code, info.value.parameter, info.value.retryable) == (
        400,
        "limit",
        False,
    )
    with EventLogClient(server.url, token="wrong") as client, pytest.raises(EventLogError) as info:
        list(client.follow())  # 4xx is not retried
    assert info.value.status_code == 403


def test_unknown_routes_and_methods_are_refused(shared: EventLogServer) -> None:
    server = shared
    assert httpx.get(f"{server.url}/v1/other", headers=AUTH).status_code == 404
    response = httpx.post(f"{server.url}/v1/events", headers=AUTH)
    assert (response.status_code, response.headers["allow"]) == (405, "GET")
