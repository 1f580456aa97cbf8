"""Helpers for testing your own hooks the way otelhooks tests its own.

- :func:`pipeline`: a complete in-memory pipeline (``configure()`` with an in-memory span
  exporter and metric reader, nothing global, nothing on the network), with the spans and metric
  totals it recorded.
- :func:`capture_events`: every lifecycle event an engine dispatches, as payloads;
  :class:`Recorder`, the hook handler behind it, for hooks you register yourself.
- :func:`metric_points` / :func:`metric_total`: what an in-memory metric reader holds
  (:data:`DataPoint`: the SDK's number or histogram point that :func:`metric_points` returns).
- :func:`run_cli`: the ``otelhooks`` command run in this process, for its exit code (its output
  on this process's stdout and stderr, where pytest's ``capsys`` reads it).
- :func:`deterministic`: sequential event ids and a stepping clock for payloads, and
  :class:`SequentialIdGenerator` for trace and span ids, so recorded output can be compared whole.

With pytest, the ``otelhooks_pipeline`` fixture (registered by the package's pytest plugin) gives
a fresh :class:`TestPipeline` per test.

Example:
    >>> from otelhooks import Block
    >>> from otelhooks.testing import pipeline
    >>> guard = {"id": "no-rm", "type": "beforeToolCall", "matcher": "rm",
    ...          "handler": lambda event: Block("rm is not allowed")}
    >>> with pipeline(hooks=[guard]) as pipe:
    ...     with pipe.oh.operation("helper") as op, op.step() as step:
    ...         result = step.run_tool("", "rm", {"path": "/"}, lambda path: "removed")
    ...     pipe.spans("execute_tool rm")[0].attributes["otelhooks.hook.decision"]
    'deny'
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from otelhooks._engine import HooksEngine
from otelhooks._events import EVENTS, HookEvent
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer
from otelhooks._pipeline import OtelHooks
from otelhooks._setup import configure
from otelhooks._sources import SOURCES

__all__ = [
    "DataPoint",
    "EventCapture",
    "Recorder",
    "SequentialIdGenerator",
    "TestPipeline",
    "capture_events",
    "deterministic",
    "metric_points",
    "metric_total",
    "pipeline",
    "run_cli",
]

# What metric_points returns: a counter's or gauge's point, or a histogram's (the SDK's own
# classes), for annotating a test's helpers.
DataPoint: TypeAlias = NumberDataPoint | HistogramDataPoint


def metric_points(
    reader: InMemoryMetricReader, name: str, attributes: Mapping[str, Any] | None = None
) -> list[DataPoint]:
    """The data points of metric ``name`` whose attributes include ``attributes``.

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> reader = InMemoryMetricReader()
        >>> counter = MeterProvider(metric_readers=[reader]).get_meter("m").create_counter("c")
        >>> counter.add(2, {"k": "v"})
        >>> [p.value for p in metric_points(reader, "c", {"k": "v"})]
        [2]
    """
    wanted = dict(attributes or {})
    data = reader.get_metrics_data()
    points: list[DataPoint] = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    attrs = dict(point.attributes or {})
                    wanted_here = all(attrs.get(k) == v for k, v in wanted.items())
                    if wanted_here and isinstance(point, NumberDataPoint | HistogramDataPoint):
                        points.append(point)
    return points


def metric_total(
    reader: InMemoryMetricReader, name: str, attributes: Mapping[str, Any] | None = None
) -> float:
    """A counter's sum, or a histogram's count, over the points whose attributes include
    ``attributes`` (see :func:`metric_points`)."""
    return sum(
        p.count if isinstance(p, HistogramDataPoint) else p.value
        for p in metric_points(reader, name, attributes)
    )


@dataclass
class TestPipeline:
    """What :func:`pipeline` set up, and what it recorded.

    Attributes:
        oh: the configured pipeline (``oh.operation(...)``, ``oh.engine``, ``oh.tracer_provider``,
            ``oh.meter_provider``, ``oh.metrics``).
        exporter: the in-memory span exporter.
        reader: the in-memory metric reader.

    Example:
        >>> from otelhooks.testing import Recorder, pipeline
        >>> seen = Recorder()
        >>> with pipeline() as pipe:
        ...     _ = pipe.register({"id": "seen", "type": "afterToolCall", "handler": seen})
        ...     with pipe.tracer.operation("helper") as op, op.step() as step:
        ...         _ = step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
        ...     pipe.flush()
        ...     pipe.span("execute_tool readFile").attributes["otelhooks.tool.outcome"]
        ...     pipe.metric_total("otelhooks.tool.calls", {"otelhooks.outcome": "success"})
        True
        'success'
        1
        >>> seen.names()
        ['after_tool_call']
    """

    __test__ = False  # a helper, not a test class, for pytest's collector

    oh: OtelHooks
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    @property
    def tracer(self) -> AgentTracer:
        """The pipeline's tracer (``tracer.operation(...)``; ``oh.operation`` is the same)."""
        return self.oh.tracer

    def register(self, *hooks: Hook | Mapping[str, Any]) -> list[Hook]:
        """Register global hooks (they apply to every operation)."""
        return self.oh.register(hooks)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued observer hook has run; True when all did in time."""
        return self.oh.engine.flush(timeout_s)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Ended spans (named ``name`` only, when given), after exporting what is queued."""
        self.oh.force_flush(10.0)
        spans = list(self.exporter.get_finished_spans())
        return [s for s in spans if s.name == name] if name is not None else spans

    def span(self, name: str) -> ReadableSpan:
        """The one ended span named ``name``.

        Raises:
            LookupError: no span, or more than one, has that name (the message lists them all).
        """
        found = self.spans(name)
        if len(found) != 1:
            names = [s.name for s in self.spans()]
            raise LookupError(f"expected one {name!r} span, got {len(found)} of {names}")
        return found[0]

    def metric_points(
        self, name: str, attributes: Mapping[str, Any] | None = None
    ) -> list[DataPoint]:
        """The data points of metric ``name`` whose attributes include ``attributes``, once the
        observers have run and the metrics worker has recorded what they measured."""
        self.oh.engine.flush(10.0)
        self.oh.metrics.flush(10.0)
        return metric_points(self.reader, name, attributes)

    def metric_total(self, name: str, attributes: Mapping[str, Any] | None = None) -> float:
        """A counter's sum, or a histogram's count, over the points whose attributes include
        ``attributes``."""
        self.oh.engine.flush(10.0)  # observers count their invocations when they have run
        self.oh.metrics.flush(10.0)  # and the metrics worker records what was counted
        return metric_total(self.reader, name, attributes)

    def close(self) -> None:
        self.oh.shutdown(10.0)


