"""The public surface is exactly the intended list, and importing it starts nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

import otelhooks

INTENDED = {
    "EVENTS", "AfterToolCallEvent", "AgentCall", "AgentMetrics", "AgentTracer", "Approval",
    "Block", "Compaction", "CompleteEvent", "ConfigError", "CountingBatchSpanProcessor",
    "CriticalHookDeliveryError", "Dialect", "ErrorEvent", "EventSpec", "Hook", "HookError",
    "HookEvent", "HookRegistry", "HookSpanProcessor", "HookTimeoutError", "InvalidMatcherError",
    "LlmCall", "Operation", "OtelHooks", "OtelHooksError", "OtlpJsonLinesSpanExporter", "Step",
    "ToolCall", "ToolCallEvent", "ToolResult", "UnknownEventError", "Verdict", "HookCapacityError",
    "add_trace_context", "all_event_names", "args_fingerprint", "compile_matcher", "configure",
    "configure_logging", "metric_views", "read_otlp_json_lines", "resolve_event",
    "WebhookConfig", "WebhookDeliverer", "PayloadBuilder", "WebhookSpanExporter",
    "AgentEventsConfig", "ConfigErrors", "ConfigSource", "LoadedConfig", "load_config",
    "AgentEvents", "EventBatch", "EventEntry", "EventLog", "EventLogClient", "EventLogError",
    "EventLogServer", "EventRecord", "Notice", "RingEventLog", "SqliteEventLog",
    "load_agent_events", "serve", "scrub_secrets", "register_secret",
    "HooksEngine", "HookStep", "matcher_values", "ControlProtocolError", "HookPoolExhaustedError",
    "Redactor", "EmailResolver", "truncate_results",
    "DeliveryReport", "DestinationReport", "__version__",
    "tool", "ToolDenied", "BudgetExceeded", "instrument",
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


def test_every_event_model_is_public_in_otelhooks_events() -> None:
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import otelhooks._events
    import otelhooks.events

    modules = [
        importlib.import_module(f"otelhooks._events.{m.name}")
        for m in pkgutil.iter_modules(otelhooks._events.__path__)
    ]
    models = {
        name
        for module in modules
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and not name.startswith("_")
        and value.__module__ == module.__name__
    }
    assert "ToolCallEvent" in models
    assert models <= set(otelhooks.events.__all__)
    for name in otelhooks.events.EVENTS.values():
        assert name.payload.__name__ in otelhooks.events.__all__


def test_otelhooks_testing_offers_its_helpers() -> None:
    import otelhooks.testing

    assert set(otelhooks.testing.__all__) == {
        "DataPoint",
        "EventCapture",
        "Recorder",
        "metric_points",
        "metric_total",
        "SequentialIdGenerator",
        "TestPipeline",
        "capture_events",
        "deterministic",
        "pipeline",
        "run_cli",
    }


def test_otelhooks_semconv_offers_every_name_otelhooks_writes() -> None:
    import otelhooks.semconv
    from otelhooks import _semconv

    names = set(otelhooks.semconv.__all__)
    assert {"SCHEMA_URL", "HOOK_DECISION", "GEN_AI_TOOL_NAME", "METRIC_HOOK_INVOCATIONS"} <= names
    assert names == {name for name in vars(_semconv) if name.isupper()}
    for name in names:
        assert getattr(otelhooks.semconv, name) is getattr(_semconv, name)


def test_a_guard_tested_with_the_public_pipeline_helper_denies(otelhooks_pipeline: object) -> None:
    from otelhooks import Block
    from otelhooks.testing import TestPipeline, capture_events

    assert isinstance(otelhooks_pipeline, TestPipeline)
    pipe = otelhooks_pipeline
    # registered first: an intercept event reaches the capture before the guard ends the chain
    captured = capture_events(pipe.oh, events=["before_tool_call", "on_tool_call_denied"])
    guard = {"id": "no-rm", "type": "beforeToolCall", "matcher": "rm", "handler": lambda e: Block()}
    pipe.oh.register([guard])
    ran: list[str] = []
    with pipe.oh.operation("helper") as op, op.step() as step:
        step.run_tool("", "rm", {"path": "/"}, lambda path: ran.append(path))
    assert ran == []
    (span,) = pipe.spans("execute_tool rm")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert captured.names() == ["before_tool_call", "on_tool_call_denied"]
    denied = {"otelhooks.hook.id": "no-rm", "otelhooks.outcome": "blocked"}
    assert pipe.metric_total("otelhooks.hook.invocations", denied) == 1


def test_deterministic_ids_and_clock_make_payloads_repeatable() -> None:
    from otelhooks.events import ToolCallEvent
    from otelhooks.testing import deterministic

    def two() -> list[tuple[str, int]]:
        with deterministic(start_ms=1_000, step_ms=10):
            events = [ToolCallEvent(toolCallId=str(i), identifier="", apiName="x") for i in (1, 2)]
        return [(e.eventId, e.timestamp) for e in events]

    assert two() == two() == [(f"{1:032x}", 1_000), (f"{2:032x}", 1_010)]


def test_importing_otelhooks_loads_no_submodule_until_a_name_is_used() -> None:
    code = (
        "import sys, otelhooks; "
        "loaded = sorted(m for m in sys.modules if m.startswith('otelhooks.')); "
        "print(loaded); otelhooks.configure; "
        "print('otelhooks._setup' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # only the helper that imports each name on first use (standard library only)
    assert out == ["['otelhooks._lazy']", "True"]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["serve", "--help"]])
def test_the_command_line_imports_a_commands_machinery_only_when_it_runs(args: list[str]) -> None:
    """Building the parser of every subcommand imported the hook config loader, the event log
    server and asyncio into each ``otelhooks`` process (0.3 s of CPU before it did anything,
    ``--version`` included)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "otelhooks", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip()
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "otelhooks._cli" in loaded  # the timing lines were read
    heavy = {"asyncio", "pydantic", "structlog", "otelhooks._config", "otelhooks._eventlog._server"}
    assert loaded & heavy == set()


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert otelhooks.__version__ == version("otelhooks")


def test_dir_lists_the_public_surface_only() -> None:
    otelhooks.configure  # noqa: B018 - loads private modules, which dir() must not show
    public = set(dir(otelhooks))
    assert public == set(otelhooks.__all__) | {
        "events",
        "integrations",
        "mcp",
        "replay",
        "semconv",
        "testing",
    }
    assert not {"Any", "TYPE_CHECKING", "importlib", "annotations"} & public
