"""The benchmark cases: the bare-SDK floor and otelhooks, each one unit of agent work.

A case is built once (its own ``TracerProvider``, batch processor and no-op exporter, so cases
never share a queue) and then driven in rounds by ``run.py``. Each round opens the enclosing
spans untimed (``round_start``), runs ``run(n)`` timed, and closes them untimed (``round_end``),
so long-lived operation and step spans never grow without bound.

The floor is the idiomatic bare-SDK equivalent of one otelhooks tool call: a current span with the
same name and the same attributes (read off a real otelhooks ``execute_tool`` span at set-up, so
the two cannot drift apart), one span event, the end attributes set at the end, exported in
batches to a no-op exporter.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import AgentTracer, HookSpanProcessor
from otelhooks import _semconv as sc
from otelhooks._export import CountingBatchSpanProcessor
from otelhooks._metrics import AgentMetrics, metric_views

__all__ = ["ARGS", "CASES", "Bench", "Case", "NoopExporter", "tool_metric_shape", "tool_span_shape"]

QUEUE = 65_536  # every batch processor gets the same queue, so none drops in a burst
ARGS: dict[str, Any] = {"path": "notes/a.txt", "encoding": "utf-8"}
ARGS_JSON = json.dumps(ARGS)
RESULT = "hello, world"
END_KEYS = ("otelhooks.tool.outcome", "otelhooks.tool.result_size")


class NoopExporter(SpanExporter):
    """Accepts every batch and does nothing: the export cost is the pipeline's, not the wire's."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _batch(exporter: SpanExporter | None = None) -> BatchSpanProcessor:
    return BatchSpanProcessor(exporter or NoopExporter(), max_queue_size=QUEUE)


class Bench:
    """One built case. ``run(n)`` is the timed part; everything else is untimed."""

    unit: Callable[[], None]

    def round_start(self) -> None:
        return None

    def round_end(self) -> None:
        return None

    def run(self, n: int) -> None:
        unit = self.unit
        for _ in range(n):
            unit()

    def close(self) -> None:
        return None

    def dropped(self) -> int:
        """Observer events this case's pipeline dropped so far: a run that drops measured less
        work than it claims (``_callgrind.py`` refuses it). Spans have a queue of 65,536."""
        return 0


@dataclass(frozen=True)
class Case:
    """A named benchmark case and how to build it."""

    key: str
    label: str
    group: str  # "tool" (per tool call) or "step" (per agent step)
    make: Callable[[], Bench]
    peer: bool = False
    tags: tuple[str, ...] = field(default=())


# -- the shape of an otelhooks tool span ---------------------------------------------------------


def tool_span_shape(
    hooks_config: list[dict[str, Any]] | None = None,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Name, start attributes and end attributes of a real otelhooks ``execute_tool`` span, with
    ``hooks_config`` registered (a matching hook adds ``otelhooks.hook.matched``). A sequence
    attribute is given as a list, as otelhooks gives it: the SDK checks a tuple at a higher cost
    (see ``ToolCall._open``), and the floor must not be the dearer way to write the same span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    hooks = HookSpanProcessor(metrics=AgentMetrics(NoOpMeterProvider()))
    if hooks_config:
        hooks.register(hooks_config)
    provider.add_span_processor(hooks)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks, capture_content=False)
    with (
        tracer.operation("bench") as op,
        op.step() as step,
        step.tool_call("fs", "readFile", ARGS) as call,
    ):
        call.set_result(RESULT)
    span: ReadableSpan = next(s for s in exporter.get_finished_spans() if s.name.startswith("ex"))
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()}
    end = {k: attrs.pop(k) for k in END_KEYS}
    provider.shutdown()
    return span.name, attrs, end


# The metrics one tool call records (its hooks' runs included); operations and steps record
# theirs once per round, as the floor's enclosing span has none.
_PER_CALL_METRICS = (
    sc.METRIC_TOOL_CALLS,
    sc.METRIC_EXECUTE_TOOL_DURATION,
    sc.METRIC_HOOK_INVOCATIONS,
    sc.METRIC_HOOK_DURATION,
)


