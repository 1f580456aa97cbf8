"""otelhooks' metrics: the instruments (:mod:`._instruments`) and the in-process aggregation that
feeds them to metric readers (:mod:`._local`, :mod:`._exemplars`, :mod:`._producer`)."""

from otelhooks._metrics._exemplars import exemplar_filter_from_env
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
    MetricAttributes,
)
from otelhooks._metrics._producer import LocalMetricProducer

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
