"""The reference runtime drives real tools, approvals, compaction, sub-agents and limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import AgentTracer, HookSpanProcessor
from otelhooks._runtime import (
    AgentSpec,
    ModelReply,
    ScriptedModel,
    ToolRequest,
    calculator_tools,
    exec_agent,
    failing_tool,
    file_tools,
)


class Rig:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.hooks = HookSpanProcessor()
        self.provider.add_span_processor(self.hooks)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = AgentTracer(tracer_provider=self.provider, hooks=self.hooks)

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    yield r
    r.provider.shutdown()


def test_files_tool_reads_inside_the_workspace_and_refuses_outside(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    read = next(t for t in file_tools(tmp_path) if t.api_name == "readFile")
    assert read.fn(path="a.txt") == "hello"
    with pytest.raises(PermissionError):
        read.fn(path="../../etc/passwd")


def test_calculator_evaluates_arithmetic_and_refuses_names() -> None:
    calc = calculator_tools()[0]
    assert calc.fn(expression="(3 + 4) * 6") == "42"
    with pytest.raises(ValueError, match="unsupported"):
        calc.fn(expression="__import__('os')")


def test_a_run_without_tools_completes_with_the_answer_sent(rig: Rig) -> None:
    spec = AgentSpec("helper", ScriptedModel([ModelReply("hi there")]))
    result = exec_agent(rig.tracer, spec, "hello")
    assert (result.reason, result.output, result.steps) == ("done", "hi there", 1)
    assert len(rig.spans("send_message chat")) == 1


def test_tool_errors_reach_the_model_and_the_run_goes_on(rig: Rig) -> None:
    model = ScriptedModel(
        [ModelReply("try", (ToolRequest("flaky", "explode", {}),)), ModelReply("gave up")]
    )
    result = exec_agent(rig.tracer, AgentSpec("a", model, tools=[failing_tool()]), "go")
    assert result.reason == "done"
    assert result.tool_results[0].success is False
    assert "ConnectionError" in result.tool_results[0].content


def test_the_step_limit_ends_the_run_with_max_steps(rig: Rig) -> None:
    model = ScriptedModel(
        [ModelReply("again", (ToolRequest("calc", "evaluate", {"expression": "1+1"}),))]
    )
    spec = AgentSpec("loop", model, tools=calculator_tools(), max_steps=3)
    result = exec_agent(rig.tracer, spec, "go")
    assert (result.reason, result.steps) == ("max_steps", 3)
    root = rig.spans("invoke_agent loop")[0]
    assert root.attributes is not None
    assert root.attributes["otelhooks.operation.complete_reason"] == "max_steps"


def test_the_cost_limit_ends_the_run_after_the_budget_threshold_event(rig: Rig) -> None:
    reply = ModelReply("again", (ToolRequest("calc", "evaluate", {"expression": "2"}),), 900, 100)
    spec = AgentSpec("spender", ScriptedModel([reply]), tools=calculator_tools(), cost_limit=0.03)
    result = exec_agent(rig.tracer, spec, "go")
    assert result.reason == "cost_limit"
    events = [e.name for s in rig.exporter.get_finished_spans() for e in s.events]
    assert "otelhooks.on_budget_threshold" in events


def test_a_rejected_approval_interrupts_the_run_and_the_tool_never_runs(
    rig: Rig, tmp_path: Path
) -> None:
    (tmp_path / "keep.txt").write_text("x")
    model = ScriptedModel(
        [ModelReply("rm", (ToolRequest("fs", "deleteFile", {"path": "keep.txt"}),))]
    )
    spec = AgentSpec("ops", model, tools=file_tools(tmp_path), approver=lambda r: "no")
    result = exec_agent(rig.tracer, spec, "clean")
    assert result.reason == "interrupted"
    assert (tmp_path / "keep.txt").exists()
    assert rig.spans("execute_tool deleteFile") == []


def test_an_approved_tool_runs(rig: Rig, tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x")
    model = ScriptedModel(
        [
            ModelReply("rm", (ToolRequest("fs", "deleteFile", {"path": "old.txt"}),)),
            ModelReply("ok"),
        ]
    )
    result = exec_agent(rig.tracer, AgentSpec("ops", model, tools=file_tools(tmp_path)), "clean")
    assert result.reason == "done"
    assert not (tmp_path / "old.txt").exists()


def test_the_context_is_compacted_past_the_token_budget(rig: Rig) -> None:
    long = "word " * 300
    model = ScriptedModel(
        [
            ModelReply(long, (ToolRequest("calc", "evaluate", {"expression": "1"}),)),
            ModelReply(long, (ToolRequest("calc", "evaluate", {"expression": "2"}),)),
            ModelReply("done"),
        ]
    )
    spec = AgentSpec("c", model, tools=calculator_tools(), token_budget=200)
    assert exec_agent(rig.tracer, spec, "go").reason == "done"
    compactions = rig.spans("compress_context")
    assert compactions
    assert compactions[0].attributes is not None
    assert compactions[0].attributes["otelhooks.compact.tokens_saved"] > 0


def test_a_model_error_ends_the_run_with_reason_error(rig: Rig) -> None:
    spec = AgentSpec("b", ScriptedModel([], error=RuntimeError("bad json")))
    result = exec_agent(rig.tracer, spec, "go")
    assert result.reason == "error"
    assert isinstance(result.error, RuntimeError)
    with pytest.raises(RuntimeError, match="bad json"):
        exec_agent(rig.tracer, spec, "go", raise_errors=True)


def test_sub_agents_run_in_process_isolated_and_failing(rig: Rig) -> None:
    child = AgentSpec("kid", ScriptedModel([ModelReply("kid says hi")]))
    broken = AgentSpec("broken", ScriptedModel([], error=TimeoutError("slow")))
    calls = tuple(
        ToolRequest("agents", "call", args)
        for args in (
            {"agent": "kid", "instruction": "a"},
            {"agent": "kid", "instruction": "b", "isolated": True},
            {"agent": "broken", "instruction": "c"},
        )
    )
    model = ScriptedModel([ModelReply("delegate", calls), ModelReply("done")])
    spec = AgentSpec("boss", model, subagents={"kid": child, "broken": broken})
    result = exec_agent(rig.tracer, spec, "go")
    assert result.reason == "done"
    assert [r.success for r in result.tool_results] == [True, True, False]
    boss = rig.spans("invoke_agent boss")[0]
    kids = rig.spans("invoke_agent kid")
    assert {k.context.trace_id == boss.context.trace_id for k in kids} == {True, False}
