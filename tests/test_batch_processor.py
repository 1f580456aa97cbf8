"""Tests for otelhooks._export._batch.CountingBatchSpanProcessor."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes
from structlog.testing import capture_logs

from otelhooks import CountingBatchSpanProcessor

NEVER = 60.0
ENV_VARS = (
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_EXPORT_TIMEOUT",
)


class SlowExporter(InMemorySpanExporter):
    """An in-memory exporter that takes a while per batch and records batch sizes."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.batch_sizes: list[int] = []
        self.shut_down = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        time.sleep(self.delay_s)
        self.batch_sizes.append(len(spans))
        return super().export(spans)

    def shutdown(self) -> None:
        self.shut_down = True
        super().shutdown()


class GatedExporter(InMemorySpanExporter):
    """An in-memory exporter that holds each export until its gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.gate.wait(5)
        return super().export(spans)


class FailingExporter(InMemorySpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE


class RecordOnly(Sampler):
    """Records every span without sampling it, so on_end sees unsampled spans."""

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: object = None,
    ) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "RecordOnly"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def exporter() -> SlowExporter:
    return SlowExporter()


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    yield tracer_provider
    tracer_provider.shutdown()


def make_spans(provider: TracerProvider, count: int) -> None:
    tracer = provider.get_tracer("test")
    for i in range(count):
        tracer.start_span(f"span-{i}").end()


def drop_logs(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [log for log in logs if log["event"] == "spans dropped"]


def test_spans_are_exported_after_force_flush(
    provider: TracerProvider, exporter: SlowExporter
) -> None:
    processor = CountingBatchSpanProcessor(exporter, schedule_delay_s=NEVER)
    provider.add_span_processor(processor)
    make_spans(provider, 3)
    assert exporter.get_finished_spans() == ()
    assert processor.force_flush(5_000)
    assert [span.name for span in exporter.get_finished_spans()] == ["span-0", "span-1", "span-2"]


def test_unsampled_spans_are_not_exported(exporter: SlowExporter) -> None:
    provider = TracerProvider(sampler=RecordOnly(), shutdown_on_exit=False)
    provider.add_span_processor(CountingBatchSpanProcessor(exporter))
    make_spans(provider, 3)
    provider.force_flush(5_000)
    assert exporter.get_finished_spans() == ()
    provider.shutdown()


def test_burst_within_queue_size_loses_no_span(
    provider: TracerProvider, exporter: SlowExporter
) -> None:
    drops: list[int] = []
    processor = CountingBatchSpanProcessor(
        exporter, max_queue_size=65_536, on_drop=lambda count, reason: drops.append(count)
    )
    provider.add_span_processor(processor)
    make_spans(provider, 20_000)
    assert processor.force_flush(10_000)
    assert len(exporter.get_finished_spans()) == 20_000
    assert max(exporter.batch_sizes) <= 512
    assert drops == []
    assert processor.dropped == 0


def test_drops_under_overload_are_counted_exactly(provider: TracerProvider) -> None:
    exporter = SlowExporter(delay_s=0.002)
    reported: list[tuple[int, str]] = []
    processor = CountingBatchSpanProcessor(
        exporter,
        max_queue_size=10,
        max_export_batch_size=5,
        schedule_delay_s=0.001,
        on_drop=lambda count, reason: reported.append((count, reason)),
    )
    provider.add_span_processor(processor)
    make_spans(provider, 2_000)
    processor.shutdown()

    exported = len(exporter.get_finished_spans())
    dropped = sum(count for count, _ in reported)
    assert dropped > 0
    assert exported + dropped == 2_000
    assert processor.dropped == dropped
    assert {reason for _, reason in reported} == {"queue_full"}


def test_drops_are_logged_once_per_interval_not_per_span(provider: TracerProvider) -> None:
    exporter = SlowExporter(delay_s=0.002)
    processor = CountingBatchSpanProcessor(
        exporter, max_queue_size=10, max_export_batch_size=5, log_interval_s=NEVER
    )
    provider.add_span_processor(processor)
    with capture_logs() as logs:
        make_spans(provider, 500)
        during_burst = drop_logs(logs)
        processor.shutdown()
    after_shutdown = drop_logs(logs)

    assert processor.dropped > 1
    assert len(during_burst) == 1
    assert during_burst[0]["log_level"] == "warning"
    # The burst's first drop is logged at once; the rest are summed into the shutdown line.
    assert len(after_shutdown) == 2
    assert sum(log["dropped"] for log in after_shutdown) == processor.dropped


def test_drop_log_after_interval_carries_count_since_last_line(
    provider: TracerProvider,
) -> None:
    exporter = GatedExporter()
    processor = CountingBatchSpanProcessor(
        exporter,
        max_queue_size=1,
        max_export_batch_size=1,
        schedule_delay_s=0.0,
        log_interval_s=0.3,
    )
    provider.add_span_processor(processor)
    with capture_logs() as logs:
        make_spans(provider, 1)
        assert exporter.entered.wait(5)  # the worker holds span 0 at the gate
        make_spans(provider, 4)  # span 1 is queued; 2, 3, 4 dropped; span 2 logged at once
        time.sleep(0.35)
        make_spans(provider, 1)  # past the interval: one line for spans 3, 4 and 5
        exporter.gate.set()
        processor.shutdown()
    assert [log["dropped"] for log in drop_logs(logs)] == [1, 3]
    assert len(exporter.get_finished_spans()) == 2


def test_export_failure_is_retried_then_dropped_counted_and_logged_not_raised(
    provider: TracerProvider,
) -> None:
    drops: list[tuple[int, str]] = []
    exporter = FailingExporter()
    processor = CountingBatchSpanProcessor(
        exporter, retry_failed_s=1.0, on_drop=lambda n, why: drops.append((n, why))
    )
    provider.add_span_processor(processor)
    with capture_logs() as logs:
        make_spans(provider, 2)
        assert processor.force_flush(5_000)
    failures = [log for log in logs if log["event"] == "span export failed"]
    assert len(failures) == 1
    assert failures[0]["spans"] == 2
    assert failures[0]["attempts"] > 1
    assert drops == [(2, "export_failed")]


class RecoveringExporter(InMemorySpanExporter):
    """Fails its first ``failures`` exports, then works (a collector coming back)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.failures > 0:
            self.failures -= 1
            return SpanExportResult.FAILURE
        return super().export(spans)


