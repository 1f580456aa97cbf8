"""otelhooks' metrics: the SDK's instruments, recorded off the agent's thread
(:mod:`._instruments`)."""

from otelhooks._metrics._instruments import (
    CLIENT_DURATION_BUCKETS_S,
    DURATION_BUCKETS_S,
    INVOKE_AGENT_BUCKETS_S,
    TOKEN_BUCKETS,
    AgentMetrics,
    metric_views,
)

__all__ = [
    "CLIENT_DURATION_BUCKETS_S",
    "DURATION_BUCKETS_S",
    "INVOKE_AGENT_BUCKETS_S",
    "TOKEN_BUCKETS",
    "AgentMetrics",
    "metric_views",
]
