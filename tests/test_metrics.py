"""otelhooks' metrics through the SDK's public API: what real readers see after a real
instrumented run (tool calls, hook runs, a hook timeout, an error), on ``configure()``'s provider
and on a user's own, exemplars that name the tool call's span, and the metrics worker's
shutdown, overflow and fork."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    Meter,
    MeterProvider,
)
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import AgentMetrics, AgentTracer, HookEvent, HookSpanProcessor, configure
from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline, pipeline

CLIENT_BOUNDS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
SECOND_BOUNDS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
)  # fmt: skip


def metric(reader: InMemoryMetricReader, name: str) -> Metric | None:
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for found in sm.metrics:
                if found.name == name:
                    assert sm.scope.name == "otelhooks"
                    return found
    return None


def points(reader: InMemoryMetricReader, name: str, **attributes: Any) -> list[Any]:
    found = metric(reader, name)
    return [
        p
        for p in (found.data.data_points if found else ())
        if all((p.attributes or {}).get(k.replace("__", ".")) == v for k, v in attributes.items())
    ]


def total(reader: InMemoryMetricReader, name: str, attributes: dict[str, Any]) -> float:
    out = 0.0
    found = metric(reader, name)
    for p in found.data.data_points if found else ():
        if all((p.attributes or {}).get(k) == v for k, v in attributes.items()):
            out += p.count if isinstance(p, HistogramDataPoint) else p.value
    return out


def allow(event: HookEvent) -> None:
    return None


def broken(event: HookEvent) -> None:
    raise RuntimeError("hook exploded")


release = threading.Event()


def slow(event: HookEvent) -> None:
    release.wait(5)


HOOKS = [
    {"id": "check", "type": "beforeToolCall", "matcher": "readFile", "handler": allow},
    {"id": "broken", "type": "beforeToolCall", "matcher": "writeFile", "handler": broken},
    {
        "id": "slow",
        "type": "afterToolCall",
        "matcher": "readFile",
        "handler": slow,
        "timeout": 0.05,
    },
]


def instrumented_run(tracer: AgentTracer) -> None:
    """Two good reads, a failed write (its hook raises), then the operation fails."""

    def agent() -> None:
        with tracer.operation("worker") as op:
            with op.step() as step:
                step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
                step.run_tool("fs", "readFile", {"path": "b"}, lambda path: "text")
                with step.tool_call("fs", "writeFile", {"path": "c"}) as call:
                    call.set_result("disk full", success=False)
            raise KeyError("missing")

    with pytest.raises(KeyError):
        agent()


@pytest.fixture(scope="module")
def run() -> Iterator[TestPipeline]:
    release.clear()
    with pipeline(hooks=HOOKS) as pipe:
        instrumented_run(pipe.oh.tracer)
        assert pipe.oh.engine.flush(10.0)
        release.set()
        assert pipe.oh.force_flush(10.0)
        yield pipe


def test_tool_calls_are_counted_by_tool_and_outcome(run: TestPipeline) -> None:
    reads = {sc.GEN_AI_TOOL_NAME: "readFile", sc.ATTR_OUTCOME: "success"}
    writes = {sc.GEN_AI_TOOL_NAME: "writeFile", sc.ATTR_OUTCOME: "error"}
    assert total(run.reader, sc.METRIC_TOOL_CALLS, reads) == 2
    assert total(run.reader, sc.METRIC_TOOL_CALLS, writes) == 1
    (point,) = points(run.reader, sc.METRIC_TOOL_CALLS, gen_ai__tool__name="writeFile")
    assert dict(point.attributes) == {
        sc.GEN_AI_AGENT_NAME: "worker",
        sc.GEN_AI_TOOL_NAME: "writeFile",
        sc.GEN_AI_TOOL_TYPE: "function",
        sc.ATTR_OUTCOME: "error",
        sc.ERROR_TYPE: "_OTHER",
    }
    found = metric(run.reader, sc.METRIC_TOOL_CALLS)
    assert found is not None
    assert found.unit == "{call}"


def test_tool_durations_use_the_genai_boundaries_in_seconds(run: TestPipeline) -> None:
    found = metric(run.reader, sc.METRIC_EXECUTE_TOOL_DURATION)
    assert found is not None
    assert found.unit == "s"
    (point,) = points(run.reader, sc.METRIC_EXECUTE_TOOL_DURATION, gen_ai__tool__name="readFile")
    assert isinstance(point, HistogramDataPoint)
    assert point.count == 2
    assert tuple(point.explicit_bounds) == CLIENT_BOUNDS
    assert 0 <= point.min <= point.max < 1


def test_hook_runs_are_counted_and_timed_by_hook_and_outcome(run: TestPipeline) -> None:
    ok = {sc.ATTR_HOOK_ID: "check", sc.ATTR_OUTCOME: "ok", sc.ATTR_HOOK_EVENT: "before_tool_call"}
    assert total(run.reader, sc.METRIC_HOOK_INVOCATIONS, ok) == 2
    assert total(run.reader, sc.METRIC_HOOK_DURATION, ok) == 2
    (point,) = points(run.reader, sc.METRIC_HOOK_DURATION, otelhooks__hook__id="check")
    assert tuple(point.explicit_bounds) == SECOND_BOUNDS


def test_a_hook_that_raises_is_counted_as_an_error(run: TestPipeline) -> None:
    attrs = {sc.ATTR_HOOK_ID: "broken", sc.ATTR_OUTCOME: "error"}
    assert total(run.reader, sc.METRIC_HOOK_INVOCATIONS, attrs) == 1


def test_an_observer_past_its_deadline_is_counted_as_a_timeout(run: TestPipeline) -> None:
    attrs = {sc.ATTR_HOOK_ID: "slow", sc.ATTR_OUTCOME: "timeout"}
    assert total(run.reader, sc.METRIC_HOOK_INVOCATIONS, attrs) == 2


def test_a_failed_operation_counts_an_error_and_an_operation(run: TestPipeline) -> None:
    errors = {sc.GEN_AI_AGENT_NAME: "worker", sc.ERROR_TYPE: "KeyError"}
    assert total(run.reader, sc.METRIC_ERRORS, errors) == 1
    operations = {sc.GEN_AI_AGENT_NAME: "worker", sc.ATTR_OUTCOME: "error"}
    assert total(run.reader, sc.METRIC_OPERATIONS, operations) == 1
    (point,) = points(run.reader, sc.METRIC_INVOKE_AGENT_DURATION)
    assert point.count == 1
    assert point.explicit_bounds[0] == 0.1


def test_nothing_is_dropped_in_a_run_that_fits_the_queues(run: TestPipeline) -> None:
    assert points(run.reader, sc.METRIC_DROPPED) == []


# -- exemplars ------------------------------------------------------------------------------------


def tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]


def test_a_tool_duration_exemplar_names_the_tool_calls_trace_and_span() -> None:
    # The SDK's default filter (trace-based): the measurement was made inside a sampled span.
    with pipeline() as pipe:
        with pipe.oh.operation("worker") as op, op.step() as step:
            step.run_tool("fs", "readFile", {}, lambda: "text")
        (span,) = [s for s in pipe.spans() if s.name.startswith("execute_tool")]
        assert pipe.oh.force_flush(10.0)
        # One collection: the SDK's reservoirs start afresh at each.
        data = pipe.reader.get_metrics_data()
        assert data is not None
        (scope,) = data.resource_metrics[0].scope_metrics
        found = {m.name: m.data.data_points for m in scope.metrics}
    (point,) = found[sc.METRIC_EXECUTE_TOOL_DURATION]
    (exemplar,) = point.exemplars
    assert span.context is not None
    assert (exemplar.trace_id, exemplar.span_id) == (span.context.trace_id, span.context.span_id)
    assert exemplar.value == point.sum
    (counted,) = found[sc.METRIC_TOOL_CALLS]
    assert [e.span_id for e in counted.exemplars] == [span.context.span_id]


def test_no_exemplars_when_the_providers_filter_is_always_off() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], exemplar_filter=AlwaysOffExemplarFilter())
    tracer, _, metrics = agent_on(provider)
    with tracer.operation("worker") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, lambda: "text")
    assert metrics.flush(10.0)
    (point,) = points(reader, sc.METRIC_EXECUTE_TOOL_DURATION)
    assert point.count == 1
    assert list(point.exemplars) == []


# -- a user's own MeterProvider -----------------------------------------------------------------


def agent_on(
    meter_provider: otel_metrics.MeterProvider,
) -> tuple[AgentTracer, InMemorySpanExporter, AgentMetrics]:
    metrics = AgentMetrics(meter_provider)
    hooks = HookSpanProcessor(metrics=metrics)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(hooks)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return AgentTracer(tracer_provider=provider, hooks=hooks, metrics=metrics), exporter, metrics


class OnlyGetMeter(otel_metrics.MeterProvider):
    """A user's provider that offers nothing but the API's ``get_meter`` (any other attribute
    otelhooks reached for would raise), and notes the thread of every measurement."""

    def __init__(self, inner: MeterProvider) -> None:
        self._inner = inner
        self.threads: set[str] = set()

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> otel_metrics.Meter:
        meter = self._inner.get_meter(name, *args, **kwargs)
        assert isinstance(meter, Meter)
        provider = self

        class Watched(Meter):
            def __init__(self) -> None:
                pass

            def create_counter(self, *a: Any, **k: Any) -> Any:
                return watch(meter.create_counter(*a, **k), "add")

            def create_histogram(self, *a: Any, **k: Any) -> Any:
                return watch(meter.create_histogram(*a, **k), "record")

        def watch(instrument: Any, method: str) -> Any:
            measure = getattr(instrument, method)

            class Instrument:
                def __getattr__(self, name: str) -> Any:
                    if name != method:
                        raise AttributeError(name)

                    def call(*a: Any, **k: Any) -> None:
                        provider.threads.add(threading.current_thread().name)
                        measure(*a, **k)

                    return call

            return Instrument()

        return Watched()


def test_a_users_provider_is_used_through_get_meter_alone_and_never_on_the_agents_thread() -> None:
    reader = InMemoryMetricReader()
    users = OnlyGetMeter(MeterProvider(metric_readers=[reader]))
    tracer, _, metrics = agent_on(users)
    instrumented_run(tracer)
    assert metrics.flush(10.0)
    assert total(reader, sc.METRIC_TOOL_CALLS, {sc.ATTR_OUTCOME: "success"}) == 2
    assert total(reader, sc.METRIC_ERRORS, {sc.ERROR_TYPE: "KeyError"}) == 1
    assert users.threads == {"otelhooks-metrics"}


def test_a_users_provider_gets_the_boundaries_without_views() -> None:
    reader = InMemoryMetricReader()
    tracer, _, metrics = agent_on(MeterProvider(metric_readers=[reader]))
    with tracer.operation("worker") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, lambda: "text")
    assert metrics.flush(10.0)
    (point,) = points(reader, sc.METRIC_EXECUTE_TOOL_DURATION)
    assert tuple(point.explicit_bounds) == CLIENT_BOUNDS


def test_a_users_views_apply_to_otelhooks_instruments() -> None:
    reader = InMemoryMetricReader()
    views: Sequence[View] = [
        View(
            instrument_name=sc.METRIC_EXECUTE_TOOL_DURATION,
            name="tool.seconds",
            aggregation=ExplicitBucketHistogramAggregation((1.0, 10.0)),
            attribute_keys={sc.GEN_AI_TOOL_NAME},
        ),
        View(instrument_name=sc.METRIC_OPERATIONS, aggregation=_drop()),
    ]
    tracer, _, metrics = agent_on(MeterProvider(metric_readers=[reader], views=views))
    with tracer.operation("worker") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, lambda: "text")
    assert metrics.flush(10.0)
    (point,) = points(reader, "tool.seconds")
    assert tuple(point.explicit_bounds) == (1.0, 10.0)
    assert dict(point.attributes) == {sc.GEN_AI_TOOL_NAME: "readFile"}
    assert metric(reader, sc.METRIC_OPERATIONS) is None


def _drop() -> Any:
    from opentelemetry.sdk.metrics.view import DropAggregation

    return DropAggregation()


# -- the worker: shutdown, overflow, fork ------------------------------------------------------


def test_shutdown_records_what_was_queued_and_counts_what_comes_after() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    metrics.tool_call.record(0.5, {sc.GEN_AI_TOOL_NAME: "readFile"})
    assert metrics.shutdown(5.0)
    assert total(reader, sc.METRIC_TOOL_CALLS, {}) == 1
    metrics.tool_call.record(0.5, {sc.GEN_AI_TOOL_NAME: "readFile"})  # neither raises nor counts
    assert total(reader, sc.METRIC_TOOL_CALLS, {}) == 1
    dropped = {sc.ATTR_DROP_SOURCE: "metrics", sc.ATTR_DROP_REASON: "shutdown"}
    assert total(reader, sc.METRIC_DROPPED, dropped) == 1


def test_a_full_queue_drops_and_counts_every_measurement_it_does_not_record() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]), max_queue_size=4)
    for _ in range(2000):
        metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "readFile"})
    assert metrics.flush(10.0)
    recorded = total(reader, sc.METRIC_TOOL_CALLS, {})
    dropped = total(reader, sc.METRIC_DROPPED, {sc.ATTR_DROP_SOURCE: "metrics"})
    assert recorded + dropped == 2000
    assert dropped == metrics.queue_dropped


def test_attributes_are_copied_when_the_measurement_is_made() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    attrs = {sc.GEN_AI_TOOL_NAME: "readFile"}
    for tool in ("a", "b", "c"):
        attrs[sc.GEN_AI_TOOL_NAME] = tool
        metrics.tool_calls.add(1, attrs)
    assert metrics.flush(10.0)
    assert len(points(reader, sc.METRIC_TOOL_CALLS)) == 3


def test_counter_increments_sum_per_attribute_set_whatever_the_batch() -> None:
    # The worker adds a batch's increments of one attribute set at once: the sums must be the
    # calls' own, per set, and the histogram beside the counter keeps every measurement.
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    for i in range(900):
        metrics.tool_call.record(0.01, {sc.GEN_AI_TOOL_NAME: "abc"[i % 3]})
        metrics.tokens_saved.add(i % 4, {sc.GEN_AI_TOOL_NAME: "abc"[i % 3]})
    assert metrics.flush(10.0)
    for tool, saved in (("a", 450), ("b", 450), ("c", 450)):
        assert total(reader, sc.METRIC_TOOL_CALLS, {sc.GEN_AI_TOOL_NAME: tool}) == 300
        assert total(reader, sc.METRIC_EXECUTE_TOOL_DURATION, {sc.GEN_AI_TOOL_NAME: tool}) == 300
        assert total(reader, sc.METRIC_COMPACT_TOKENS_SAVED, {sc.GEN_AI_TOOL_NAME: tool}) == saved


def test_a_new_tool_name_per_call_is_bounded_by_the_sdks_cardinality_limit() -> None:
    # Tool names come from the agent (an MCP server can offer any), and otelhooks aggregates
    # nothing itself: the SDK's cardinality limit is what keeps memory bounded. SDK 1.45.0 and
    # 1.45.1 had none, which is why pyproject.toml's floor is 1.45.2 (.ci/run tests the floor).
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    for i in range(2500):
        metrics.tool_call.record(0.01, {sc.GEN_AI_TOOL_NAME: f"tool-{i}"})
    assert metrics.flush(10.0)
    durations = points(reader, sc.METRIC_EXECUTE_TOOL_DURATION)
    assert len(durations) <= 2001  # the limit, with the overflow point among them
    overflow = [p for p in durations if (p.attributes or {}).get("otel.metric.overflow")]
    assert len(overflow) == 1
    assert sum(p.count for p in durations) == 2500
    assert total(reader, sc.METRIC_TOOL_CALLS, {}) == 2500


def test_a_counter_with_a_sequence_attribute_still_counts_every_increment() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    for _ in range(3):
        metrics.tool_calls.add(2, {"otelhooks.hook.matched": ["a", "b"]})
    assert metrics.flush(10.0)
    assert total(reader, sc.METRIC_TOOL_CALLS, {}) == 6


AT_EXIT = """
import sys
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from otelhooks import AgentMetrics
exporter = ConsoleMetricExporter(out=sys.stdout)
reader = PeriodicExportingMetricReader(exporter, export_interval_millis=600_000)
metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
metrics.tool_call.record(0.25, {"gen_ai.tool.name": "readFile"})
"""


def test_what_is_queued_at_exit_reaches_the_providers_exit_export() -> None:
    # A user's own provider, shut down by the SDK at interpreter exit; nobody calls flush().
    out = subprocess.run(
        [sys.executable, "-c", AT_EXIT], capture_output=True, text=True, timeout=60, check=True
    )
    assert '"name": "otelhooks.tool.calls"' in out.stdout
    assert '"name": "gen_ai.execute_tool.duration"' in out.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_records_its_own_measurements() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "parent"})
    assert metrics.flush(10.0)
    pid = os.fork()
    if pid == 0:  # the child: its worker thread starts anew on its first measurement
        code = 1
        try:
            metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "child"})
            if metrics.flush(10.0) and total(reader, sc.METRIC_TOOL_CALLS, {}) == 2:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert total(reader, sc.METRIC_TOOL_CALLS, {}) == 1  # the child's count stayed there


# -- Prometheus, scraped over HTTP ----------------------------------------------------------------


def test_a_prometheus_scrape_shows_the_runs_metrics() -> None:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = server.server_port
    oh = configure(
        service_name="scrape",
        hooks=[{"id": "check", "type": "beforeToolCall", "handler": allow}],
        metric_readers=[PrometheusMetricReader(registry=registry)],
        otlp=False,
        set_global=False,
        structured_logging=False,
    )
    try:
        with oh.operation("worker") as op, op.step() as step:
            step.run_tool("fs", "readFile", {}, lambda: "text")
        assert oh.force_flush(10.0)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        oh.shutdown(5.0)
        server.shutdown()
        thread.join(5)
    lines = text.splitlines()

    def sample(name: str, *labels: str) -> bool:
        return any(line.startswith(name + "{") and all(x in line for x in labels) for line in lines)

    assert sample("otelhooks_tool_calls_total", 'gen_ai_tool_name="readFile"')
    assert sample("gen_ai_execute_tool_duration_seconds_bucket", 'le="0.01"')
    assert sample("otelhooks_hook_invocations_total", 'otelhooks_hook_id="check"')
    assert sample("otelhooks_hook_duration_seconds_count", 'otelhooks_outcome="ok"')


# -- deprecated options ------------------------------------------------------------------------


def test_configure_sdk_metrics_is_deprecated_and_changes_nothing() -> None:
    with pytest.warns(DeprecationWarning, match="sdk_metrics"):
        oh = configure(otlp=False, set_global=False, structured_logging=False, sdk_metrics=True)
    oh.shutdown(5.0)


def test_agent_metrics_sdk_instruments_is_deprecated() -> None:
    with pytest.warns(DeprecationWarning, match="sdk_instruments"):
        AgentMetrics(MeterProvider(), sdk_instruments=True)


def test_a_count_and_a_duration_are_in_the_reader_once_flush_returns() -> None:
    # What the queue means for a reader: a measurement is there once flush() returns.
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    metrics.tool_call.record(0.02, {sc.GEN_AI_TOOL_NAME: "readFile"})
    assert metrics.flush(10.0)
    (point,) = points(reader, sc.METRIC_EXECUTE_TOOL_DURATION)
    assert isinstance(point, HistogramDataPoint)
    assert point.count == 1
    (count,) = points(reader, sc.METRIC_TOOL_CALLS)
    assert isinstance(count, NumberDataPoint)
    assert count.value == 1
