"""otelhooks' metrics: the instruments (:mod:`._instruments`) and the in-process aggregation that
feeds them to metric readers (:mod:`._local`)."""

from otelhooks._metrics._instruments import (
    CLIENT_DURATION_BUCKETS_S,
    DURATION_BUCKETS_S,
    INVOKE_AGENT_BUCKETS_S,
    TOKEN_BUCKETS,
    AgentMetrics,
    metric_views,
)
from otelhooks._metrics._local import (
    LocalCountedHistogram,
    LocalCounter,
    LocalHistogram,
    LocalMetricProducer,
    MetricAttributes,
    exemplar_filter_from_env,
)

__all__ = [
    "CLIENT_DURATION_BUCKETS_S",
    "DURATION_BUCKETS_S",
    "INVOKE_AGENT_BUCKETS_S",
    "TOKEN_BUCKETS",
    "AgentMetrics",
    "LocalCountedHistogram",
    "LocalCounter",
    "LocalHistogram",
    "LocalMetricProducer",
    "MetricAttributes",
    "exemplar_filter_from_env",
    "metric_views",
]