@contextmanager
def pipeline(
    *,
    hooks: Iterable[Hook | Mapping[str, Any]] = (),
    capture_content: bool = False,
    service_name: str = "otelhooks-test",
) -> Iterator[TestPipeline]:
    """A complete pipeline in memory: no global providers, no OTLP, no structlog changes.

    Args:
        hooks: global hooks to register.
        capture_content: record prompts, arguments and results on spans and webhook bodies.
        service_name: ``service.name`` of the resource.
    """
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    oh = configure(
        service_name=service_name,
        hooks=hooks,
        otlp=False,
        span_exporters=[exporter],
        metric_readers=[reader],
        capture_content=capture_content,
        set_global=False,
        structured_logging=False,
    )
    pipe = TestPipeline(oh, exporter, reader)
    try:
        yield pipe
    finally:
        pipe.close()


class Recorder:
    """A thread-safe hook handler that keeps every payload it is given, in order.

    Example:
        >>> from otelhooks import HooksEngine
        >>> from otelhooks.events import AfterStepEvent
        >>> seen = Recorder()
        >>> engine = HooksEngine([{"id": "r", "type": "afterStep", "handler": seen}])
        >>> _ = engine.dispatch("after_step", AfterStepEvent(stepIndex=2))
        >>> engine.flush()
        True
        >>> seen.fields("stepIndex")
        [(2,)]
    """

    def __init__(self) -> None:
        self._events: list[HookEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: HookEvent) -> None:
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[HookEvent]:
        """Every payload recorded so far."""
        with self._lock:
            return list(self._events)

    def names(self) -> list[str]:
        """The canonical names of the recorded events, in order."""
        return [e.event for e in self.events]

    def of(self, name: str) -> list[HookEvent]:
        """The recorded payloads of one canonical event."""
        return [e for e in self.events if e.event == name]

    def fields(self, *names: str, event: str | None = None) -> list[tuple[Any, ...]]:
        """``names`` of each recorded event (of ``event`` only, if given), ``None`` if absent."""
        chosen = [e for e in self.events if event is None or e.event == event]
        return [tuple(getattr(e, n, None) for n in names) for e in chosen]


