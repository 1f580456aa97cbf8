"""Long-polls on two real ``otelhooks serve`` instances sharing a PostgreSQL some way off, woken
by one write: every one is answered within a few round trips of the acknowledgement.

200 pollers (100 per instance), not the 1,000 of ``benchmarks/longpoll_wake_bench.py``, and a
store 0.3 s away (:class:`~tests.fleet._fleet.StallingProxy` delays what serve sends it): the
cost that grows with the pollers is each waiter's own read, a round trip through a pool of a
few connections, so a few waiters on a far store show what a thousand show on a near one
(benchmarks/README.md has both).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fleet._fleet import StallingProxy, start_instance
from tests.reliability._serve_proc import ADMIN, ServeProc, post_traces, tool_spans_json

PER_INSTANCE = 100
ROUND_TRIP_S = 0.3


@pytest.fixture
def far_fleet(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServeProc, ServeProc, StallingProxy]]:
    proxy = StallingProxy(int(pg_url.rsplit(":", 1)[1].split("/")[0]))
    started: list[ServeProc] = []
    try:
        for _ in range(2):
            started.append(
                start_instance(tmp_path, proxy.url(pg_url), "--max-waiters", str(PER_INSTANCE + 8))
            )
        yield started[0], started[1], proxy
    finally:
        proxy.delay_s = 0.0
        for instance in started:
            instance.stop()
        proxy.close()


async def _wake(urls: list[str], proxy: StallingProxy) -> tuple[list[httpx.Response], float]:
    tls = ssl.create_default_context()  # made once: each client would load the CA file again
    headers = {"Authorization": f"Bearer {ADMIN}"}
    answered: list[float] = []

    async def poll(url: str) -> httpx.Response:
        async with httpx.AsyncClient(headers=headers, timeout=60, verify=tls) as client:
            params = {"log": "fleet", "mode": "wait", "since": 0, "timeout": 60}
            response = await client.get(f"{url}/v1/events", params=params)
            answered.append(time.monotonic())
            return response

    tasks = [asyncio.create_task(poll(url)) for url in urls for _ in range(PER_INSTANCE)]
    await asyncio.sleep(3.0)  # every poll sent and waiting (none can be answered yet)
    assert not answered, "a long-poll was answered before the write"
    proxy.delay_s = ROUND_TRIP_S
    response = await asyncio.to_thread(post_traces, urls[0], tool_spans_json(1))
    acked = time.monotonic()
    assert response.status_code == 200, response.text
    responses = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return list(responses), max(answered) - acked


def test_a_write_answers_every_long_poll_of_both_instances_within_a_few_round_trips(
    far_fleet: tuple[ServeProc, ServeProc, StallingProxy],
) -> None:
    """Before, each woken long-poll read the store itself: 100 round trips of 0.3 s per instance
    through a handful of threads, the last answered 5 s or more after the write (60 waiters:
    3.3-4.2 s). Now the waiters of a cursor share one read: a round trip or two (0.5-0.6 s
    measured; the bound leaves room for a loaded machine)."""
    a, b, proxy = far_fleet
    responses, last = asyncio.run(_wake([a.url, b.url], proxy))
    assert [r.status_code for r in responses] == [200] * len(responses)
    assert all([e["seq"] for e in r.json()["events"]] == [1] for r in responses)
    assert last < 2.0, f"the last long-poll was answered {last:.2f} s after the write's ack"


def test_long_polls_sharing_a_read_the_store_cannot_answer_all_get_503(
    far_fleet: tuple[ServeProc, ServeProc, StallingProxy],
) -> None:
    """The store gone while long-polls wait: at their timeout each reads again, the reads of
    waiters due together are one, and its failure answers every one of them 503 (none is left
    waiting on a read that failed, none gets an empty 200 as if the log were empty)."""
    a, _, proxy = far_fleet

    async def polls() -> list[httpx.Response]:
        tls = ssl.create_default_context()
        headers = {"Authorization": f"Bearer {ADMIN}"}

        async def poll() -> httpx.Response:
            async with httpx.AsyncClient(headers=headers, timeout=60, verify=tls) as client:
                params = {"log": "fleet", "mode": "wait", "since": 0, "timeout": 4}
                return await client.get(f"{a.url}/v1/events", params=params)

        tasks = [asyncio.create_task(poll()) for _ in range(PER_INSTANCE // 2)]
        await asyncio.sleep(2.0)  # every poll waiting
        proxy.close()  # every connection to the store cut, and none can be opened
        return list(await asyncio.wait_for(asyncio.gather(*tasks), 60))

    responses = asyncio.run(polls())
    assert [r.status_code for r in responses] == [503] * len(responses)
    assert {r.json()["error"] for r in responses} <= {"store_unavailable", "store_busy"}