def tool_metric_shape(
    hooks_config: list[dict[str, Any]] | None = None,
) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, name, attributes)`` of every SDK measurement one otelhooks tool call makes with
    ``hooks_config`` registered (kind ``counter`` or ``histogram``), read off a real run's
    reader, so the metrics floor cannot drift from what otelhooks records."""
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader], views=metric_views()))
    provider = TracerProvider()
    hooks = HookSpanProcessor(metrics=metrics)
    if hooks_config:
        hooks.register(hooks_config)
    provider.add_span_processor(hooks)
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks, capture_content=False)
    with (
        tracer.operation("bench") as op,
        op.step() as step,
        step.tool_call("fs", "readFile", ARGS) as call,
    ):
        call.set_result(RESULT)
    tracer.engine.flush(10.0)
    metrics.flush(10.0)
    data = reader.get_metrics_data()
    shape: list[tuple[str, str, dict[str, Any]]] = []
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name not in _PER_CALL_METRICS:
                    continue
                for point in metric.data.data_points:
                    kind = "histogram" if isinstance(point, HistogramDataPoint) else "counter"
                    shape.append((kind, metric.name, dict(point.attributes or {})))
    metrics.shutdown(5.0)
    provider.shutdown()
    return shape


# -- the floor -----------------------------------------------------------------------------------


class FloorTool(Bench):
    """Bare SDK: one current span of exactly otelhooks' shape (name, start and end attributes; no
    span event, as otelhooks' span has none), batch + no-op export. ``distinct``: a new tool
    name per call, as the cold-lookup case has. ``hooks``: the shape of the span with those hooks
    registered (one more attribute when they match)."""

    def __init__(
        self,
        *,
        event: bool = False,
        distinct: bool = False,
        hooks: list[dict[str, Any]] | None = None,
        metrics: bool = False,
    ) -> None:
        self.provider = TracerProvider()
        self.provider.add_span_processor(_batch())
        tracer = self.provider.get_tracer("floor")
        name, start, end = tool_span_shape(hooks)
        self._tracer = tracer
        self._token: object | None = None
        self._parent: trace.Span | None = None
        if metrics:
            self.unit = _measured_unit(tracer, name, start, end, hooks)
            return
        self._tracer = tracer
        self._token: object | None = None
        self._parent: trace.Span | None = None

        names = _distinct_names("execute_tool ") if distinct else None
        if event:

            def unit() -> None:
                with tracer.start_as_current_span(name, attributes=start) as span:
                    span.add_event("tool_result")
                    span.set_attributes(end)

        elif names is not None:

            def unit() -> None:
                with tracer.start_as_current_span(next(names), attributes=start) as span:
                    span.set_attributes(end)

        else:

            def unit() -> None:
                with tracer.start_as_current_span(name, attributes=start) as span:
                    span.set_attributes(end)

        self.unit = unit

    def round_start(self) -> None:
        # The otelhooks tool span has a step span as its parent: give the floor one too.
        self._parent = self._tracer.start_span("step 0")
        self._token = otel_context.attach(trace.set_span_in_context(self._parent))

    def round_end(self) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]
        assert self._parent is not None
        self._parent.end()
        self.provider.force_flush()

    def close(self) -> None:
        self.provider.shutdown()


def _measured_unit(
    tracer: trace.Tracer,
    name: str,
    start: dict[str, Any],
    end: dict[str, Any],
    hooks: list[dict[str, Any]] | None,
) -> Callable[[], None]:
    """The floor span plus, made in place inside it the idiomatic way, each SDK measurement an
    otelhooks tool call makes (same instruments, names, boundaries and attributes), on a
    ``MeterProvider`` with a reader."""
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()], views=metric_views()).get_meter(
        "otelhooks"
    )
    calls: list[tuple[Callable[..., None], bool, dict[str, Any]]] = []
    for kind, metric_name, attributes in tool_metric_shape(hooks):
        if kind == "counter":
            calls.append((meter.create_counter(metric_name).add, True, attributes))
        else:
            calls.append((meter.create_histogram(metric_name, unit="s").record, False, attributes))
    clock = time.perf_counter

    def unit() -> None:
        began = clock()
        with tracer.start_as_current_span(name, attributes=start) as span:
            span.set_attributes(end)
            elapsed = clock() - began
            for measure, counts, attributes in calls:
                measure(1 if counts else elapsed, attributes)

    return unit


class FloorStep(Bench):
    """Bare SDK: the five spans of an agent step (step, chat, three tool calls), same shapes."""

    def __init__(self) -> None:
        self.provider = TracerProvider()
        self.provider.add_span_processor(_batch())
        tracer = self.provider.get_tracer("floor")
        name, start, end = tool_span_shape()
        self._tracer = tracer
        self._token: object | None = None
        self._parent: trace.Span | None = None
        counter = iter(range(1 << 62))

        def unit() -> None:
            index = next(counter)
            with tracer.start_as_current_span(
                f"step {index}",
                attributes={
                    "gen_ai.operation.name": "step",
                    "otelhooks.step.index": index,
                    "otelhooks.operation.id": "op_bench",
                },
            ) as step:
                with tracer.start_as_current_span(
                    "chat scripted",
                    kind=trace.SpanKind.CLIENT,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "otelhooks",
                        "gen_ai.request.model": "scripted",
                    },
                ) as chat:
                    chat.set_attributes(
                        {
                            "gen_ai.usage.input_tokens": 12,
                            "gen_ai.usage.output_tokens": 5,
                            "gen_ai.response.model": "scripted",
                        }
                    )
                for _ in range(3):
                    with tracer.start_as_current_span(name, attributes=start) as span:
                        span.set_attributes(end)
                step.set_attribute("otelhooks.step.tool_calls", 3)

        self.unit = unit

    def round_start(self) -> None:
        self._parent = self._tracer.start_span("invoke_agent bench")
        self._token = otel_context.attach(trace.set_span_in_context(self._parent))

    def round_end(self) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]
        assert self._parent is not None
        self._parent.end()
        self.provider.force_flush()

    def close(self) -> None:
        self.provider.shutdown()


# -- otelhooks -----------------------------------------------------------------------------------


def _noop(event: Any) -> None:
    return None


# More distinct tool names than the registry's match cache holds (4,096): every lookup is cold.
DISTINCT_TOOLS = 10_000


def _distinct_names(prefix: str) -> Any:
    return itertools.cycle([f"{prefix}tool_{i:05d}" for i in range(DISTINCT_TOOLS)])


def nonmatching_hooks(count: int) -> list[dict[str, Any]]:
    """``count`` tool hooks that never match ``fs/readFile``, spread over the tool events: exact
    names of other tools, and every tenth one a regex (``/re/``, or LobeHub's regex matcher)."""
    events = (
        "before_tool_call",
        "after_tool_call",
        "PreToolUse",
        "PostToolUse",
        "tool_result_persist",
    )
    hooks: list[dict[str, Any]] = []
    for i in range(count):
        event, matcher = events[i % len(events)], f"tool{i}"
        if i % 10 == 9:
            if (i // 10) % 2:
                event, matcher = "afterToolCall", f"^db{i}/"
            else:
                matcher = f"/^shell{i}\\/.*$/"
        hooks.append({"id": f"other-{i}", "type": event, "matcher": matcher, "handler": _noop})
    return hooks


def matching_observers(count: int) -> list[dict[str, Any]]:
    """``count`` observers of ``after_tool_call`` on ``readFile`` (run off the hot path)."""
    return [
        {"id": f"watch-{i}", "type": "PostToolUse", "matcher": "readFile", "handler": _noop}
        for i in range(count)
    ]


class OtelhooksBench(Bench):
    """An otelhooks pipeline as ``otelhooks.configure`` builds it: the hook processor, a counting
    batch processor with a no-op exporter, and (``metrics=True``) a real ``MeterProvider`` with a
    reader. ``metrics=False`` records into the no-op meter provider instead."""

    def __init__(
        self,
        *,
        hooks: list[dict[str, Any]],
        metrics: bool = True,
        sdk_metrics: bool = False,
        user_meter_provider: bool = False,
    ) -> None:
        self.reader: InMemoryMetricReader | None = None
        if user_meter_provider:
            # A user's own SDK MeterProvider (their reader, otelhooks' views): every measurement
            # goes through the SDK's synchronous instruments.
            self.oh = None
            self.reader = InMemoryMetricReader()
            self.meter_provider = MeterProvider(metric_readers=[self.reader], views=metric_views())
            self.provider = TracerProvider()
            processor = HookSpanProcessor(metrics=AgentMetrics(self.meter_provider))
            processor.register(hooks)
            self.provider.add_span_processor(processor)
            self.provider.add_span_processor(
                CountingBatchSpanProcessor(NoopExporter(), max_queue_size=QUEUE)
            )
            self.tracer = AgentTracer(tracer_provider=self.provider, hooks=processor)
        elif metrics:
            self.reader = InMemoryMetricReader()
            self.oh: Any = otelhooks.configure(
                service_name="bench",
                hooks=hooks,
                span_exporters=[NoopExporter()],
                metric_readers=[self.reader],
                max_queue_size=QUEUE,
                set_global=False,
                structured_logging=False,
                otlp=False,
                sdk_metrics=sdk_metrics,
            )
            self.tracer: AgentTracer = self.oh.tracer
            self.provider: TracerProvider = self.oh.tracer_provider
        else:
            self.oh = None
            self.provider = TracerProvider()
            processor = HookSpanProcessor(metrics=AgentMetrics(NoOpMeterProvider()))
            processor.register(hooks)
            self.provider.add_span_processor(processor)
            self.provider.add_span_processor(
                CountingBatchSpanProcessor(NoopExporter(), max_queue_size=QUEUE)
            )
            self.tracer = AgentTracer(tracer_provider=self.provider, hooks=processor)
        self._op: Any = None
        self._scopes: list[Any] = []

    def round_start(self) -> None:
        op = self.tracer.operation("bench")
        op.__enter__()
        self._scopes = [op]
        self._op = op

    def round_end(self) -> None:
        for scope in reversed(self._scopes):
            scope.__exit__(None, None, None)
        self._scopes = []
        self.provider.force_flush()
        self.tracer.metrics.flush()  # the metrics worker records what the round measured

    def close(self) -> None:
        if self.oh is not None:
            self.oh.shutdown(timeout_s=5.0)
        else:
            self.provider.shutdown()

    def dropped(self) -> int:
        return self.tracer.engine.observers_dropped + self.tracer.metrics.queue_dropped


class OtelhooksTool(OtelhooksBench):
    """One tool call: ``before_tool_call`` + ``tool_result_persist`` + ``after_tool_call`` on one
    ``execute_tool`` span, inside an open step. ``distinct``: a new tool name per call."""

    def __init__(self, *, distinct: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if distinct:
            names = _distinct_names("")

            def unit() -> None:
                with self._step.tool_call("fs", next(names), ARGS) as call:
                    if call.should_run:
                        call.set_result(RESULT)

        else:

            def unit() -> None:
                with self._step.tool_call("fs", "readFile", ARGS) as call:
                    if call.should_run:
                        call.set_result(RESULT)

        self.unit = unit

    def round_start(self) -> None:
        super().round_start()
        step = self._op.step()
        step.__enter__()
        self._scopes.append(step)
        self._step = step


class OtelhooksStep(OtelhooksBench):
    """One agent step: ``step`` span, ``chat`` span, three tool calls."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

        def unit() -> None:
            with self._op.step() as step:
                with step.llm("scripted") as llm:
                    llm.record("calling tools", input_tokens=12, output_tokens=5)
                for _ in range(3):
                    with step.tool_call("fs", "readFile", ARGS) as call:
                        if call.should_run:
                            call.set_result(RESULT)

        self.unit = unit


CASES: list[Case] = [
    Case("floor", "bare OTel SDK span, otelhooks' exact shape (floor)", "tool", FloorTool),
    Case(
        "floor_event",
        "bare OTel SDK span + a span event (the old floor)",
        "tool",
        lambda: FloorTool(event=True),
        tags=("extra",),
    ),
    Case(
        "floor_distinct",
        "bare OTel SDK span, a new tool name per call",
        "tool",
        lambda: FloorTool(distinct=True),
        tags=("extra",),
    ),
    Case(
        "floor_observed",
        "bare OTel SDK span, the shape of an observed call (+ otelhooks.hook.matched)",
        "tool",
        lambda: FloorTool(hooks=matching_observers(1)),
        tags=("extra",),
    ),
    Case(
        "floor_metrics",
        "bare OTel SDK span + the SDK measurements otelhooks makes per tool call, in place",
        "tool",
        lambda: FloorTool(metrics=True),
        tags=("extra",),
    ),
    Case(
        "floor_observed_metrics",
        "floor_observed + the SDK measurements of an observed call (its hook run too), in place",
        "tool",
        lambda: FloorTool(hooks=matching_observers(1), metrics=True),
        tags=("extra",),
    ),
    Case("oh_0", "otelhooks, 0 hooks", "tool", lambda: OtelhooksTool(hooks=[])),
    Case(
        "oh_0_sdk_metrics",
        "otelhooks, 0 hooks, metrics through the SDK",
        "tool",
        lambda: OtelhooksTool(hooks=[], sdk_metrics=True),
    ),
    Case(
        "oh_0_user_meter_provider",
        "otelhooks, 0 hooks, AgentMetrics on a user's SDK MeterProvider",
        "tool",
        lambda: OtelhooksTool(hooks=[], user_meter_provider=True),
    ),
    Case(
        "oh_0_cold",
        "otelhooks, 0 hooks, a new tool name per call",
        "tool",
        lambda: OtelhooksTool(hooks=[], distinct=True),
        tags=("extra",),
    ),
    Case(
        "oh_1_observer",
        "otelhooks, 1 matching no-op observer",
        "tool",
        lambda: OtelhooksTool(hooks=matching_observers(1)),
    ),
    Case(
        "oh_0_nometrics",
        "otelhooks, 0 hooks, no metrics",
        "tool",
        lambda: OtelhooksTool(hooks=[], metrics=False),
    ),
    Case(
        "oh_10",
        "otelhooks, 10 non-matching hooks",
        "tool",
        lambda: OtelhooksTool(hooks=nonmatching_hooks(10)),
    ),
    Case(
        "oh_100",
        "otelhooks, 100 non-matching hooks",
        "tool",
        lambda: OtelhooksTool(hooks=nonmatching_hooks(100)),
    ),
    Case(
        "oh_100_cold",
        "otelhooks, 100 non-matching hooks, a new tool name per call",
        "tool",
        lambda: OtelhooksTool(hooks=nonmatching_hooks(100), distinct=True),
    ),
    Case(
        "oh_100_nometrics",
        "otelhooks, 100 non-matching hooks, no metrics",
        "tool",
        lambda: OtelhooksTool(hooks=nonmatching_hooks(100), metrics=False),
    ),
    Case(
        "oh_10_observers",
        "otelhooks, 10 matching observers",
        "tool",
        lambda: OtelhooksTool(hooks=matching_observers(10)),
    ),
    Case("floor_step", "bare OTel SDK, 5 spans of a step (floor)", "step", FloorStep),
    Case("oh_step", "otelhooks agent step, 0 hooks", "step", lambda: OtelhooksStep(hooks=[])),
    Case(
        "oh_step_nometrics",
        "otelhooks agent step, 0 hooks, no metrics",
        "step",
        lambda: OtelhooksStep(hooks=[], metrics=False),
    ),
    Case(
        "oh_step_100",
        "otelhooks agent step, 100 non-matching hooks",
        "step",
        lambda: OtelhooksStep(hooks=nonmatching_hooks(100)),
    ),
]
