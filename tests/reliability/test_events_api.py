"""``GET /v1/events`` limits not covered elsewhere: the documented default bound of 64 waiting
long-polls (one more gets 503), and tokens compared in constant time (``hmac.compare_digest``).
Malformed parameters, a huge ``limit`` and a negative ``since`` are in
``tests/test_eventlog_http.py::test_bad_parameters_get_400_naming_the_parameter``.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from otelhooks import EventEntry, EventLogServer, RingEventLog

TOKEN = "events-api-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOCUMENTED_MAX_WAITERS = 64


def entry(detail: str) -> EventEntry:
    return EventEntry(
        0, "bot", None, None, "calc/add", "after_tool_result", False, True, "00", detail, None, None
    )


@pytest.fixture
def served() -> Iterator[tuple[EventLogServer, RingEventLog]]:
    log = RingEventLog()
    server = EventLogServer([log], token=TOKEN).start()  # the default bound
    try:
        yield server, log
    finally:
        server.stop()


def test_the_default_bound_lets_64_long_polls_wait_and_refuses_one_more(
    served: tuple[EventLogServer, RingEventLog],
) -> None:
    server, log = served
    answers: list[int] = []
    lock = threading.Lock()

    def poll() -> None:
        response = httpx.get(
            f"{server.url}/v1/events?mode=wait&timeout=20", headers=AUTH, timeout=30
        )
        with lock:
            answers.append(response.status_code)

    pollers = [threading.Thread(target=poll) for _ in range(DOCUMENTED_MAX_WAITERS)]
    for poller in pollers:
        poller.start()
    deadline = time.monotonic() + 15
    while server.app.waiting < DOCUMENTED_MAX_WAITERS and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.app.waiting == DOCUMENTED_MAX_WAITERS
    one_more = httpx.get(f"{server.url}/v1/events?mode=wait&timeout=20", headers=AUTH, timeout=10)
    assert one_more.status_code == 503
    assert one_more.headers["retry-after"] == "1"
    log.append(entry("wake"))  # every waiting long-poll answers at once
    for poller in pollers:
        poller.join(10)
    assert answers == [200] * DOCUMENTED_MAX_WAITERS


@pytest.mark.parametrize(
    ("presented", "status"), [(TOKEN, 200), ("x" + TOKEN[1:], 403), (TOKEN[:-1], 403)]
)
def test_tokens_are_compared_in_constant_time(
    served: tuple[EventLogServer, RingEventLog],
    monkeypatch: pytest.MonkeyPatch,
    presented: str,
    status: int,
) -> None:
    server, _ = served
    compared: list[tuple[bytes, bytes]] = []
    original = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    response = httpx.get(
        f"{server.url}/v1/events", headers={"Authorization": f"Bearer {presented}"}, timeout=10
    )
    assert response.status_code == status
    assert compared == [(presented.encode(), TOKEN.encode())]
