"""The MCP gateway's metrics (``model/mcp/metrics.yaml`` of the GenAI semantic conventions).

- ``mcp.server.operation.duration``: each client request or notification the gateway serves,
  from its arrival to the answer leaving (the gateway answers for the server);
- ``mcp.client.operation.duration``: each request the server sends the client through it;
- ``mcp.server.session.duration``: each MCP session, from its first message to its end, with
  ``error.type`` when it ended because the server went away.

Attributes are the conventions' (``mcp.method.name``, ``gen_ai.tool.name``,
``gen_ai.prompt.name``, ``gen_ai.operation.name``, ``error.type``, ``rpc.response.status_code``,
``mcp.protocol.version``, ``network.*``; a session's: protocol version, ``network.protocol.name``
and ``error.type``); the conventions
give no bucket boundaries, so the histograms advise otelhooks' second-scale ones. The gateway is
no agent's hot path (it already parses each frame), so measurements are recorded in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import metrics

from otelhooks import _semconv as sc
from otelhooks._metrics import DURATION_BUCKETS_S
from otelhooks._version import __version__

__all__ = [
    "McpMetrics",
]

# The span attributes an operation metric keeps (the rest, ids and addresses, are per request).
OPERATION_KEYS: Final = frozenset(
    {
        sc.MCP_METHOD_NAME,
        sc.GEN_AI_TOOL_NAME,
        sc.GEN_AI_PROMPT_NAME,
        sc.GEN_AI_OPERATION_NAME,
        sc.ERROR_TYPE,
        sc.RPC_RESPONSE_STATUS_CODE,
        sc.MCP_PROTOCOL_VERSION,
        sc.NETWORK_TRANSPORT,
        sc.NETWORK_PROTOCOL_NAME,
        sc.NETWORK_PROTOCOL_VERSION,
    }
)
SESSION_KEYS: Final = frozenset({sc.MCP_PROTOCOL_VERSION, sc.NETWORK_PROTOCOL_NAME, sc.ERROR_TYPE})


class McpMetrics:
    """The three MCP histograms on ``meter_provider``'s ``otelhooks.mcp`` meter.

    Args:
        meter_provider: where the instruments come from (the global provider when omitted).

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        >>> reader = InMemoryMetricReader()
        >>> mcp = McpMetrics(MeterProvider(metric_readers=[reader]))
        >>> mcp.operation(0.02, {"mcp.method.name": "tools/list"}, from_server=False)
        >>> reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics[0].name
        'mcp.server.operation.duration'
    """

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        provider = meter_provider or metrics.get_meter_provider()
        meter = provider.get_meter("otelhooks.mcp", __version__, schema_url=sc.SCHEMA_URL)

        def histogram(name: str, brief: str) -> metrics.Histogram:
            return meter.create_histogram(
                name,
                unit="s",
                description=brief,
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
            )

        self._server_operation = histogram(
            sc.MCP_METRIC_SERVER_OPERATION_DURATION,
            "MCP request or notification duration (server side).",
        )
        self._client_operation = histogram(
            sc.MCP_METRIC_CLIENT_OPERATION_DURATION, "MCP request duration (sent to the client)."
        )
        self._server_session = histogram(
            sc.MCP_METRIC_SERVER_SESSION_DURATION, "The duration of the MCP session (server side)."
        )

    def operation(
        self, seconds: float, attributes: Mapping[str, Any], *, from_server: bool
    ) -> None:
        """One request or notification that crossed, with its span's attributes."""
        attrs = {k: v for k, v in attributes.items() if k in OPERATION_KEYS}
        histogram = self._client_operation if from_server else self._server_operation
        histogram.record(seconds, attrs)

    def session(self, seconds: float, attributes: Mapping[str, Any]) -> None:
        """One session that ended."""
        self._server_session.record(
            seconds, {k: v for k, v in attributes.items() if k in SESSION_KEYS}
        )
