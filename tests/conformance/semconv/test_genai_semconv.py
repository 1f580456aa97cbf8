"""GenAI semantic conventions, checked on what the SDK really exports from a configured pipeline.

The fixture ``genai_requirements.json`` copies the requirement levels, units and bucket
boundaries of the spans and metrics otelhooks emits from the GenAI conventions' repository
(``open-telemetry/semantic-conventions-genai``; files and commits named in it). The runs
below make every condition true once: a provider, a conversation, a model, a failing model
call, a tool that raises and one that returns a failed result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import (
    Histogram,
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    Sum,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otelhooks import AgentTracer, configure
from otelhooks.testing import TestPipeline

SPEC = json.loads((Path(__file__).parent / "genai_requirements.json").read_text())
OPERATION_OF_SPAN = {
    "gen_ai.invoke_agent.internal": "invoke_agent",
    "gen_ai.inference.client": "chat",
    "gen_ai.execute_tool.internal": "execute_tool",
}
DEFAULT_PROVIDER = "gcp.vertex_ai"


@dataclass
class Telemetry:
    spans: list[ReadableSpan]
    metrics: dict[str, Metric]

    def of(self, operation: str) -> list[ReadableSpan]:
        return [
            s for s in self.spans if (s.attributes or {}).get("gen_ai.operation.name") == operation
        ]

    def named(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.spans if s.name == name]
        return span


def _broken_tool() -> str:
    raise RuntimeError("disk on fire")


def _agent_runs(tracer: AgentTracer) -> None:
    with tracer.operation("planner", provider="openai", session_id="conv-1") as op:
        with op.step() as step:
            with step.llm("gpt-4o") as call:
                call.record("ok", input_tokens=10, output_tokens=2, finish_reason="stop")
            step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
            step.run_tool("fs", "explode", {}, _broken_tool)
            with step.tool_call("fs", "stat", {}) as failed:
                failed.set_result("no such file", success=False)
        op.emit("message_received", content="hi")
    with pytest.raises(TimeoutError), tracer.operation("fixer", session_id="conv-2") as op:
        _failing_model_call(op)
    with (
        tracer.operation("helper", session_id="conv-3") as op,
        op.step() as step,
        step.llm("gemini-pro") as call,
    ):
        call.record("ok", input_tokens=1, output_tokens=1, finish_reason="stop")
    with tracer.operation("summariser", session_id="conv-4") as op, op.step() as step:
        with step.compact(message_count=40, token_count=9000) as compaction:
            compaction.done(messages_after=4, tokens_after=800, summary="short")
        with step.llm("gpt-4o-mini") as call:
            call.record(
                "after",
                input_tokens=5,
                output_tokens=1,
                response_model="gpt-4o-mini-2",
                finish_reason="stop",
            )
        with step.llm("gpt-4o-mini") as call:
            call.record("later", input_tokens=5, output_tokens=1, finish_reason="stop")


def _failing_model_call(op: Any) -> None:
    with op.step() as step, step.llm("claude-sonnet", provider="anthropic"):
        raise TimeoutError("model timed out")


@pytest.fixture(scope="module")
def telemetry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    oh = configure(
        service_name="semconv-conformance",
        span_exporters=[exporter],
        metric_readers=[reader],
        otlp=False,
        set_global=False,
        structured_logging=False,
        outbox_path=tmp_path_factory.mktemp("outbox") / "outbox.db",
        provider=DEFAULT_PROVIDER,
    )
    try:
        _agent_runs(oh.tracer)
        assert oh.force_flush(10)
        data = reader.get_metrics_data()
        assert data is not None
        metrics = {
            m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }
        yield Telemetry(list(exporter.get_finished_spans()), metrics)
    finally:
        oh.shutdown(5)


@pytest.mark.parametrize("span_type", sorted(SPEC["spans"]))
def test_spans_carry_required_and_applicable_attributes(
    telemetry: Telemetry, span_type: str
) -> None:
    rule = SPEC["spans"][span_type]
    spans = telemetry.of(OPERATION_OF_SPAN[span_type])
    assert spans
    for span in spans:
        attrs = dict(span.attributes or {})
        failed = span.status.status_code is StatusCode.ERROR
        expected = set(rule["required"]) | set(rule["conditionally_required"])
        if not failed:  # a failed call has no response to describe
            expected |= set(rule["recommended"])
            expected.discard("error.type")
        missing = sorted(expected - set(attrs))
        assert missing == [], f"{span.name} lacks {missing}"
        assert span.kind.name == rule["kind"]
        if not failed:
            assert "error.type" not in attrs, span.name


def test_the_inference_after_a_compaction_says_the_conversation_was_compacted(
    telemetry: Telemetry,
) -> None:
    name = "gen_ai.conversation.compacted"
    assert name in SPEC["spans"]["gen_ai.inference.client"]["recommended_when"]
    chats = [s for s in telemetry.of("chat") if s.name == "chat gpt-4o-mini"]
    chats.sort(key=lambda s: s.start_time or 0)
    assert [(s.attributes or {}).get(name) for s in chats] == [True, None]
    assert all(name not in (s.attributes or {}) for s in telemetry.of("chat") if s not in chats)


def test_execute_tool_spans_name_the_agent_executing_the_tool(telemetry: Telemetry) -> None:
    tools = telemetry.of("execute_tool")
    assert {(s.attributes or {}).get("gen_ai.agent.name") for s in tools} == {"planner"}


def test_error_type_is_the_canonical_class_name_beside_exception_type(
    telemetry: Telemetry,
) -> None:
    failed = [s for s in telemetry.spans if s.status.status_code is StatusCode.ERROR]
    recorded = [(s, e) for s in failed for e in s.events if e.name == "exception"]
    assert recorded
    for span, event in recorded:
        assert (span.attributes or {})["error.type"] == (event.attributes or {})["exception.type"]


def test_the_scope_names_its_version_and_schema(telemetry: Telemetry) -> None:
    scopes = {
        (s.instrumentation_scope.name, s.instrumentation_scope.version)
        for s in telemetry.spans
        if s.instrumentation_scope
    }
    assert all(version for _, version in scopes)
    urls = {s.instrumentation_scope.schema_url for s in telemetry.spans if s.instrumentation_scope}
    assert urls == {"https://opentelemetry.io/schemas/1.43.0"}


def test_failed_spans_have_status_error_and_error_type(telemetry: Telemetry) -> None:
    chat = telemetry.named("chat claude-sonnet")
    assert chat.status.status_code is StatusCode.ERROR
    assert (chat.attributes or {})["error.type"] == "TimeoutError"
    tool = telemetry.named("execute_tool explode")
    assert (tool.attributes or {})["error.type"] == "RuntimeError"
    # A failed result without an exception: the conventions' fallback value.
    assert (telemetry.named("execute_tool stat").attributes or {})["error.type"] == "_OTHER"


def test_an_exception_is_recorded_once_where_it_happened(telemetry: Telemetry) -> None:
    chat = telemetry.named("chat claude-sonnet")
    trace_spans = [s for s in telemetry.spans if s.context.trace_id == chat.context.trace_id]
    recorded = [(s.name, e.name) for s in trace_spans for e in s.events if e.name == "exception"]
    assert recorded == [("chat claude-sonnet", "exception")]
    for name in ("step 0", "invoke_agent fixer"):
        (parent,) = [s for s in trace_spans if s.name == name]
        assert parent.status.status_code is StatusCode.ERROR, name
        assert (parent.attributes or {})["error.type"] == "TimeoutError", name


def test_provider_names_come_from_the_model_call_never_otelhooks(telemetry: Telemetry) -> None:
    known = set(SPEC["provider_well_known_values"])
    seen = {
        s.name: (s.attributes or {}).get("gen_ai.provider.name")
        for s in telemetry.spans
        if "gen_ai.provider.name" in (s.attributes or {})
    }
    assert set(seen.values()) <= known, seen
    assert seen["invoke_agent planner"] == "openai"
    assert seen["chat gpt-4o"] == "openai"
    # The failing call named its provider; the run had none, and learnt it from the call.
    assert seen["chat claude-sonnet"] == "anthropic"
    assert seen["invoke_agent fixer"] == "anthropic"
    # Neither the run nor the call named one: configure(provider=...)'s default.
    assert seen["invoke_agent helper"] == DEFAULT_PROVIDER


def test_provider_name_is_left_out_when_nobody_knows_it(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("a") as op, op.step() as step, step.llm("scripted"):
        pass
    for span in pipe.spans():
        assert "gen_ai.provider.name" not in (span.attributes or {}), span.name


def test_token_usage_is_not_reported_when_the_counts_are_unknown(pipe: TestPipeline) -> None:
    # gen-ai-metrics.md: without the counts the instrumentation MUST NOT report the usage metric.
    with pipe.tracer.operation("a") as op, op.step() as step, step.llm("m", provider="openai"):
        pass
    assert pipe.metric_points("gen_ai.client.token.usage") == []
    assert "gen_ai.usage.input_tokens" not in (pipe.span("chat m").attributes or {})
    assert pipe.metric_total("gen_ai.client.operation.duration") == 1


def test_chat_spans_carry_the_conversation_id(telemetry: Telemetry) -> None:
    assert (telemetry.named("chat gpt-4o").attributes or {})["gen_ai.conversation.id"] == "conv-1"


@pytest.mark.parametrize("metric_name", sorted(SPEC["metrics"]))
def test_genai_metrics_have_the_spec_unit_buckets_and_attributes(
    telemetry: Telemetry, metric_name: str
) -> None:
    rule = SPEC["metrics"][metric_name]
    metric = telemetry.metrics[metric_name]
    assert metric.unit == rule["unit"]
    assert isinstance(metric.data, Histogram)
    points = list(metric.data.data_points)
    assert points
    for point in points:
        assert isinstance(point, HistogramDataPoint)
        assert list(point.explicit_bounds) == [float(b) for b in rule["buckets"]]
        attrs = dict(point.attributes or {})
        wanted = set(rule["required"]) | set(rule["conditionally_required"]) - {"error.type"}
        wanted |= set(rule.get("recommended", ()))
        assert sorted(wanted - set(attrs)) == [], attrs


def test_duration_metrics_carry_error_type_exactly_on_failures(telemetry: Telemetry) -> None:
    def error_types(name: str, key: str) -> dict[Any, Any]:
        data = telemetry.metrics[name].data
        assert isinstance(data, Histogram)
        return {
            (p.attributes or {}).get(key): (p.attributes or {}).get("error.type")
            for p in data.data_points
        }

    assert error_types("gen_ai.invoke_agent.duration", "gen_ai.agent.name") == {
        "planner": None,
        "fixer": "TimeoutError",
        "helper": None,
        "summariser": None,
    }
    assert error_types("gen_ai.execute_tool.duration", "gen_ai.tool.name") == {
        "readFile": None,
        "explode": "RuntimeError",
        "stat": "_OTHER",
    }
    assert error_types("gen_ai.client.operation.duration", "gen_ai.request.model") == {
        "gpt-4o": None,
        "claude-sonnet": "TimeoutError",
        "gemini-pro": None,
        "gpt-4o-mini": None,
    }


CURLY = re.compile(r"^\{[A-Za-z_]+\}$")  # {call}, {token}; {USD} for the cost counter


def test_counts_use_curly_brace_units_never_one(telemetry: Telemetry) -> None:
    counters = {n: m.unit for n, m in telemetry.metrics.items() if isinstance(m.data, Sum)}
    assert "otelhooks.agent.errors" in counters
    assert {n: u for n, u in counters.items() if not CURLY.match(u)} == {}


def test_event_ids_live_under_otelhooks_not_the_event_namespace(telemetry: Telemetry) -> None:
    planner = telemetry.named("invoke_agent planner")
    (event,) = [e for e in planner.events if e.name == "otelhooks.message_received"]
    attrs = dict(event.attributes or {})
    assert "event.id" not in attrs
    assert re.fullmatch(r"[0-9a-f]{32}", str(attrs["otelhooks.event.id"]))
    spec_namespace = [k for s in telemetry.spans for e in s.events for k in (e.attributes or {})]
    assert [k for k in spec_namespace if k.startswith("event.")] == []
