"""The trace index's private rules: its bounds and how it names a hook decision."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from otelhooks.web._store import TraceIndex
from otelhooks.web._summary import decision_of


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


@pytest.mark.parametrize(
    ("attrs", "events", "kind"),
    [
        ({"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "g"}, [], "denied"),
        ({"otelhooks.hook.mocked": True, "otelhooks.hook.mocked_by": "m"}, [], "mocked"),
        ({"otelhooks.hook.rewritten_by": ["r"]}, [], "rewritten"),
        ({}, [{"n": "reject", "a": {"otelhooks.approval.answered_by": "alice"}}], "asked"),
        ({"otelhooks.hook.errors": ["h: boom"]}, [], "permissive"),
        ({"gen_ai.operation.name": "invoke_agent", "otelhooks.hook.decided_by": "b"}, [], "denied"),
        ({"otelhooks.tool.outcome": "success"}, [], None),
    ],
)
def test_each_hook_decision_has_its_mark(
    attrs: dict[str, Any], events: list[dict[str, Any]], kind: str | None
) -> None:
    assert decision_of(attrs, events).get("kind") == kind
