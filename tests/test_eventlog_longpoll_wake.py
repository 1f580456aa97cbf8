"""Hundreds of ``GET /v1/events?mode=wait`` long-polls woken by one write, on real uvicorn
servers on 127.0.0.1 read by real httpx clients (one ``AsyncClient`` each: a single client's
pool of hundreds of connections spends more time scanning itself than the server answering).

300 pollers here, not the 1,000 of ``benchmarks/longpoll_wake_bench.py``: enough for the read
of each waiter to show, at a fraction of the time. What is asserted is the count of reads, not
a time: in this process the clients share the server's cores. The time a consumer sees (on
PostgreSQL, two instances, a store some way off) is ``tests/fleet/test_fleet_longpoll_wake.py``.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventBatch, EventEntry, EventLogServer, SqliteEventLog

TOKEN = "test-admin-token"
POLLERS = 300


def entry(detail: str) -> EventEntry:
    return EventEntry(
        1, "bot", None, None, "calc/add", "after_tool_result", False, True, "00", detail, None, None
    )


class CountedLog(SqliteEventLog):
    """A durable log that counts its reads (a user's subclass, as a log with its own metrics)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads = 0
        self._counting = threading.Lock()

    def read(self, since: int, limit: int, *, newest: bool = False) -> EventBatch:
        with self._counting:
            self.reads += 1
        return super().read(since, limit, newest=newest)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[EventLogServer, CountedLog]]:
    log = CountedLog(tmp_path / "events.sqlite3")
    server = EventLogServer([log], token=TOKEN, max_waiters=POLLERS + 10).start()
    yield server, log
    server.stop()
    log.close()


async def _poll_all(
    server: EventLogServer, queries: list[dict[str, Any]], write: Any
) -> tuple[list[httpx.Response], float]:
    """Every query as a long-poll of its own client; ``write()`` once they all wait. The
    answers, and the seconds from the write to the last answer."""
    tls = ssl.create_default_context()  # made once: each client would load the CA file again
    headers = {"Authorization": f"Bearer {TOKEN}"}
    answered: list[float] = []

    async def poll(params: dict[str, Any]) -> httpx.Response:
        async with httpx.AsyncClient(headers=headers, timeout=60, verify=tls) as client:
            response = await client.get(f"{server.url}/v1/events", params=params)
            answered.append(time.monotonic())
            return response

    tasks = [asyncio.create_task(poll(q)) for q in queries]
    deadline = time.monotonic() + 60
    while server.app.waiting < len(queries):
        assert time.monotonic() < deadline, f"only {server.app.waiting} long-polls wait"
        assert not answered, "a long-poll was answered before the write"
        await asyncio.sleep(0.05)
    wrote = time.monotonic()
    await asyncio.to_thread(write)
    responses = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return list(responses), max(answered) - wrote


def test_waiters_of_one_cursor_woken_together_share_one_read(
    served: tuple[EventLogServer, CountedLog],
) -> None:
    """Before, each of the 300 woken long-polls read the log itself (300 reads, one thread hop
    each, 300 copies of the same answer encoded); now the waiters of each cursor share one."""
    server, log = served
    log.append(entry("first"))
    assert log.flush()
    # two cursors: the same since, another limit (a different answer)
    queries = [
        {"mode": "wait", "since": 1, "timeout": 60, "limit": 100 if n % 2 else 1}
        for n in range(POLLERS)
    ]
    before: list[int] = []

    def write() -> None:
        before.append(log.reads)  # every poll waits: its first read found nothing
        log.append(entry("second"))
        log.append(entry("third"))

    responses, _ = asyncio.run(_poll_all(server, queries, write))
    woken_reads = log.reads - before[0]
    for query, response in zip(queries, responses, strict=True):
        assert response.status_code == 200, response.text
        body = response.json()
        expected = [2, 3] if query["limit"] == 100 else [2]
        # the two records may commit apart: a wide poll woken by the first alone holds it only
        assert [e["seq"] for e in body["events"]] in (expected, expected[:1])
        assert body["since"] == 1
        assert body["next_since"] == body["events"][-1]["seq"]
    # one read per cursor for the waiters woken in the same turn of the loop, and one more
    # each if the two records were committed apart; never one per waiter
    assert woken_reads <= 4, f"{woken_reads} reads answered {POLLERS} woken long-polls"