class EventCapture(Recorder):
    """The payloads of the events an engine dispatched, in the order observers saw them
    (reading them first runs what is queued)."""

    def __init__(self, engine: HooksEngine) -> None:
        super().__init__()
        self.engine = engine

    def record(self, event: HookEvent) -> None:
        self(event)

    @property
    def events(self) -> list[HookEvent]:
        """Every captured payload, once queued observers have run."""
        self.engine.flush(10.0)
        return super().events


def capture_events(engine: HooksEngine | OtelHooks, *, events: Iterable[str] = ()) -> EventCapture:
    """Capture every event ``engine`` dispatches (or only ``events``, canonical names).

    It registers one hook per event (ids ``otelhooks.testing:<event>``) that records the payload
    and changes nothing; those ids appear in ``otelhooks.hook.matched`` like any hook's. On
    intercept events the capture is a member of the chain: call this before registering hooks
    that may block, or a blocked event ends the chain before it reaches the capture.
    """
    target = engine.engine if isinstance(engine, OtelHooks) else engine
    capture = EventCapture(target)
    wanted = list(events) or [name for name in EVENTS if not name.startswith("_")]
    target.register(
        {"id": f"otelhooks.testing:{name}", "type": name, "handler": capture.record}
        for name in wanted
    )
    return capture


def run_cli(*args: str | os.PathLike[str]) -> int:
    """Run the ``otelhooks`` command with ``args`` in this process, as the console script runs
    it, and return its exit code: 2 for a usage error, which argparse reports by exiting.

    Output goes to this process's stdout and stderr (pytest's ``capsys`` reads it); a command
    that serves (``serve``, ``mcp``) runs until it ends, as it would in a shell.

    Example:
        >>> import pathlib, tempfile
        >>> from otelhooks.testing import run_cli
        >>> hooks = pathlib.Path(tempfile.mkdtemp()) / "hooks.yaml"
        >>> _ = hooks.write_text("- {id: audit, type: afterToolCall, command: 'true'}\\n")
        >>> run_cli("validate", hooks)
        OK   ... 1 hook
        1 file, 1 hook, 0 problems
        0
        >>> run_cli("no-such-command")  # the usage error goes to stderr
        2
    """
    from otelhooks._cli import main  # the whole command line, loaded when a test runs it

    try:
        return main([os.fspath(arg) for arg in args])
    except SystemExit as exc:  # argparse's usage errors and --help exit
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        return 1  # a message, printed by the interpreter as it exits


class SequentialIdGenerator(IdGenerator):
    """Trace and span ids 1, 2, 3, ... for a ``TracerProvider(id_generator=...)``."""

    def __init__(self) -> None:
        self._spans = itertools.count(1)
        self._traces = itertools.count(1)

    def generate_span_id(self) -> int:
        return next(self._spans)

    def generate_trace_id(self) -> int:
        return next(self._traces)


@contextmanager
def deterministic(*, start_ms: int = 1_700_000_000_000, step_ms: int = 1) -> Iterator[None]:
    """Sequential event ids (``000…001``, ``000…002``, …) and a clock that starts at
    ``start_ms`` and advances ``step_ms`` per reading, for every payload built in the block."""
    ids = itertools.count(1)
    ticks = itertools.count(0)
    lock = threading.Lock()

    def event_id() -> str:
        with lock:
            return f"{next(ids):032x}"

    def now_ms() -> int:
        with lock:
            return start_ms + step_ms * next(ticks)

    saved = (SOURCES.event_id, SOURCES.now_ms)
    SOURCES.event_id, SOURCES.now_ms = event_id, now_ms
    try:
        yield
    finally:
        SOURCES.event_id, SOURCES.now_ms = saved
