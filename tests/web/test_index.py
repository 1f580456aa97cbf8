"""The trace index's private rules: its bounds (also of what serve receives) and how it names a
hook decision."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from otelhooks.web import TraceIndex
from otelhooks.web._summary import decision_of
from tests.web._otlp import ids, post, span


def _traces(index: TraceIndex, count: int, spans_each: int = 1) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "bounds"}))
    provider.add_span_processor(index)
    tracer = provider.get_tracer("tests")
    for n in range(count):
        with tracer.start_as_current_span(f"root {n}"):
            for _ in range(spans_each - 1):
                tracer.start_span("child").end()


def test_the_oldest_trace_goes_past_max_traces() -> None:
    index = TraceIndex(max_traces=3)
    _traces(index, 5)
    roots = [op["root"] for op in index.operations()["operations"]]
    assert roots == ["root 4", "root 3", "root 2"]
    assert index.stats()["evicted"] == 2


def test_the_oldest_traces_go_past_max_spans() -> None:
    index = TraceIndex(max_spans=10)
    _traces(index, 4, spans_each=4)
    assert index.stats()["spans"] <= 10
    assert [op["root"] for op in index.operations()["operations"]] == ["root 3", "root 2"]


def test_a_trace_keeps_at_most_max_trace_spans_and_counts_the_rest() -> None:
    index = TraceIndex(max_trace_spans=5)
    _traces(index, 1, spans_each=8)
    (op,) = index.operations()["operations"]
    trace = index.trace(op["trace_id"])
    assert trace is not None
    assert (len(trace["spans"]), trace["dropped"]) == (5, 3)


def test_long_values_and_many_attributes_are_cut() -> None:
    index = TraceIndex()
    # a receiver gets spans from SDKs with other limits than this one's default 128
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=1000))
    provider.add_span_processor(index)
    attrs: dict[str, Any] = {f"k{n}": n for n in range(300)}
    attrs["k0"] = "x" * 10_000
    provider.get_tracer("tests").start_span("wide", attributes=attrs).end()
    (op,) = index.operations()["operations"]
    trace = index.trace(op["trace_id"])
    assert trace is not None
    kept = trace["spans"][0]["a"]
    assert len(kept) == 128
    assert len(kept["k0"]) == 4096


def test_the_oldest_traces_go_past_max_bytes_and_a_span_larger_is_not_kept() -> None:
    # values under the cuts still make megabytes: 100 events of 30 values of 4,000 characters
    index = TraceIndex(max_bytes=100_000)
    provider = TracerProvider(resource=Resource.create({"service.name": "bytes"}))
    provider.add_span_processor(index)
    tracer = provider.get_tracer("tests")
    for n in range(6):
        tracer.start_span(f"root {n}", attributes={"v": "v" * 4000}).end()  # 4 KB a trace
    wide = tracer.start_span("wide")
    for n in range(100):
        wide.add_event(f"e{n}", {f"k{k}": "w" * 4000 for k in range(30)})
    wide.end()
    for n in range(6, 40):
        tracer.start_span(f"root {n}", attributes={"v": "v" * 4000}).end()
    roots = [op["root"] for op in index.operations(limit=1000)["operations"]]
    assert "wide" not in roots  # 12 MB: more than the whole index may hold
    assert roots[0] == "root 39"
    assert len(roots) < 25
    assert _json_bytes(index) <= 100_000


def _json_bytes(index: TraceIndex) -> int:
    kept = 0
    for op in index.operations(limit=1000)["operations"]:
        trace = index.trace(op["trace_id"])
        assert trace is not None
        kept += sum(len(json.dumps(s, separators=(",", ":"))) for s in trace["spans"])
    return kept


def test_a_status_an_event_name_and_a_service_of_a_megabyte_are_cut(api: httpx.Client) -> None:
    # what an agent holding the ingest token sends to serve: each field of each span it kept
    # whole, 3 MB a span (200,000 spans kept: hundreds of GB, serve and its inbox gone first)
    huge = "m" * (1 << 20)
    trace_id, span_id = ids()
    sent = span(trace_id, span_id, "huge")
    sent["status"] = {"code": 2, "message": huge}
    sent["events"] = [{"name": huge, "timeUnixNano": sent["startTimeUnixNano"]}]
    post(api, [sent], service=huge)
    trace = api.get(f"/v1/ui/traces/{trace_id}").json()
    (row,) = trace["spans"]
    kept = (len(row["sm"]), len(row["e"][0]["n"]), len(trace["summary"]["service"]))
    assert kept == (4096, 4096, 4096)


@pytest.mark.parametrize(
    ("attrs", "events", "kind"),
    [
        ({"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "g"}, [], "denied"),
        ({"otelhooks.hook.mocked": True, "otelhooks.hook.mocked_by": "m"}, [], "mocked"),
        ({"otelhooks.hook.rewritten_by": ["r"]}, [], "rewritten"),
        (
            {},
            [{"n": "otelhooks.reject", "a": {"otelhooks.approval.answered_by": "alice"}}],
            "asked",
        ),
        (
            {"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "ask"},
            [{"n": "otelhooks.reject", "a": {"otelhooks.approval.hook_id": "ask"}}],
            "asked",
        ),
        (
            {"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "guard"},
            [{"n": "otelhooks.approve", "a": {"otelhooks.approval.hook_id": "ask"}}],
            "denied",
        ),
        ({"otelhooks.hook.errors": ["h: boom"]}, [], "failed"),
        ({"otelhooks.hook.permissive": ["no-rm: deny: rm is not allowed"]}, [], "permissive"),
        (
            {
                "otelhooks.hook.permissive": ["no-rm: deny: no"],
                "otelhooks.hook.errors": ["h: boom"],
            },
            [],
            "permissive",
        ),
        (
            {
                "otelhooks.tool.outcome": "denied",
                "otelhooks.hook.decided_by": "g",
                "otelhooks.hook.permissive": ["no-rm: deny: no"],
            },
            [],
            "denied",
        ),
        ({"gen_ai.operation.name": "invoke_agent", "otelhooks.hook.decided_by": "b"}, [], "denied"),
        ({"otelhooks.tool.outcome": "success"}, [], None),
    ],
)
def test_each_hook_decision_has_its_mark(
    attrs: dict[str, Any], events: list[dict[str, Any]], kind: str | None
) -> None:
    assert decision_of(attrs, events).get("kind") == kind


def _approval_spans(index: TraceIndex, *, stand_in_first: bool) -> tuple[str, str]:
    """One approval written twice, as serve and the runtime write it: serve's stand-in (a child
    of the call's span) and the call's own span with the runtime's event; ``(trace, call span)``."""
    provider = TracerProvider(resource=Resource.create({"service.name": "approvals"}))
    provider.add_span_processor(index)
    tracer = provider.get_tracer("tests")
    event = {"otelhooks.approval.id": "a1", "otelhooks.approval.answered_by": "alice"}
    call = tracer.start_span("execute_tool fs/rm", attributes={"gen_ai.operation.name": "x"})
    call.add_event("otelhooks.reject", attributes=event)
    ctx = call.get_span_context()

    def stand_in() -> None:
        parent = trace.set_span_in_context(trace.NonRecordingSpan(ctx))
        span = tracer.start_span(
            "request_human_approve fs/rm",
            context=parent,
            attributes={"otelhooks.approval.stand_in": True},
        )
        span.add_event("otelhooks.reject", attributes=event)
        span.end()

    if stand_in_first:
        stand_in()
        call.end()
    else:
        call.end()
        stand_in()
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


