"""Shared fixtures: a real SDK pipeline (tracer provider, hook processor, in-memory exporter,
in-memory metric reader) with an ``AgentTracer`` on it. Nothing here touches the global providers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from otelhooks import AgentMetrics, AgentTracer, HookSpanProcessor, WebhookDeliverer
from otelhooks.testing import DataPoint, Recorder, metric_points, metric_total
from tests._webhook_server import WebhookServer, webhook_server


@dataclass
class Pipeline:
    """Everything a test needs to run an instrumented agent and look at what it produced."""

    provider: TracerProvider
    hooks: HookSpanProcessor
    exporter: InMemorySpanExporter
    meter_provider: MeterProvider
    reader: InMemoryMetricReader
    metrics: AgentMetrics
    tracer: AgentTracer

    def register(self, *hooks: Mapping[str, Any]) -> None:
        """Register global hooks."""
        self.hooks.register(list(hooks))

    def flush(self) -> None:
        """Wait until every queued observer hook has run."""
        assert self.hooks.force_flush(10_000), "observer queue did not drain"

    # -- spans -----------------------------------------------------------------------------------

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Finished spans, in end order, optionally only those called ``name``."""
        found = list(self.exporter.get_finished_spans())
        return found if name is None else [s for s in found if s.name == name]

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called ``name``."""
        found = self.spans(name)
        assert len(found) == 1, f"expected one {name!r} span, got {[s.name for s in self.spans()]}"
        return found[0]

    # -- metrics ---------------------------------------------------------------------------------

    def metric_points(
        self, name: str, attributes: Mapping[str, Any] | None = None
    ) -> list[DataPoint]:
        """Data points of metric ``name`` whose attributes include ``attributes``."""
        assert self.metrics.flush(10.0), "metrics queue did not drain"
        return metric_points(self.reader, name, attributes)

    def metric_total(self, name: str, attributes: Mapping[str, Any] | None = None) -> float:
        """Sum of a counter's points, or of a histogram's counts, matching ``attributes``."""
        assert self.metrics.flush(10.0), "metrics queue did not drain"
        return metric_total(self.reader, name, attributes)


def make_pipeline(*, sampler: Sampler | None = None, capture_content: bool = False) -> Pipeline:
    """Build a fresh pipeline; the caller shuts it down with :func:`close_pipeline`."""
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    metrics = AgentMetrics(meter_provider)
    if sampler is None:
        provider = TracerProvider(shutdown_on_exit=False)
    else:
        provider = TracerProvider(sampler=sampler, shutdown_on_exit=False)
    hooks = HookSpanProcessor(metrics=metrics)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(hooks)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = AgentTracer(
        tracer_provider=provider, hooks=hooks, metrics=metrics, capture_content=capture_content
    )
    return Pipeline(provider, hooks, exporter, meter_provider, reader, metrics, tracer)


def close_pipeline(pipeline: Pipeline) -> None:
    pipeline.provider.shutdown()
    pipeline.metrics.shutdown(5.0)
    pipeline.meter_provider.shutdown()


@pytest.fixture
def pipe() -> Iterator[Pipeline]:
    """A fresh pipeline with content capture off."""
    pipeline = make_pipeline()
    yield pipeline
    close_pipeline(pipeline)


@pytest.fixture
def tracer(pipe: Pipeline) -> AgentTracer:
    return pipe.tracer


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def hook(hook_id: str, type: str, handler: Callable[..., Any], **options: Any) -> dict[str, Any]:
    """A hook definition in the dict (LobeHub ``AgentHook``) shape users register."""
    return {"id": hook_id, "type": type, "handler": handler, **options}


def attribute_values(spans: Sequence[ReadableSpan]) -> list[str]:
    """Every attribute value (span, span event and link attributes) rendered as a string."""
    out: list[str] = []
    for span in spans:
        sources: list[Mapping[str, Any]] = [span.attributes or {}]
        sources.extend(e.attributes or {} for e in span.events)
        sources.extend(link.attributes or {} for link in span.links)
        for attrs in sources:
            out.extend(str(v) for v in attrs.values())
    return out


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    """A real HTTP server on 127.0.0.1 whose answers the test scripts per path."""
    with webhook_server() as s:
        yield s


@pytest.fixture
def deliverer(pipe: Pipeline, tmp_path: Path) -> Iterator[WebhookDeliverer]:
    """A fresh webhook deliverer recording into ``pipe``'s metrics, installed as the default."""
    d = WebhookDeliverer(
        metrics=pipe.metrics, retry_deadline_s=3.0, outbox_path=tmp_path / "outbox.db"
    )
    pipe.hooks.engine.deliverer = d
    yield d
    d.shutdown(5)
