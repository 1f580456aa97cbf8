"""The public surface is exactly the intended list, and importing it starts nothing."""

from __future__ import annotations

import subprocess
import sys

import otelhooks

INTENDED = {
    "EVENTS", "AfterToolCallEvent", "AgentCall", "AgentMetrics", "AgentTracer", "Approval",
    "Block", "Compaction", "CompleteEvent", "ConfigError", "CountingBatchSpanProcessor",
    "CriticalHookDeliveryError", "Dialect", "ErrorEvent", "EventSpec", "Hook", "HookError",
    "HookEvent", "HookRegistry", "HookSpanProcessor", "HookTimeoutError", "InvalidMatcherError",
    "LlmCall", "Operation", "OtelHooks", "OtelHooksError", "OtlpJsonLinesSpanExporter", "Step",
    "ToolCall", "ToolCallEvent", "ToolResult", "UnknownEventError", "Verdict",
    "add_trace_context", "all_event_names", "args_fingerprint", "compile_matcher", "configure",
    "configure_logging", "metric_views", "read_otlp_json_lines", "resolve_event",
    "WebhookConfig", "WebhookDeliverer", "PayloadBuilder", "WebhookSpanExporter",
    "AgentEventsConfig", "ConfigErrors", "ConfigSource", "LoadedConfig", "load_config",
    "AgentEvents", "EventBatch", "EventEntry", "EventLog", "EventLogClient", "EventLogError",
    "EventLogServer", "EventRecord", "Notice", "RingEventLog", "SqliteEventLog",
    "load_agent_events", "serve", "scrub_secrets", "LocalMetricProducer",
    "DeliveryReport", "DestinationReport", "__version__",
}  # fmt: skip


def test_public_names_are_the_intended_ones() -> None:
    assert set(otelhooks.__all__) == INTENDED
    for name in otelhooks.__all__:
        assert getattr(otelhooks, name) is not None


def test_every_public_object_has_a_docstring() -> None:
    undocumented = [
        name
        for name in otelhooks.__all__
        if callable(getattr(otelhooks, name)) and not getattr(otelhooks, name).__doc__
    ]
    assert undocumented == []


def test_importing_the_package_starts_no_thread_and_opens_no_socket() -> None:
    code = (
        "import threading, otelhooks;"
        "names = [t.name for t in threading.enumerate()];"
        "assert names == ['MainThread'], names"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert otelhooks.__version__ == version("otelhooks")