def test_a_failed_batch_is_retried_until_the_exporter_recovers(provider: TracerProvider) -> None:
    exporter = RecoveringExporter(failures=3)
    processor = CountingBatchSpanProcessor(exporter, retry_failed_s=30.0)
    provider.add_span_processor(processor)
    make_spans(provider, 5)
    assert processor.force_flush(20_000)
    assert len(exporter.get_finished_spans()) == 5
    assert processor.dropped == 0


def test_env_vars_set_defaults(monkeypatch: pytest.MonkeyPatch, exporter: SlowExporter) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "250")
    monkeypatch.setenv("OTEL_BSP_EXPORT_TIMEOUT", "1500")
    processor = CountingBatchSpanProcessor(exporter)
    assert processor.max_queue_size == 100
    assert processor.max_export_batch_size == 10
    assert processor.schedule_delay_s == 0.25
    assert processor.export_timeout_s == 1.5


def test_arguments_override_env_vars(
    monkeypatch: pytest.MonkeyPatch, exporter: SlowExporter
) -> None:
    for name in ENV_VARS:
        monkeypatch.setenv(name, "100")
    processor = CountingBatchSpanProcessor(
        exporter,
        max_queue_size=7,
        max_export_batch_size=3,
        schedule_delay_s=0.5,
        export_timeout_s=2.0,
    )
    assert processor.max_queue_size == 7
    assert processor.max_export_batch_size == 3
    assert processor.schedule_delay_s == 0.5
    assert processor.export_timeout_s == 2.0


def test_defaults_apply_without_arguments_or_env_vars(exporter: SlowExporter) -> None:
    processor = CountingBatchSpanProcessor(exporter)
    assert processor.max_queue_size == 65_536
    assert processor.max_export_batch_size == 512
    assert processor.schedule_delay_s == 0.2
    assert processor.export_timeout_s == 30.0


