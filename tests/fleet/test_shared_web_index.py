"""What the web view lists, on PostgreSQL: runs ingested by any instance, listed and opened on
any other, under the index's rules (bounds for the fleet, one approval one span) and its
long-poll woken by a write through another instance."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext, TraceFlags

from otelhooks import EventLogServer, serve
from otelhooks._store._pg_webindex import SharedTraceIndex
from otelhooks._store._postgres import PostgresStore

pytestmark = pytest.mark.timeout(180)

TOKEN = "fleet-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def indexes(pg_url: str) -> Iterator[list[Any]]:
    """A factory of shared indexes, each on a store of its own (as two instances have)."""
    stores: list[PostgresStore] = []

    def make(**bounds: int) -> SharedTraceIndex:
        store = PostgresStore(pg_url)
        stores.append(store)
        store.migrate()
        return store.trace_index(capture_content=False, **bounds)

    try:
        yield [make]
    finally:
        for store in stores:
            store.close()


def _tracer(index: SharedTraceIndex, service: str = "bounds") -> trace.Tracer:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(index)
    return provider.get_tracer("tests")


def _trace(index: SharedTraceIndex, name: str, spans_each: int = 1) -> None:
    tracer = _tracer(index)
    with tracer.start_as_current_span(name):
        for _ in range(spans_each - 1):
            tracer.start_span("child").end()
    assert index.force_flush()


def test_the_oldest_trace_of_the_fleet_goes_past_max_traces(indexes: list[Any]) -> None:
    a, b = indexes[0](max_traces=3), indexes[0](max_traces=3)
    for n in range(5):
        _trace(a if n % 2 else b, f"root {n}")
    for index in (a, b):
        assert [op["root"] for op in index.operations()["operations"]] == [
            "root 4",
            "root 3",
            "root 2",
        ]
        assert index.stats()["evicted"] == 2


def test_the_oldest_traces_go_past_max_spans_counted_for_the_fleet(indexes: list[Any]) -> None:
    a, b = indexes[0](max_spans=10), indexes[0](max_spans=10)
    for n in range(4):
        _trace(a if n % 2 else b, f"root {n}", spans_each=4)
    assert b.stats()["spans"] <= 10
    assert [op["root"] for op in a.operations()["operations"]] == ["root 3", "root 2"]


def test_a_trace_keeps_at_most_max_trace_spans_from_any_instance(indexes: list[Any]) -> None:
    a, b = indexes[0](max_trace_spans=5), indexes[0](max_trace_spans=5)
    tracer_a, tracer_b = _tracer(a), _tracer(b)
    with tracer_a.start_as_current_span("root"):
        for n in range(7):
            (tracer_a if n % 2 else tracer_b).start_span("child").end()
    assert a.force_flush()
    assert b.force_flush()
    (op,) = b.operations()["operations"]
    found = a.trace(op["trace_id"])
    assert found is not None
    assert (len(found["spans"]), found["dropped"]) == (5, 3)
    assert found["summary"]["spans"] == 5


def _approval_spans(
    call_index: SharedTraceIndex, stand_in_index: SharedTraceIndex, *, stand_in_first: bool
) -> str:
    """One approval written twice, by two instances: serve's stand-in on one, the call's own
    span on the other; the trace id."""
    event = {"otelhooks.approval.id": "a1", "otelhooks.approval.answered_by": "alice"}
    call = _tracer(call_index).start_span(
        "execute_tool fs/rm", attributes={"gen_ai.operation.name": "x"}
    )
    call.add_event("otelhooks.reject", attributes=event)
    ctx = call.get_span_context()

    def stand_in() -> None:
        parent = trace.set_span_in_context(trace.NonRecordingSpan(ctx))
        span = _tracer(stand_in_index).start_span(
            "request_human_approve fs/rm",
            context=parent,
            attributes={"otelhooks.approval.stand_in": True},
        )
        span.add_event("otelhooks.reject", attributes=event)
        span.end()
        assert stand_in_index.force_flush()

    if stand_in_first:
        stand_in()
        call.end()
        assert call_index.force_flush()
    else:
        call.end()
        assert call_index.force_flush()
        stand_in()
    return format(ctx.trace_id, "032x")


@pytest.mark.parametrize("stand_in_first", [True, False])
def test_one_approval_is_one_span_whichever_instance_writes_it_first(
    indexes: list[Any], stand_in_first: bool
) -> None:
    a, b = indexes[0](), indexes[0]()
    trace_id = _approval_spans(a, b, stand_in_first=stand_in_first)
    found = b.trace(trace_id)
    assert found is not None
    assert [s["n"] for s in found["spans"] if s["d"].get("kind") == "asked"] == [
        "execute_tool fs/rm"
    ]
    assert found["summary"]["spans"] == len(found["spans"]) == 1
    assert a.stats()["spans"] == sum(op["spans"] for op in a.operations()["operations"]) == 1


def test_a_stand_in_alone_in_its_trace_goes_with_it_when_the_call_arrives_in_one_batch(
    indexes: list[Any],
) -> None:
    (index,) = (indexes[0](),)
    tracer = _tracer(index)
    event = {"otelhooks.approval.id": "a3"}
    stand_in = tracer.start_span(
        "request_human_approve fs/rm", attributes={"otelhooks.approval.stand_in": True}
    )
    stand_in.add_event("otelhooks.approve", attributes=event)
    stand_in.end()
    call = tracer.start_span("execute_tool fs/rm")
    call.add_event("otelhooks.approve", attributes=event)
    call.end()
    assert index.force_flush()
    assert [op["root"] for op in index.operations()["operations"]] == ["execute_tool fs/rm"]
    assert index.stats() | {"version": 0} == {
        "traces": 1,
        "spans": 1,
        "evicted": 0,
        "version": 0,
    }


def test_the_filters_and_paging_of_the_runs_list(indexes: list[Any]) -> None:
    a, b = indexes[0](), indexes[0]()
    for n in range(5):
        index = a if n % 2 else b
        tracer = _tracer(index)
        with tracer.start_as_current_span(
            f"invoke_agent bot{n % 2}",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": f"bot{n % 2}",
            },
        ):
            tracer.start_span(
                "execute_tool t",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{n}"},
            ).end()
        assert index.force_flush()
    listed = a.operations(agent="bot1")
    assert (listed["total"], listed["matched"]) == (5, 2)
    assert listed["agents"] == ["bot0", "bot1"]
    assert listed["tools"] == ["t0", "t1", "t2", "t3", "t4"]
    assert [op["tools"] for op in a.operations(tool="t2")["operations"]] == [["t2"]]
    first = b.operations(limit=2)
    assert len(first["operations"]) == 2
    rest = b.operations(limit=2, before=first["next_before"])
    seen = [op["trace_id"] for op in first["operations"] + rest["operations"]]
    assert len(set(seen)) == 4


def test_the_runs_list_offers_the_first_500_agents_of_the_fleet(indexes: list[Any]) -> None:
    # read at every change of the list: agents a sender named apart made every answer
    # megabytes (the tools were cut at 500 already)
    index = indexes[0]()
    tracer = _tracer(index)
    for n in range(520):
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{n:04}"}
        tracer.start_span("invoke_agent", attributes=attrs).end()
    assert index.force_flush()
    assert index.operations()["agents"] == [f"agent-{n:04}" for n in range(500)]
    assert index.operations(agent="agent-0519")["matched"] == 1


# -- through serve ---------------------------------------------------------------------------


def _spans_request(trace_id: str, count: int, *, start: int = 0) -> bytes:
    spans = [
        {
            "traceId": trace_id,
            "spanId": f"{n + 1:016x}",
            "parentSpanId": "" if n == 0 else f"{1:016x}",
            "name": "invoke_agent bot" if n == 0 else f"execute_tool t{n % 7}",
            "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1000),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1000 + 500),
            "attributes": [
                {
                    "key": "gen_ai.operation.name",
                    "value": {"stringValue": "invoke_agent" if n == 0 else "execute_tool"},
                },
                {"key": "gen_ai.agent.name", "value": {"stringValue": "bot"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": f"t{n % 7}"}},
            ],
        }
        for n in range(start, start + count)
    ]
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]
                },
                "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}],
            }
        ]
    }
    return json.dumps(body).encode()


def _post(url: str, body: bytes) -> None:
    sent = httpx.post(
        f"{url}/v1/traces",
        content=body,
        headers={**AUTH, "Content-Type": "application/json"},
        timeout=120,
    )
    assert sent.status_code == 200, sent.text


def _listed(url: str, trace_id: str, spans: int, timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/v1/ui/operations", headers=AUTH, timeout=30).json()
        for op in body["operations"]:
            if op["trace_id"] == trace_id and op["spans"] >= spans:
                return dict(op)
        time.sleep(0.05)
    raise AssertionError(f"{trace_id} with {spans} spans was not listed on {url}")


@pytest.fixture
def pair(pg_url: str) -> Iterator[list[EventLogServer]]:
    made: list[EventLogServer] = []
    try:
        for _ in range(2):
            made.append(serve(token=TOKEN, store=pg_url))
        yield made
    finally:
        for server in made:
            server.stop()


def test_a_run_received_by_one_instance_is_listed_and_opened_on_another(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    trace_id = "ab" * 16
    _post(a.url, _spans_request(trace_id, 3))
    op = _listed(b.url, trace_id, 3)
    assert (op["agent"], op["service"], op["tool_calls"]) == ("bot", "agent", 2)
    opened = httpx.get(f"{b.url}/v1/ui/traces/{trace_id}", headers=AUTH).json()
    assert [s["s"] for s in opened["spans"]] == [f"{n:016x}" for n in (1, 2, 3)]
    one = httpx.get(f"{b.url}/v1/ui/traces/{trace_id}/spans/{2:016x}", headers=AUTH).json()
    assert one["n"] == "execute_tool t1"
    stats = httpx.get(f"{b.url}/v1/ui/session", headers=AUTH).json()["stats"]
    assert (stats["traces"], stats["spans"]) == (1, 3)


def test_spans_of_one_trace_received_by_two_instances_make_one_run(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    trace_id = "cd" * 16
    _post(a.url, _spans_request(trace_id, 4))
    _post(b.url, _spans_request(trace_id, 4, start=4))
    op = _listed(a.url, trace_id, 8)
    assert (op["spans"], op["tool_calls"], op["root"]) == (8, 7, "invoke_agent bot")
    total = httpx.get(f"{b.url}/v1/ui/operations", headers=AUTH).json()["total"]
    assert total == 1


def test_a_write_through_one_instance_wakes_the_pages_long_poll_on_another(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    since = httpx.get(f"{b.url}/v1/ui/changes", params={"timeout": 0}, headers=AUTH).json()
    woke: dict[str, Any] = {}

    def long_poll() -> None:
        got = httpx.get(
            f"{b.url}/v1/ui/changes",
            params={"since": since["version"], "approvals": since["approvals"], "timeout": 30},
            headers=AUTH,
            timeout=60,
        )
        woke["body"], woke["at"] = got.json(), time.monotonic()

    poll = threading.Thread(target=long_poll)
    poll.start()
    time.sleep(0.5)
    sent = time.monotonic()
    _post(a.url, _spans_request("ef" * 16, 2))
    poll.join(40)
    assert woke["body"]["version"] > since["version"]
    assert woke["at"] - sent < 1.0


def test_a_10000_span_trace_received_by_one_instance_opens_whole_on_another(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    trace_id = "12" * 16
    for start in range(0, 10_000, 2_000):
        _post(a.url, _spans_request(trace_id, 2_000, start=start))
    op = _listed(b.url, trace_id, 10_000, timeout_s=120)
    assert op["spans"] == 10_000
    began = time.monotonic()
    outline = httpx.get(
        f"{b.url}/v1/ui/traces/{trace_id}", params={"view": "outline"}, headers=AUTH, timeout=60
    ).json()
    took = time.monotonic() - began
    assert len(outline["spans"]) == 10_000
    assert set(outline["spans"][0]) == {"s", "p", "n", "t0", "t1", "st", "o", "d"}
    assert took < 10  # bounded: one statement, one JSON array (measured 0.4 s here)


def test_a_span_holding_a_nul_byte_is_listed_with_the_others_of_its_batch(
    indexes: list[Any],
) -> None:
    """PostgreSQL text cannot hold NUL: a span whose tool or agent holds one (a client chose
    it) is listed with U+FFFD. It failed its whole batch, other runs' spans too."""
    index = indexes[0]()
    tracer = _tracer(index, service="svc\x00x")
    tracer.start_span("plain run").end()
    hostile = {"gen_ai.tool.name": "Ba\x00sh", "gen_ai.agent.name": "a\x00gent"}
    tracer.start_span("hostile run", attributes=hostile).end()
    assert index.force_flush()
    roots = sorted(op["root"] for op in index.operations()["operations"])
    assert roots == ["hostile run", "plain run"]
    assert "\x00" not in json.dumps(index.operations(), ensure_ascii=False)


def test_a_span_id_sent_twice_gives_the_detail_of_each(indexes: list[Any]) -> None:
    # the page asks for the n-th span of an id sent twice (an exporter's retry, or a sender's
    # ring): the first alone showed one row's detail under the other's (as TraceIndex.span)
    index = indexes[0]()
    context = SpanContext(0xABC, 0xDEF, is_remote=False, trace_flags=TraceFlags(1))
    resource = Resource.create({"service.name": "twice"})
    index.add(
        ReadableSpan(name=name, context=context, resource=resource, start_time=1, end_time=2)
        for name in ("first", "second")
    )
    assert index.force_flush()
    trace_id, span_id = format(0xABC, "032x"), format(0xDEF, "016x")
    got = [index.span(trace_id, span_id, nth=n) for n in range(3)]
    assert [g["n"] if g else None for g in got] == ["first", "second", None]
