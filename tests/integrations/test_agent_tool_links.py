"""The memory of CLI tool spans waiting for the bridge's span (``coding_agents._tool_links``)
holds against a hostile client: many distinct call ids, huge ids and many spans per call stay
within its count and byte bounds, and every drop is counted in ``otelhooks.dropped``
(``otelhooks.drop.source="claude_code_telemetry"``), read from the SDK's own metric reader."""

from __future__ import annotations

import tracemalloc
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

from otelhooks import AgentMetrics, HookSpanProcessor
from otelhooks import semconv as sc
from otelhooks.integrations.coding_agents._joins import MAX_SESSION_ID
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._telemetry import ClaudeTelemetry
from otelhooks.integrations.coding_agents._tool_links import MAX_SPANS_PER_TOOL, AgentToolSpans

_CODEX = Resource.create({"service.name": "codex_exec"})


def _codex_tool(span_id: int, session: str, call_id: str) -> ReadableSpan:
    ctx = SpanContext(0xC0DE, span_id, True, TraceFlags(TraceFlags.SAMPLED))
    return ReadableSpan(
        name="exec_command",
        context=ctx,
        resource=_CODEX,
        attributes={"conversation.id": session, "call_id": call_id},
        start_time=1,
        end_time=2,
    )


class _Served:
    """The telemetry join as serve builds it, with its drop counter read back."""

    def __init__(self, remember: int) -> None:
        self.reader = InMemoryMetricReader()
        self.metrics = AgentMetrics(MeterProvider(metric_readers=[self.reader]))
        engine = HookSpanProcessor(metrics=self.metrics).engine
        self.telemetry = ClaudeTelemetry(ServerSessions(), engine=engine, remember=remember)

    def receive(self, span: ReadableSpan) -> None:
        self.telemetry.prepare([span])
        self.telemetry.on_end(span)

    def dropped(self) -> dict[str, int]:
        assert self.metrics.flush(10.0)
        data = self.reader.get_metrics_data()
        found: dict[str, int] = {}
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != sc.METRIC_DROPPED:
                        continue
                    for point in metric.data.data_points:
                        attrs: dict[str, Any] = dict(point.attributes or {})
                        if attrs.get(sc.ATTR_DROP_SOURCE) == "claude_code_telemetry":
                            reason = str(attrs.get(sc.ATTR_DROP_REASON))
                            found[reason] = found.get(reason, 0) + int(point.value)
        return found


def test_many_distinct_call_ids_keep_the_newest_and_count_the_forgotten() -> None:
    served = _Served(remember=1_000)
    for n in range(20_000):
        served.receive(_codex_tool(n + 1, "s-1", f"call_{n}"))
    assert served.telemetry.agent_tools.held[0] == 1_000
    assert served.dropped() == {"join_forgotten": 19_000}
    tools = served.telemetry.agent_tools
    assert tools.take("s-1", "call_19999") == (20_000,)  # the newest kept
    assert tools.take("s-1", "call_0") == ()  # the oldest forgotten


def test_huge_ids_are_not_remembered_and_are_counted() -> None:
    served = _Served(remember=65_536)
    huge = "x" * (1024 * 1024)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(100):  # 100 MB of call ids and 100 MB of session ids offered
        served.receive(_codex_tool(2 * n + 1, "s-1", f"{n}{huge}"))
        served.receive(_codex_tool(2 * n + 2, f"{n}{huge}", "call_1"))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert served.telemetry.agent_tools.held == (0, 0)
    assert served.dropped() == {"id_too_long": 200}
    assert grown < 4 * 1024 * 1024  # what stays is the export-once memory of 200 span ids


def test_ids_at_the_length_limit_stay_within_the_byte_bound() -> None:
    forgotten: list[tuple[int, str]] = []
    budget = 1024 * 1024
    tools = AgentToolSpans(max_bytes=budget, on_drop=lambda n, why: forgotten.append((n, why)))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(5_000):  # 2 KB of ids each: 10 MB offered
        session = f"{n:08d}".ljust(MAX_SESSION_ID, "s")
        tools.remember(session, f"{n:08d}".ljust(MAX_SESSION_ID, "c"), n + 1)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    count, held = tools.held
    assert held <= budget
    assert 0 < count < 5_000
    assert sum(n for n, why in forgotten if why == "join_forgotten") == 5_000 - count
    assert grown < 2 * budget  # the accounting covers what the entries really take


def test_spans_of_one_call_past_the_limit_are_not_remembered_and_are_counted() -> None:
    served = _Served(remember=65_536)
    for n in range(100):
        served.receive(_codex_tool(n + 1, "s-1", "call_1"))
    assert served.telemetry.agent_tools.held[0] == 1
    assert served.dropped() == {"too_many_spans": 100 - MAX_SPANS_PER_TOOL}
    assert served.telemetry.agent_tools.take("s-1", "call_1") == tuple(
        range(1, MAX_SPANS_PER_TOOL + 1)
    )
