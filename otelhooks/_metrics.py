"""The OTel instruments otelhooks records, created once per meter provider.

Durations are in seconds with explicit bucket boundaries that fit agent work (the SDK's default
boundaries 0, 5, 10 … 10000 are useless for seconds): see :func:`metric_views`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from opentelemetry import metrics
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from otelhooks import _semconv as sc

__all__ = ["DURATION_BUCKETS_S", "TOKEN_BUCKETS", "AgentMetrics", "metric_views"]

DURATION_BUCKETS_S: Final[Sequence[float]] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
)  # fmt: skip
TOKEN_BUCKETS: Final[Sequence[float]] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
)  # fmt: skip


def metric_views() -> list[View]:
    """Views giving every otelhooks duration histogram second-scale buckets."""
    duration = ExplicitBucketHistogramAggregation(boundaries=DURATION_BUCKETS_S)
    names = (
        sc.METRIC_OPERATION_DURATION,
        sc.METRIC_INVOKE_AGENT_DURATION,
        sc.METRIC_EXECUTE_TOOL_DURATION,
        sc.METRIC_STEP_DURATION,
        sc.METRIC_HOOK_DURATION,
    )
    views = [View(instrument_name=n, aggregation=duration) for n in names]
    views.append(
        View(
            instrument_name=sc.METRIC_TOKEN_USAGE,
            aggregation=ExplicitBucketHistogramAggregation(boundaries=TOKEN_BUCKETS),
        )
    )
    return views


class AgentMetrics:
    """Every instrument, named from :mod:`otelhooks._semconv`. See the README's metric table."""

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        meter = (meter_provider or metrics.get_meter_provider()).get_meter("otelhooks")
        self.operations = meter.create_counter(
            sc.METRIC_OPERATIONS, unit="{operation}", description="Agent operations by outcome."
        )
        self.errors = meter.create_counter(
            sc.METRIC_ERRORS, unit="1", description="Agent errors (on_error); alerts fire on it."
        )
        self.invoke_agent_duration = meter.create_histogram(
            sc.METRIC_INVOKE_AGENT_DURATION, unit="s", description="Duration of agent operations."
        )
        self.step_duration = meter.create_histogram(
            sc.METRIC_STEP_DURATION, unit="s", description="Duration of agent steps."
        )
        self.operation_duration = meter.create_histogram(
            sc.METRIC_OPERATION_DURATION, unit="s", description="GenAI client operation duration."
        )
        self.token_usage = meter.create_histogram(
            sc.METRIC_TOKEN_USAGE, unit="{token}", description="Tokens used per LLM call."
        )
        self.tool_calls = meter.create_counter(
            sc.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls by tool and outcome."
        )
        self.tool_duration = meter.create_histogram(
            sc.METRIC_EXECUTE_TOOL_DURATION, unit="s", description="Duration of tool calls."
        )
        self.compactions = meter.create_counter(
            sc.METRIC_COMPACTIONS, unit="{compaction}", description="Context compactions."
        )
        self.tokens_saved = meter.create_counter(
            sc.METRIC_COMPACT_TOKENS_SAVED,
            unit="{token}",
            description="Tokens saved by compaction.",
        )
        self.human_interventions = meter.create_counter(
            sc.METRIC_HUMAN_INTERVENTIONS,
            unit="{intervention}",
            description="Human interventions by action.",
        )
        self.hook_invocations = meter.create_counter(
            sc.METRIC_HOOK_INVOCATIONS,
            unit="{invocation}",
            description="Hook invocations by hook, event and outcome.",
        )
        self.hook_duration = meter.create_histogram(
            sc.METRIC_HOOK_DURATION, unit="s", description="Hook run time."
        )
        self.dropped = meter.create_counter(
            sc.METRIC_DROPPED,
            unit="{item}",
            description="Spans, observer events and deliveries dropped, by source and reason.",
        )

    def drop_counter(self, source: str) -> _DropRecorder:
        """A callback ``(count, reason)`` for bounded queues that counts drops from ``source``."""
        return _DropRecorder(self, source)


class _DropRecorder:
    __slots__ = ("_metrics", "_source")

    def __init__(self, m: AgentMetrics, source: str) -> None:
        self._metrics = m
        self._source = source

    def __call__(self, count: int, reason: str) -> None:
        self._metrics.dropped.add(
            count, {sc.ATTR_DROP_SOURCE: self._source, sc.ATTR_DROP_REASON: reason}
        )
