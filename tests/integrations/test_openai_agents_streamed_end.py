"""``HookedRunner.run_streamed``: the operation of a streamed run (the real Agents SDK, a scripted
model that streams, no network) ends on every way the stream ends, as ``run``'s would, and never
leaks open."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
    SQLiteSession,
    UserError,
    function_tool,
    input_guardrail,
    output_guardrail,
    set_trace_processors,
)
from agents.testing import assistant_message, function_call
from opentelemetry.trace import StatusCode

from otelhooks import Block, BudgetExceeded
from otelhooks.integrations.openai_agents import HookedRunner, RunBlockedError
from otelhooks.testing import Recorder, TestPipeline, pipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel
from tests.integrations.test_openai_agents_streamed import NO_DELETE, deleter, stream_to_end


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def test_the_operation_ends_before_the_stream_does(pipe: TestPipeline) -> None:
    ran: list[str] = []
    agent, _ = deleter(ran)

    async def main() -> list[str]:
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up")
        async for _ in result.stream_events():
            pass
        return [s.name for s in pipe.spans("invoke_agent cleaner")]  # ended spans only

    assert asyncio.run(main()) == ["invoke_agent cleaner"]
    assert ran == ["a.txt"]  # no guard: the tool runs


def test_a_cancelled_stream_ends_its_operation_interrupted(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(NO_DELETE, hook("done", "onComplete", recorder))

    async def main() -> None:
        ran: list[str] = []
        agent, model = deleter(ran)
        runner = HookedRunner(pipe.tracer)
        result = await runner.run_streamed(agent, "clean up")
        async for event in result.stream_events():
            if event.type == "run_item_stream_event" and event.name == "tool_output":
                result.cancel()
        assert ran == []
        assert model.tool_outputs() == {}  # cancelled before the model's second turn

    asyncio.run(main())
    pipe.flush()
    op = pipe.span("invoke_agent cleaner")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "interrupted"
    assert [e.reason for e in recorder.of("on_complete")] == ["interrupted"]  # type: ignore[attr-defined]
    assert pipe.span("execute_tool delete_file").attributes["otelhooks.hook.decision"] == "deny"  # type: ignore[index]


def test_a_stream_left_unread_when_its_loop_ends_does_not_leak_its_operation(
    pipe: TestPipeline,
) -> None:
    # asyncio.run cancels the SDK's task as the loop ends: the operation ends with it
    model = ScriptedModel("scripted", [[assistant_message("never read")]])
    agent = Agent(name="idle", model=model)

    async def main() -> None:
        await HookedRunner(pipe.tracer).run_streamed(agent, "hi")

    asyncio.run(main())
    op = pipe.span("invoke_agent idle")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "interrupted"


def _shape(pipe: TestPipeline, agent: str) -> tuple[Any, ...]:
    op = pipe.span(f"invoke_agent {agent}")
    attrs = dict(op.attributes or {})
    return (
        op.status.status_code,
        attrs["otelhooks.operation.complete_reason"],
        attrs.get("otelhooks.guardrail.name"),
        sorted(s.name for s in pipe.spans() if s.name.startswith(("step", "chat", "execute"))),
    )


def _failing_agents() -> dict[str, tuple[Agent[Any], type[BaseException], dict[str, Any]]]:
    @input_guardrail
    def no_secrets(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    @output_guardrail
    def no_leaks(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="leak" in str(output))

    ran: list[str] = []
    looping, _ = deleter(ran)
    looping.model = ScriptedModel(
        "scripted",
        [[function_call("delete_file", {"path": "a.txt"}, call_id=f"d{n}")] for n in (1, 2)],
    )
    return {
        "model_error": (
            Agent(name="broken", model=ScriptedModel("scripted", [ConnectionError("model down")])),
            ConnectionError,
            {},
        ),
        "max_turns": (looping, MaxTurnsExceeded, {"max_turns": 1}),
        "input_guardrail": (
            Agent(
                name="guarded",
                model=ScriptedModel("scripted", [[assistant_message("never")]]),
                input_guardrails=[no_secrets],
            ),
            InputGuardrailTripwireTriggered,
            {},
        ),
        "output_guardrail": (
            Agent(
                name="leaky",
                model=ScriptedModel("scripted", [[assistant_message("a leak")]]),
                output_guardrails=[no_leaks],
            ),
            OutputGuardrailTripwireTriggered,
            {},
        ),
    }


@pytest.mark.parametrize(
    "case", ["model_error", "max_turns", "input_guardrail", "output_guardrail"]
)
def test_a_stream_that_raises_ends_its_operation_as_run_does(case: str) -> None:
    shapes, told = [], []
    for streamed in (False, True):
        seen = Recorder()
        with pipeline() as pipe:
            pipe.register(NO_DELETE, hook("err", "onError", seen), hook("end", "onComplete", seen))
            agent, raised, options = _failing_agents()[case]
            runner = HookedRunner(pipe.tracer)
            go = (
                stream_to_end(pipe, agent, "x", **options)
                if streamed
                else runner.run(agent, "x", **options)
            )
            with pytest.raises(raised):
                asyncio.run(go)
            pipe.flush()
            shapes.append(_shape(pipe, agent.name))
            told.append([(e.event, getattr(e, "errorType", None)) for e in seen.events])
            if case == "max_turns":  # the run's one tool call was denied, streamed or not
                denied = pipe.span("execute_tool delete_file").attributes
                assert denied is not None
                assert denied["otelhooks.hook.decision"] == "deny"
    if case == "input_guardrail":
        # a streamed run calls the model beside the guardrail (the SDK's way), run waits for it
        assert shapes[1][:3] == shapes[0][:3]
    else:
        assert shapes[1] == shapes[0]
    assert told[1] == told[0]
    assert [e for e, _ in told[0]] == ["on_error", "on_complete"] or case == "max_turns"


def test_a_stream_cancelled_after_its_turn_ends_interrupted_not_done(pipe: TestPipeline) -> None:
    # result.cancel(mode="after_turn") lets the turn's tool calls run (guarded) and stops before
    # the next model call, with no answer and nothing raised: the run was reported done
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, model = deleter(ran)

    async def main() -> None:
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up")
        async for event in result.stream_events():
            if event.type == "run_item_stream_event" and event.name == "tool_called":
                result.cancel(mode="after_turn")
        assert result.final_output is None

    asyncio.run(main())
    assert ran == []
    assert len(model.inputs) == 1
    op = pipe.span("invoke_agent cleaner")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "interrupted"
    assert pipe.span("execute_tool delete_file").attributes["otelhooks.hook.decision"] == "deny"  # type: ignore[index]


def test_a_blocked_or_refused_streamed_run_never_starts_and_ends_its_operation(
    pipe: TestPipeline,
) -> None:
    pipe.register(
        hook("no-secrets", "before_agent_start", lambda e: Block("no secrets"), matcher="vault")
    )
    model = ScriptedModel("scripted", [[assistant_message("never")]])

    async def main() -> None:
        runner = HookedRunner(pipe.tracer)
        with pytest.raises(RunBlockedError, match="no secrets"):
            await runner.run_streamed(Agent(name="vault", model=model), "the password")
        # the SDK refuses a session together with a conversation id before it starts a run
        with pytest.raises(UserError):
            await runner.run_streamed(
                Agent(name="sdk-refused", model=model),
                "hi",
                session=SQLiteSession("s"),
                conversation_id="c",
            )

    asyncio.run(main())
    assert model.inputs == []
    blocked, refused = pipe.span("invoke_agent vault"), pipe.span("invoke_agent sdk-refused")
    assert (blocked.attributes or {})["otelhooks.operation.complete_reason"] == "interrupted"
    assert (refused.attributes or {})["otelhooks.operation.complete_reason"] == "error"
    assert refused.status.status_code is StatusCode.ERROR


def test_a_stream_cancelled_while_a_tool_runs_ends_every_span(pipe: TestPipeline) -> None:
    # cancelled with the tool's call in flight: the call's span, its step and the operation all
    # end (the call and the step with the cancellation, the operation interrupted)
    started: list[asyncio.Event] = []

    @function_tool
    async def slow() -> str:
        """Take a long time."""
        started[0].set()
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel(
        "scripted", [[function_call("slow", {}, call_id="s1")], [assistant_message("never")]]
    )
    agent = Agent(name="waiter", model=model, tools=[slow])

    async def main() -> list[str]:
        started.append(asyncio.Event())
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "wait")

        async def stop() -> None:
            await asyncio.wait_for(started[0].wait(), 30)
            result.cancel()

        stopper = asyncio.create_task(stop())
        async for _ in result.stream_events():
            pass
        await stopper
        return sorted(s.name for s in pipe.spans())

    assert asyncio.run(main()) == [
        "chat scripted",
        "execute_tool slow",
        "invoke_agent waiter",
        "step 0",
    ]
    op = pipe.span("invoke_agent waiter")
    assert (op.attributes or {})["otelhooks.operation.complete_reason"] == "interrupted"
    for name in ("execute_tool slow", "step 0"):
        span = pipe.span(name)
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "asyncio.exceptions.CancelledError"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_budget_guard_that_refuses_a_model_call_stops_the_run(
    pipe: TestPipeline, recorder: Recorder, streamed: bool
) -> None:
    # past the budget the guard refused the second model call (its span said deny), but the
    # adapter logged the refusal as a telemetry problem and the SDK sent the call anyway
    pipe.register(
        {"id": "cap", "type": "beforeToolCall", "budget": {"operation_tokens": 10}},
        hook("end", "onComplete", recorder),
    )
    ran: list[str] = []
    agent, model = deleter(ran)
    runner = HookedRunner(pipe.tracer)
    go = stream_to_end(pipe, agent, "clean up") if streamed else runner.run(agent, "clean up")
    with pytest.raises(BudgetExceeded, match="past its limit of 10"):
        asyncio.run(go)
    pipe.flush()

    assert len(model.inputs) == 1  # the second call was never sent
    assert ran == []  # the tool call between them was denied by the same guard
    op = pipe.span("invoke_agent cleaner")
    assert (op.attributes or {})["otelhooks.operation.complete_reason"] == "cost_limit"
    assert [e.reason for e in recorder.of("on_complete")] == ["cost_limit"]  # type: ignore[attr-defined]
    refused = [s for s in pipe.spans("chat scripted") if s.status.status_code is StatusCode.ERROR]
    assert [(s.attributes or {})["otelhooks.budget.scope"] for s in refused] == ["operation_tokens"]
