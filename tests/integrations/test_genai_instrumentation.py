"""A real GenAI-semconv instrumentation from PyPI on the same provider: its spans fire observers.

``opentelemetry-instrumentation-openai-agents-v2`` (opentelemetry-python-contrib) turns the
Agents SDK's own traces into ``invoke_agent`` / ``execute_tool`` / ``chat`` spans. It runs
offline here: the SDK drives a scripted ``Model`` that opens a ``generation_span`` per call, as
the SDK's OpenAI models do. otelhooks is not in the loop that creates these spans; the hook
processor sees them as foreign GenAI spans when they end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.instrumentation.openai_agents")

from agents import Agent, Runner, function_tool, set_trace_processors
from agents.testing import assistant_message, function_call
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

from otelhooks import AgentEvents, AgentEventsConfig, WebhookDeliverer
from otelhooks.testing import TestPipeline
from tests._webhook_server import WebhookServer
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture
def instrumented(pipe: TestPipeline) -> Iterator[TestPipeline]:
    set_trace_processors([])  # only the instrumentation's processor, nothing sent anywhere
    OpenAIAgentsInstrumentor().instrument(tracer_provider=pipe.oh.tracer_provider)
    yield pipe
    OpenAIAgentsInstrumentor().uninstrument()


def run_agent() -> str:
    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @function_tool
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    model = ScriptedModel(
        "scripted-large",
        [
            [
                function_call("add", {"a": 2, "b": 3}, call_id="c1"),
                function_call("flaky", {}, call_id="c2"),
            ],
            [assistant_message("5")],
        ],
    )
    agent = Agent(name="calculator", model=model, tools=[add, flaky])
    result = asyncio.run(Runner.run(agent, "add 2 and 3"))
    return str(result.final_output)


def test_its_invoke_agent_execute_tool_and_chat_spans_are_exported(
    instrumented: TestPipeline,
) -> None:
    assert run_agent() == "5"
    ops = {(s.attributes or {}).get("gen_ai.operation.name") for s in instrumented.spans()}
    assert {"invoke_agent", "execute_tool", "chat"} <= ops
    agent = [s for s in instrumented.spans() if s.name == "invoke_agent calculator"]
    assert len(agent) == 1
    tools = sorted(s.name for s in instrumented.spans("execute_tool add"))
    assert tools == ["execute_tool add"]


def test_its_spans_fire_otelhooks_observer_hooks(
    instrumented: TestPipeline, recorder: Recorder
) -> None:
    instrumented.register(
        hook("tools", "afterToolCall", recorder),
        hook("errors", "onToolCallError", recorder),
        hook("llm", "llm_output", recorder),
        hook("done", "onComplete", recorder),
    )
    run_agent()
    instrumented.flush()

    assert [e.apiName for e in recorder.of("after_tool_call")] == ["add"]  # type: ignore[attr-defined]
    assert [e.apiName for e in recorder.of("on_tool_call_error")] == ["flaky"]  # type: ignore[attr-defined]
    assert len(recorder.of("llm_output")) == 2
    assert recorder.of("llm_output")[0].tokenUsage.output == 7  # type: ignore[attr-defined]
    (agent,) = instrumented.spans("invoke_agent calculator")
    assert agent.context is not None
    completed = {e.spanId for e in recorder.of("on_complete")}
    assert format(agent.context.span_id, "016x") in completed


def test_its_spans_land_in_the_event_log(instrumented: TestPipeline) -> None:
    events = AgentEvents(AgentEventsConfig(name="genai", on=["after_tool_result", "after_loop"]))
    events.install(instrumented.oh.hooks)
    run_agent()
    instrumented.flush()

    records = events.log.read(0, 100).records
    tools = sorted((r.tool, r.success) for r in records if r.kind == "after_tool_result")
    assert tools == [("add", True), ("flaky", False)]
    assert any(r.kind == "after_loop" for r in records)
    trace_ids = {r.trace_id for r in records}
    spans = {format(s.context.trace_id, "032x") for s in instrumented.spans() if s.context}
    assert trace_ids <= spans


def test_its_spans_reach_a_webhook_on_a_real_local_server(
    instrumented: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    instrumented.register(
        {"id": "notify", "type": "afterToolCall", "webhook": {"url": server.url + "/tools"}}
    )
    run_agent()
    instrumented.flush()
    assert deliverer.flush(10)

    (body,) = [r.json() for r in server.requests("/tools")]
    assert (body["event"], body["apiName"], body["success"]) == ("after_tool_call", "add", True)
