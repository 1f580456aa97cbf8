"""What ``/v1/logs`` counts as a model call's cost: a record it cannot tell from a retry of the
same call, or whose cost or token counts no call has, is refused (the answer's OTLP
``partialSuccess``, ``otelhooks.dropped`` reason ``not_a_call``) and adds nothing to the spend a
budget guard reads. Before, such a record sent twice was added twice, a negative or NaN cost was
an unpriced call, a claimed $10^12 was added (every later call of the session denied), and a
token count near PostgreSQL's bigint made every later call of its session a ``503`` (its spend
stuck below its budget). Real ``serve`` on SQLite and on a throwaway PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks.integrations.coding_agents._sessions import Spend
from tests.integrations.test_claude_code_serve import AUTH, TOKEN, _span_of

JSON = {**AUTH, "Content-Type": "application/json"}


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, pg_url: str) -> Iterator[EventLogServer]:
    store = pg_url if request.param == "postgresql" else None
    running = serve(token=TOKEN, store=store, web=False)
    try:
        yield running
    finally:
        running.stop()


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"doubleValue": value}


def _call(session: str, *, timed: bool = True, **attrs: Any) -> dict[str, Any]:
    """An ``api_request`` record of Claude Code (one model call of $0.25)."""
    given = {"session.id": session, "event.name": "api_request", "model": "claude-sonnet-4-5"}
    given.update({"input_tokens": 30, "output_tokens": 12, "cost_usd": 0.25, **attrs})
    record: dict[str, Any] = {
        "body": {"stringValue": "claude_code.api_request"},
        "attributes": [{"key": k, "value": _value(v)} for k, v in given.items()],
    }
    if timed:
        record["timeUnixNano"] = str(time.time_ns())
    return record


def _post(server: EventLogServer, *records: dict[str, Any]) -> httpx.Response:
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}
    return httpx.post(server.url + "/v1/logs", content=json.dumps(body), headers=JSON, timeout=30)


def _spend(server: EventLogServer, session: str) -> Spend:
    spend: Spend = _span_of(server).span_processor.sessions.spend_of(session)
    return spend


def _rejected(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text
    return str(answer.json().get("partialSuccess", {}).get("rejectedLogRecords", "0"))


def test_a_cost_record_without_a_time_is_refused_not_added_twice(server: EventLogServer) -> None:
    untimed = _call("s-untimed", timed=False)
    assert [_rejected(_post(server, untimed)) for _ in range(2)] == ["1", "1"]  # and a retry
    assert _spend(server, "s-untimed").calls == 0  # was 2 calls, $0.50
    # Claude Code's event.sequence tells its calls apart without a time: kept, added once
    sequenced = _call("s-sequenced", timed=False, **{"event.sequence": 7})
    assert [_rejected(_post(server, sequenced)) for _ in range(2)] == ["0", "0"]
    spend = _spend(server, "s-sequenced")
    assert (spend.calls, spend.cost_usd) == (1, pytest.approx(0.25))  # was 2 calls, $0.50


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cost_usd", -5.0),
        ("cost_usd", "nan"),
        ("cost_usd", "inf"),
        ("cost_usd", 1e12),
        ("cost_usd", "a lot"),
        ("input_tokens", 2**63 - 1),
        ("output_tokens", -1),
    ],
)
def test_a_value_no_model_call_has_is_refused_and_the_sessions_calls_still_add(
    server: EventLogServer, field: str, value: Any
) -> None:
    assert _rejected(_post(server, _call("s-claimed", **{field: value}))) == "1"
    assert _rejected(_post(server, _call("s-claimed"))) == "0"  # was a 503 after 2**63 - 1
    spend = _spend(server, "s-claimed")
    assert (spend.calls, spend.unpriced_calls) == (1, 0)
    assert spend.cost_usd == pytest.approx(0.25)
    assert (spend.input_tokens, spend.output_tokens) == (30, 12)
