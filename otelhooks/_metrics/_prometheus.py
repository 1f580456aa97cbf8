"""A Prometheus reader whose every scrape is one valid exposition, even after a flush.

The SDK's ``MeterProvider.force_flush`` calls ``collect`` on every reader, pull readers too.
``PrometheusMetricReader`` queues what a collection hands it until the next scrape, and its
collector then yields the families once for each queued batch: a flush before the first scrape
(``otelhooks demo`` flushes after its run) makes that scrape repeat every family, two
``target_info`` and duplicate ``HELP``/``TYPE`` lines, which ``promtool check metrics`` and
Prometheus itself reject. A scrape of cumulative data needs only the newest batch, so this
reader keeps that one and drops the older ones.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics.export import MetricsData

__all__ = ["LatestPrometheusMetricReader"]


class LatestPrometheusMetricReader(PrometheusMetricReader):
    """``PrometheusMetricReader`` that serves only the newest collection on a scrape.

    Takes the same arguments as ``PrometheusMetricReader``.

    Example:
        >>> registry = CollectorRegistry()
        >>> reader = LatestPrometheusMetricReader(registry=registry)
        >>> provider = MeterProvider(metric_readers=[reader])
        >>> provider.force_flush()  # the next scrape still lists every family once
    """

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> None:
        # Cumulative points: the newest batch holds everything the older ones did.
        self._collector._metrics_datas.clear()
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)
