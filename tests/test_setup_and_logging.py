"""configure() wiring, export to a file, and log lines that carry the trace context."""

from __future__ import annotations

from pathlib import Path

import structlog
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from otelhooks import add_trace_context, configure, read_otlp_json_lines


def test_configure_writes_spans_to_the_traces_file(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    oh = configure(traces_out=out, set_global=False, structured_logging=False, otlp=False)
    with oh.operation("helper") as op, op.step() as step:
        step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
    oh.shutdown()
    names = [s["name"] for s in read_otlp_json_lines(out)]
    assert names.count("invoke_agent helper") == 1
    assert "execute_tool add" in names


def test_configure_registers_global_hooks(tmp_path: Path) -> None:
    seen: list[str] = []
    oh = configure(
        hooks=[{"id": "h", "type": "afterToolCall", "handler": lambda e: seen.append(e.apiName)}],
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    with oh.operation("helper") as op, op.step() as step:
        step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
    oh.shutdown()
    assert seen == ["add"]


def test_dropped_spans_are_counted_in_the_dropped_metric(tmp_path: Path) -> None:
    reader = InMemoryMetricReader()
    oh = configure(
        traces_out=tmp_path / "t.jsonl",
        max_queue_size=5,
        max_export_batch_size=5,
        metric_readers=[reader],
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    tracer = oh.tracer_provider.get_tracer("burst")
    for _ in range(500):
        tracer.start_span("x").end()
    oh.shutdown()
    data = reader.get_metrics_data()
    assert data is not None
    dropped = [
        point
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "otelhooks.dropped"
        for point in metric.data.data_points
    ]
    exported = len(read_otlp_json_lines(tmp_path / "t.jsonl"))
    total_dropped = sum(int(p.value) for p in dropped)
    assert total_dropped > 0
    assert exported + total_dropped == 500
    assert {p.attributes["otelhooks.drop.source"] for p in dropped} == {"span_export"}


def test_log_lines_inside_a_span_carry_trace_and_span_ids() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("t")
    with structlog.testing.capture_logs(processors=[add_trace_context]) as logs:
        log = structlog.get_logger()
        with tracer.start_as_current_span("work") as span:
            log.info("inside")
        log.info("outside")
    ctx = span.get_span_context()
    assert logs[0]["trace_id"] == format(ctx.trace_id, "032x")
    assert logs[0]["span_id"] == format(ctx.span_id, "016x")
    assert "trace_id" not in logs[1]
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_a_shut_down_pipeline_is_not_kept_alive_until_interpreter_exit() -> None:
    # configure() registers shutdown for exit; shutting down earlier lets the pipeline go.
    import gc
    import weakref

    oh = configure(set_global=False, structured_logging=False, otlp=False)
    with oh.operation("agent") as op, op.step() as step:
        step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
    gone = weakref.ref(oh)
    oh.shutdown(5.0)
    del oh, op, step
    gc.collect()
    assert gone() is None