@pytest.mark.parametrize("value", ["lots", "-5", "0", "nan"])
def test_invalid_env_var_warns_and_falls_back(
    monkeypatch: pytest.MonkeyPatch, exporter: SlowExporter, value: str
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", value)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", value if value != "0" else "-1")
    with capture_logs() as logs:
        processor = CountingBatchSpanProcessor(exporter)
    assert processor.max_queue_size == 65_536
    assert processor.schedule_delay_s == 0.2
    warned = {log["var"] for log in logs if log["log_level"] == "warning"}
    assert warned == {"OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_SCHEDULE_DELAY"}


def test_shutdown_exports_queued_spans_then_shuts_exporter_down(
    provider: TracerProvider, exporter: SlowExporter
) -> None:
    processor = CountingBatchSpanProcessor(exporter, schedule_delay_s=NEVER)
    provider.add_span_processor(processor)
    make_spans(provider, 5)
    processor.shutdown()
    assert len(exporter.get_finished_spans()) == 5
    assert exporter.shut_down


def test_spans_ending_after_shutdown_are_dropped_as_shutdown(
    provider: TracerProvider, exporter: SlowExporter
) -> None:
    reported: list[tuple[int, str]] = []
    processor = CountingBatchSpanProcessor(
        exporter, on_drop=lambda count, reason: reported.append((count, reason))
    )
    provider.add_span_processor(processor)
    span = provider.get_tracer("test").start_span("late")
    processor.shutdown()
    span.end()
    assert reported == [(1, "shutdown")]


def test_constructing_the_processor_starts_no_thread(exporter: SlowExporter) -> None:
    processor = CountingBatchSpanProcessor(exporter)
    assert "otelhooks-span-export" not in {t.name for t in threading.enumerate()}
    processor.shutdown()


def test_the_delivery_report_counts_every_span_offered_kept_or_dropped(
    provider: TracerProvider,
) -> None:
    # The tracker reads "sent" off the queue's own count: spans the queue dropped on arrival are
    # sent and not delivered, as when the processor counted each one itself.
    from otelhooks._export._report import DeliveryTracker

    exporter = GatedExporter()
    tracker = DeliveryTracker("spans", "memory")
    processor = CountingBatchSpanProcessor(
        exporter, max_queue_size=2, max_export_batch_size=1, schedule_delay_s=0.0, tracker=tracker
    )
    provider.add_span_processor(processor)
    make_spans(provider, 1)
    assert exporter.entered.wait(5)  # the first is being exported: the queue holds two more
    make_spans(provider, 4)
    exporter.gate.set()
    assert processor.force_flush(5_000)
    report = tracker.report()
    assert (report.sent, report.delivered, report.dropped) == (5, 3, 2)
    assert report.line() == "3 of 5 spans exported to memory: queue full"
    processor.shutdown()


def test_text_utf8_cannot_hold_is_replaced_wherever_a_span_holds_it(
    provider: TracerProvider,
) -> None:
    # A lone surrogate in an event's name or attribute, a link's attribute key or a sequence
    # attribute's item becomes U+FFFD; text UTF-8 can hold (accented, an emoji) is kept.
    exporter = InMemorySpanExporter()
    processor = CountingBatchSpanProcessor(exporter, schedule_delay_s=0.0)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    linked = tracer.start_span("linked")
    linked.end()
    with tracer.start_as_current_span(
        "caf\u00e9 \U0001f600",
        attributes={"names": ("ok", "b\udce9"), "kept": "\u00e9"},
        links=[Link(linked.get_span_context(), {"k\ud800": 1})],
    ) as span:
        span.add_event("e\ud800", {"path": "caf\udce9"})
    assert processor.force_flush(5_000)
    (exported,) = [s for s in exporter.get_finished_spans() if s.name != "linked"]
    assert exported.name == "caf\u00e9 \U0001f600"
    assert dict(exported.attributes or {}) == {"names": ("ok", "b\ufffd"), "kept": "\u00e9"}
    assert [dict(link.attributes or {}) for link in exported.links] == [{"k\ufffd": 1}]
    assert [(e.name, dict(e.attributes or {})) for e in exported.events] == [
        ("e\ufffd", {"path": "caf\ufffd"})
    ]
    processor.shutdown()