def _asked(index: TraceIndex, trace_id: str) -> list[str]:
    found = index.trace(trace_id)
    assert found is not None
    return [s["n"] for s in found["spans"] if s["d"].get("kind") == "asked"]


@pytest.mark.parametrize("stand_in_first", [True, False])
def test_one_approval_is_one_span_whichever_arrives_first(stand_in_first: bool) -> None:
    index = TraceIndex()
    trace_id, _ = _approval_spans(index, stand_in_first=stand_in_first)
    assert _asked(index, trace_id) == ["execute_tool fs/rm"]
    found = index.trace(trace_id)
    assert found is not None
    assert found["summary"]["spans"] == len(found["spans"]) == 1
    assert index.stats()["spans"] == sum(op["spans"] for op in index.operations()["operations"])


def test_a_stand_in_is_kept_when_the_calls_span_never_arrives() -> None:
    index = TraceIndex()
    provider = TracerProvider()
    provider.add_span_processor(index)
    span = provider.get_tracer("tests").start_span(
        "request_human_approve fs/rm", attributes={"otelhooks.approval.stand_in": True}
    )
    span.add_event("otelhooks.approve", attributes={"otelhooks.approval.id": "a2"})
    span.end()
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert _asked(index, trace_id) == ["request_human_approve fs/rm"]
    assert "asked" in index.operations()["operations"][0]["decisions"]


def test_a_stand_in_alone_in_its_trace_goes_with_that_trace_when_the_call_arrives() -> None:
    index = TraceIndex()
    provider = TracerProvider()
    provider.add_span_processor(index)
    tracer = provider.get_tracer("tests")
    event = {"otelhooks.approval.id": "a3"}
    # the caller gave no trace id: serve's stand-in is the root of a trace of its own
    stand_in = tracer.start_span(
        "request_human_approve fs/rm", attributes={"otelhooks.approval.stand_in": True}
    )
    stand_in.add_event("otelhooks.approve", attributes=event)
    stand_in.end()
    call = tracer.start_span("execute_tool fs/rm")
    call.add_event("otelhooks.approve", attributes=event)
    call.end()
    operations = index.operations()["operations"]
    assert [op["root"] for op in operations] == ["execute_tool fs/rm"]
    assert index.stats()["spans"] == 1


def test_a_call_a_person_denied_is_one_asked_mark_counted_as_a_denial() -> None:
    index = TraceIndex()
    provider = TracerProvider()
    provider.add_span_processor(index)
    span = provider.get_tracer("tests").start_span(
        "execute_tool fs/rm",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "otelhooks.tool.outcome": "denied",
            "otelhooks.hook.decided_by": "ask",
        },
    )
    span.add_event(
        "otelhooks.reject",
        attributes={
            "otelhooks.approval.hook_id": "ask",
            "otelhooks.approval.answered_by": "alice",
            "otelhooks.approval.reason": "not on prod",
        },
    )
    span.end()
    (op,) = index.operations()["operations"]
    found = index.trace(op["trace_id"])
    assert found is not None
    assert found["spans"][0]["d"] == {
        "kind": "asked",
        "by": "ask",
        "why": "reject by alice: not on prod",
        "blocked": True,
    }
    assert (op["denials"], op["decisions"]) == (1, ["asked", "denied"])
