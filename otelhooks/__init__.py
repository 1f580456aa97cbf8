"""otelhooks: agent lifecycle hooks as OpenTelemetry span processors.

Example:
    >>> import otelhooks
    >>> oh = otelhooks.configure(traces_out="traces.jsonl")
    >>> oh.register([{"id": "audit", "type": "afterToolCall", "handler": print}])
    >>> with oh.operation("helper", input="add 1 and 2") as op, op.step() as step:
    ...     step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
"""

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._actions._webhook_payload import PayloadBuilder
from otelhooks._config import (
    AgentEventsConfig,
    ConfigErrors,
    ConfigSource,
    LoadedConfig,
    load_config,
)
from otelhooks._dispatch import HookRegistry
from otelhooks._errors import (
    ConfigError,
    CriticalHookDeliveryError,
    HookError,
    HookTimeoutError,
    InvalidMatcherError,
    OtelHooksError,
    UnknownEventError,
)
from otelhooks._eventlog import (
    AgentEvents,
    EventBatch,
    EventEntry,
    EventLog,
    EventLogClient,
    EventLogError,
    EventLogServer,
    EventRecord,
    Notice,
    RingEventLog,
    SqliteEventLog,
    load_agent_events,
    serve,
)
from otelhooks._events import (
    EVENTS,
    AfterToolCallEvent,
    CompleteEvent,
    Dialect,
    ErrorEvent,
    EventSpec,
    HookEvent,
    ToolCallEvent,
    ToolResult,
    all_event_names,
    resolve_event,
)
from otelhooks._export import (
    CountingBatchSpanProcessor,
    OtlpJsonLinesSpanExporter,
    WebhookSpanExporter,
    read_otlp_json_lines,
)
from otelhooks._export._report import DeliveryReport, DestinationReport
from otelhooks._fingerprint import args_fingerprint
from otelhooks._hooks import Block, Hook
from otelhooks._instrument import (
    AgentCall,
    AgentTracer,
    Approval,
    Compaction,
    LlmCall,
    Operation,
    Step,
    ToolCall,
)
from otelhooks._live import Verdict
from otelhooks._logging import add_trace_context, configure_logging, scrub_secrets
from otelhooks._matchers import compile_matcher
from otelhooks._metrics import AgentMetrics, LocalMetricProducer, metric_views
from otelhooks._processor import HookSpanProcessor
from otelhooks._setup import OtelHooks, configure
from otelhooks._version import __version__

__all__ = [
    "EVENTS",
    "AfterToolCallEvent",
    "AgentCall",
    "AgentEvents",
    "AgentEventsConfig",
    "AgentMetrics",
    "AgentTracer",
    "Approval",
    "Block",
    "Compaction",
    "CompleteEvent",
    "ConfigError",
    "ConfigErrors",
    "ConfigSource",
    "CountingBatchSpanProcessor",
    "CriticalHookDeliveryError",
    "DeliveryReport",
    "DestinationReport",
    "Dialect",
    "ErrorEvent",
    "EventBatch",
    "EventEntry",
    "EventLog",
    "EventLogClient",
    "EventLogError",
    "EventLogServer",
    "EventRecord",
    "EventSpec",
    "Hook",
    "HookError",
    "HookEvent",
    "HookRegistry",
    "HookSpanProcessor",
    "HookTimeoutError",
    "InvalidMatcherError",
    "LlmCall",
    "LoadedConfig",
    "LocalMetricProducer",
    "Notice",
    "Operation",
    "OtelHooks",
    "OtelHooksError",
    "OtlpJsonLinesSpanExporter",
    "PayloadBuilder",
    "RingEventLog",
    "SqliteEventLog",
    "Step",
    "ToolCall",
    "ToolCallEvent",
    "ToolResult",
    "UnknownEventError",
    "Verdict",
    "WebhookConfig",
    "WebhookDeliverer",
    "WebhookSpanExporter",
    "__version__",
    "add_trace_context",
    "all_event_names",
    "args_fingerprint",
    "compile_matcher",
    "configure",
    "configure_logging",
    "load_agent_events",
    "load_config",
    "metric_views",
    "read_otlp_json_lines",
    "resolve_event",
    "scrub_secrets",
    "serve",
]
