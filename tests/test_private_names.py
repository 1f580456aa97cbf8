"""The three private names otelhooks still relies on, each held to what otelhooks needs of it.

docs/design.md ("Private names that remain") says why each has no public equivalent. A release of
CPython or the OpenTelemetry SDK that renames one, or changes what it does, fails here by name
instead of failing silently (a guard that no longer refuses, a delivery that makes spans, an
exporter's retry lines no longer summarised).
"""

from __future__ import annotations

import importlib
import logging

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)

from otelhooks._export._otlp import _SDK_LOGGERS
from otelhooks._matchers import backtracking_risk
from otelhooks._worker import BoundedWorker

# -- CPython's regex parser (re._parser, re._constants) ---------------------------------------


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a+)+$", "a quantifier inside a quantified group"),
        ("(?:a|aa)*b", "an alternation inside a quantified group"),
        (r"(a)\1", "a backreference"),
        (r"(?=a)(a+)+", "a quantifier inside a quantified group"),
    ],
)
def test_the_regex_parser_still_shows_what_can_backtrack(pattern: str, why: str) -> None:
    assert backtracking_risk(pattern) == why


@pytest.mark.parametrize("pattern", ["^Bash$", "mcp__.*__write", "Edit|Write", "^fs/(read|list)"])
def test_the_regex_parser_still_passes_what_cannot(pattern: str) -> None:
    assert backtracking_risk(pattern) is None


# -- the API's suppress-instrumentation key ---------------------------------------------------


def test_a_delivery_runs_where_instrumentations_see_themselves_suppressed() -> None:
    # What instrumentations (httpx, requests, urllib3 ...) ask before making a span; its module
    # comes with the LLM instrumentations the `openai` extra installs.
    utils = pytest.importorskip("opentelemetry.instrumentation.utils")
    seen: list[bool] = []
    worker = BoundedWorker[int](
        "suppressed", lambda batch: seen.append(utils.is_instrumentation_enabled())
    )
    try:
        worker.submit(1)
        assert worker.flush(5)
    finally:
        worker.shutdown()
    assert seen == [False]
    assert utils.is_instrumentation_enabled()  # only inside the delivery


# -- the SDK's logger names (summarise_sdk_logs) ----------------------------------------------


@pytest.mark.parametrize("name", _SDK_LOGGERS)
def test_each_summarised_logger_is_the_one_its_module_logs_to(name: str) -> None:
    module = importlib.import_module(name)
    loggers = {v.name for v in vars(module).values() if isinstance(v, logging.Logger)}
    assert name in loggers


class _Failing(MetricExporter):
    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: object
    ) -> MetricExportResult:
        raise ConnectionError("collector down")

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        pass


def test_the_periodic_readers_failure_line_comes_from_a_summarised_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = PeriodicExportingMetricReader(_Failing(), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    provider.get_meter("t").create_counter("c").add(1)
    with caplog.at_level(logging.WARNING):
        reader.force_flush(5_000)
    provider.shutdown()
    names = {r.name for r in caplog.records if "collector down" in (r.exc_text or r.getMessage())}
    assert names, [(r.name, r.getMessage()) for r in caplog.records]
    assert names <= set(_SDK_LOGGERS)
