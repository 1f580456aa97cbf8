"""otelhooks: agent lifecycle hooks as OpenTelemetry span processors.

Example:
    >>> import otelhooks
    >>> oh = otelhooks.configure(traces_out="traces.jsonl")
    >>> oh.register([{"id": "audit", "type": "afterToolCall", "handler": print}])
    >>> with oh.operation("helper", input="add 1 and 2") as op, op.step() as step:
    ...     step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otelhooks._lazy import lazy_names

if TYPE_CHECKING:
    from otelhooks._actions._webhook_config import (
        WebhookConfig,
    )
    from otelhooks._actions._webhook_delivery import (
        WebhookDeliverer,
    )
    from otelhooks._actions._webhook_payload import (
        EmailResolver,
        PayloadBuilder,
        Redactor,
        truncate_results,
    )
    from otelhooks._config import (
        AgentEventsConfig,
        ConfigErrors,
        ConfigSource,
        LoadedConfig,
        load_config,
    )
    from otelhooks._dispatch import (
        HookRegistry,
    )
    from otelhooks._engine import (
        HooksEngine,
        matcher_values,
    )
    from otelhooks._errors import (
        BudgetExceeded,
        ConfigError,
        ControlProtocolError,
        CriticalHookDeliveryError,
        HookCapacityError,
        HookError,
        HookPoolExhaustedError,
        HookTimeoutError,
        InvalidMatcherError,
        OtelHooksError,
        ToolDenied,
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
    from otelhooks._fingerprint import (
        args_fingerprint,
    )
    from otelhooks._hook_step import HookStep
    from otelhooks._hooks import (
        Block,
        Hook,
    )
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
    from otelhooks._instrument._decorator import tool
    from otelhooks._live import Verdict
    from otelhooks._logging import (
        add_trace_context,
        configure_logging,
        scrub_secrets,
    )
    from otelhooks._matchers import (
        compile_matcher,
    )
    from otelhooks._metrics import (
        AgentMetrics,
        metric_views,
    )
    from otelhooks._pipeline import OtelHooks
    from otelhooks._processor import (
        HookSpanProcessor,
    )
    from otelhooks._redact import register_secret
    from otelhooks._sdks import instrument
    from otelhooks._setup import configure
    from otelhooks._version import __version__

# Importing the package imports nothing else: each public name loads its module on first use
# (PEP 562), so `import otelhooks` costs about what the OpenTelemetry SDK costs, and a run
# pays only for what it touches (benchmarks/README.md, "import time").
_WHERE: dict[str, str] = {
    "__version__": "otelhooks._version",
    "DestinationReport": "otelhooks._export._report",
    "DeliveryReport": "otelhooks._export._report",
    "HookCapacityError": "otelhooks._errors",
    "truncate_results": "otelhooks._actions._webhook_payload",
    "EmailResolver": "otelhooks._actions._webhook_payload",
    "Redactor": "otelhooks._actions._webhook_payload",
    "HookPoolExhaustedError": "otelhooks._errors",
    "ControlProtocolError": "otelhooks._errors",
    "AfterToolCallEvent": "otelhooks._events",
    "AgentCall": "otelhooks._instrument",
    "AgentEvents": "otelhooks._eventlog",
    "AgentEventsConfig": "otelhooks._config",
    "AgentMetrics": "otelhooks._metrics",
    "AgentTracer": "otelhooks._instrument",
    "Approval": "otelhooks._instrument",
    "Block": "otelhooks._hooks",
    "BudgetExceeded": "otelhooks._errors",
    "ToolDenied": "otelhooks._errors",
    "tool": "otelhooks._instrument._decorator",
    "instrument": "otelhooks._sdks",
    "Compaction": "otelhooks._instrument",
    "CompleteEvent": "otelhooks._events",
    "ConfigError": "otelhooks._errors",
    "ConfigErrors": "otelhooks._config",
    "ConfigSource": "otelhooks._config",
    "CountingBatchSpanProcessor": "otelhooks._export",
    "CriticalHookDeliveryError": "otelhooks._errors",
    "Dialect": "otelhooks._events",
    "EVENTS": "otelhooks._events",
    "ErrorEvent": "otelhooks._events",
    "EventBatch": "otelhooks._eventlog",
    "EventEntry": "otelhooks._eventlog",
    "EventLog": "otelhooks._eventlog",
    "EventLogClient": "otelhooks._eventlog",
    "EventLogError": "otelhooks._eventlog",
    "EventLogServer": "otelhooks._eventlog",
    "EventRecord": "otelhooks._eventlog",
    "EventSpec": "otelhooks._events",
    "Hook": "otelhooks._hooks",
    "HookError": "otelhooks._errors",
    "HookEvent": "otelhooks._events",
    "HookRegistry": "otelhooks._dispatch",
    "HookSpanProcessor": "otelhooks._processor",
    "HookStep": "otelhooks._hook_step",
    "HookTimeoutError": "otelhooks._errors",
    "HooksEngine": "otelhooks._engine",
    "InvalidMatcherError": "otelhooks._errors",
    "LlmCall": "otelhooks._instrument",
    "LoadedConfig": "otelhooks._config",
    "Notice": "otelhooks._eventlog",
    "Operation": "otelhooks._instrument",
    "OtelHooks": "otelhooks._pipeline",
    "OtelHooksError": "otelhooks._errors",
    "OtlpJsonLinesSpanExporter": "otelhooks._export",
    "PayloadBuilder": "otelhooks._actions._webhook_payload",
    "RingEventLog": "otelhooks._eventlog",
    "SqliteEventLog": "otelhooks._eventlog",
    "Step": "otelhooks._instrument",
    "ToolCall": "otelhooks._instrument",
    "ToolCallEvent": "otelhooks._events",
    "ToolResult": "otelhooks._events",
    "UnknownEventError": "otelhooks._errors",
    "Verdict": "otelhooks._live",
    "WebhookConfig": "otelhooks._actions._webhook_config",
    "WebhookDeliverer": "otelhooks._actions._webhook_delivery",
    "WebhookSpanExporter": "otelhooks._export",
    "add_trace_context": "otelhooks._logging",
    "all_event_names": "otelhooks._events",
    "args_fingerprint": "otelhooks._fingerprint",
    "compile_matcher": "otelhooks._matchers",
    "configure": "otelhooks._setup",
    "configure_logging": "otelhooks._logging",
    "load_agent_events": "otelhooks._eventlog",
    "load_config": "otelhooks._config",
    "matcher_values": "otelhooks._engine",
    "metric_views": "otelhooks._metrics",
    "read_otlp_json_lines": "otelhooks._export",
    "resolve_event": "otelhooks._events",
    "register_secret": "otelhooks._redact",
    "scrub_secrets": "otelhooks._logging",
    "serve": "otelhooks._eventlog",
}

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
    "BudgetExceeded",
    "Compaction",
    "CompleteEvent",
    "ConfigError",
    "ConfigErrors",
    "ConfigSource",
    "ControlProtocolError",
    "CountingBatchSpanProcessor",
    "CriticalHookDeliveryError",
    "DeliveryReport",
    "DestinationReport",
    "Dialect",
    "EmailResolver",
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
    "HookCapacityError",
    "HookError",
    "HookEvent",
    "HookPoolExhaustedError",
    "HookRegistry",
    "HookSpanProcessor",
    "HookStep",
    "HookTimeoutError",
    "HooksEngine",
    "InvalidMatcherError",
    "LlmCall",
    "LoadedConfig",
    "Notice",
    "Operation",
    "OtelHooks",
    "OtelHooksError",
    "OtlpJsonLinesSpanExporter",
    "PayloadBuilder",
    "Redactor",
    "RingEventLog",
    "SqliteEventLog",
    "Step",
    "ToolCall",
    "ToolCallEvent",
    "ToolDenied",
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
    "instrument",
    "load_agent_events",
    "load_config",
    "matcher_values",
    "metric_views",
    "read_otlp_json_lines",
    "register_secret",
    "resolve_event",
    "scrub_secrets",
    "serve",
    "tool",
    "truncate_results",
]


__getattr__ = lazy_names(__name__, _WHERE)


# The public subpackages, imported by name (``import otelhooks.testing``).
_SUBPACKAGES = ("events", "integrations", "mcp", "replay", "semconv", "testing")


def __dir__() -> list[str]:
    # The public surface only: not this module's own imports (lazy_names...) nor the
    # private modules that importing a name loads.
    return sorted({*__all__, *_SUBPACKAGES})
