"""``HookedRunner.run_streamed``: a streamed run of the real Agents SDK (a scripted model that
streams, no network) is guarded as ``run`` is, and records what ``run`` records (how its
operation ends: ``test_openai_agents_streamed_end.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    Runner,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    function_tool,
    set_trace_processors,
    tool_input_guardrail,
)
from agents.testing import assistant_message, function_call
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from otelhooks import Block, HookEvent, ToolCallEvent
from otelhooks.integrations.openai_agents import (
    HookedRunner,
    RunBlockedError,
    UnguardedToolWarning,
    hook_agent,
)
from otelhooks.testing import Recorder, TestPipeline, pipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def no_delete(event: HookEvent) -> Block | None:
    return Block("deleting files is not allowed")


NO_DELETE = hook("no-delete", "PreToolUse", no_delete, matcher="delete_file$")


def deleter(ran: list[str], call_id: str = "d1") -> tuple[Agent[Any], ScriptedModel]:
    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel(
        "scripted",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id=call_id)],
            [assistant_message("done")],
        ],
    )
    return Agent(name="cleaner", model=model, tools=[delete_file]), model


def test_a_streamed_run_denies_a_tool_a_guard_denies(pipe: TestPipeline) -> None:
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, model = deleter(ran)

    async def main() -> list[str]:
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up", session_id="s-1")
        kinds = [event.type async for event in result.stream_events()]
        assert result.final_output == "done"
        return kinds

    kinds = asyncio.run(main())
    assert "run_item_stream_event" in kinds
    assert ran == []
    assert model.tool_outputs()["d1"] == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    op = pipe.span("invoke_agent cleaner")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "done"


def test_a_reader_that_stops_early_still_gets_the_deny_to_the_model(pipe: TestPipeline) -> None:
    # the consumer reads one event and walks away: the SDK's run goes on in its task, every
    # tool call still guarded, and the operation ends with it
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, model = deleter(ran)

    async def main() -> None:
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up")
        async for _ in result.stream_events():
            break
        task = result.run_loop_task
        assert task is not None
        await asyncio.wait_for(asyncio.shield(task), 30)

    asyncio.run(main())
    assert ran == []
    assert model.tool_outputs()["d1"] == "deleting files is not allowed"
    op = pipe.span("invoke_agent cleaner")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "done"


async def stream_to_end(pipe: TestPipeline, agent: Agent[Any], input: Any, **options: Any) -> Any:
    """A streamed run read to its end (what ``run`` returns: the result, or the error raised)."""
    result = await HookedRunner(pipe.tracer).run_streamed(agent, input, **options)
    async for _ in result.stream_events():
        pass
    return result


def _agent_of(pipe: TestPipeline, span: Any) -> str:
    """The agent of the ``invoke_agent`` span ``span`` is in."""
    by_id = {s.context.span_id: s for s in pipe.spans() if s.context is not None}
    while not span.name.startswith("invoke_agent "):
        span = by_id[span.parent.span_id]
    return str(span.name.removeprefix("invoke_agent "))


def test_two_streamed_runs_at_once_each_guard_and_record_their_own_calls(
    pipe: TestPipeline,
) -> None:
    pipe.register(NO_DELETE)
    ran: list[str] = []
    started: dict[str, asyncio.Event] = {}

    def agent(name: str, other: str) -> tuple[Agent[Any], ScriptedModel]:
        @function_tool(name_override="work")
        async def work() -> str:
            """Work, once the other run's work has begun too."""
            started[name].set()
            await asyncio.wait_for(started[other].wait(), 30)
            ran.append(name)
            return f"{name} worked"

        @function_tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            ran.append(f"{name} deleted")
            return "deleted"

        model = ScriptedModel(
            f"scripted-{name}",
            [
                [
                    function_call("work", {}, call_id=f"w-{name}"),
                    function_call("delete_file", {"path": "a.txt"}, call_id=f"d-{name}"),
                ],
                [assistant_message(f"{name} done")],
            ],
        )
        return Agent(name=name, model=model, tools=[work, delete_file]), model

    async def main() -> list[Any]:
        started.update(left=asyncio.Event(), right=asyncio.Event())
        (left, left_model), (right, right_model) = agent("left", "right"), agent("right", "left")
        results = await asyncio.gather(
            stream_to_end(pipe, left, "go"), stream_to_end(pipe, right, "go")
        )
        assert [r.final_output for r in results] == ["left done", "right done"]
        return [left_model, right_model]

    left_model, right_model = asyncio.run(main())
    assert sorted(ran) == ["left", "right"]
    for name, model in (("left", left_model), ("right", right_model)):
        assert model.tool_outputs() == {
            f"w-{name}": f"{name} worked",
            f"d-{name}": "deleting files is not allowed",
        }
    tools = [s for s in pipe.spans() if s.name.startswith("execute_tool ")]
    got = sorted((_agent_of(pipe, s), (s.attributes or {})["gen_ai.tool.call.id"]) for s in tools)
    assert got == [
        ("left", "d-left"),
        ("left", "w-left"),
        ("right", "d-right"),
        ("right", "w-right"),
    ]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_streamed_run_paused_for_approval_and_resumed_streamed_is_guarded(
    pipe: TestPipeline, recorder: Recorder, decision: str
) -> None:
    from agents import RunState

    pipe.register(NO_DELETE, hook("denied", "on_tool_call_denied", recorder))
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel(
        "scripted",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id="d1")],
            [assistant_message("cleaned")],
        ],
    )
    agent = Agent(name="cleaner", model=model, tools=[delete_file])

    async def both_halves() -> None:
        first = await stream_to_end(pipe, agent, "clean up")
        assert [i.call_id for i in first.interruptions] == ["d1"]
        state = await RunState.from_string(hook_agent(agent), first.to_state().to_string())
        for item in state.get_interruptions():
            if decision == "approve":
                state.approve(item)
            else:
                state.reject(item, rejection_message="not that file")
        second = await stream_to_end(pipe, agent, state)
        assert second.final_output == "cleaned"

    asyncio.run(both_halves())
    pipe.flush()
    assert ran == []
    first, second = sorted(pipe.spans("invoke_agent cleaner"), key=lambda s: s.start_time or 0)
    reasons = [(s.attributes or {})["otelhooks.operation.complete_reason"] for s in (first, second)]
    assert reasons == ["interrupted", "done"]
    pending = [
        dict(e.attributes or {})
        for s in pipe.spans()
        for e in s.events
        if e.name == "otelhooks.tool_approval"
    ]
    assert [p["otelhooks.approval.decision"] for p in pending] == (
        ["pending"] if decision == "approve" else ["pending", "deny"]
    )
    told = [(e.toolCallId, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    if (
        decision == "approve"
    ):  # the person said yes; the guard still says no, and the model hears it
        assert model.tool_outputs()["d1"] == "deleting files is not allowed"
        assert told == [("d1", "no-delete")]
    else:
        assert model.tool_outputs()["d1"] == "not that file"
        assert told == [("d1", "needs_approval")]


def _tree(pipe: TestPipeline) -> list[tuple[str, str, str | None]]:
    """Each span as (name, its parent's name, its hook decision), in a stable order."""
    spans = pipe.spans()
    by_id = {s.context.span_id: s.name for s in spans if s.context is not None}
    return sorted(
        (
            s.name,
            by_id.get(s.parent.span_id, "") if s.parent else "",
            (s.attributes or {}).get("otelhooks.hook.decision"),  # type: ignore[misc]
        )
        for s in spans
    )


def test_a_streamed_run_with_a_handoff_records_what_run_records() -> None:
    from tests.integrations.test_openai_agents import GUARDS, World, build

    trees, worlds = [], []
    for streamed in (False, True):
        world = World()
        with pipeline() as pipe:
            pipe.register(*GUARDS)
            planner, _, _ = build(world)
            if streamed:
                result = asyncio.run(stream_to_end(pipe, planner, "plan it", session_id="s-42"))
            else:
                runner = HookedRunner(pipe.tracer)
                result = asyncio.run(runner.run(planner, "plan it", session_id="s-42"))
            assert result.final_output == "3 words, 1 file kept"
            trees.append(_tree(pipe))
            worlds.append((world.ran, world.files))
    assert trees[1] == trees[0]
    assert (
        worlds[1]
        == worlds[0]
        == (["add", "read_file", "word_count"], {"a.txt": "hello otel hooks"})
    )


def test_a_streamed_run_guards_its_mcp_servers_tools(pipe: TestPipeline, tmp_path: Path) -> None:
    # a real MCP server over stdio: a deny never reaches it, a mock answers for it, a rewrite
    # reaches it as rewritten
    pytest.importorskip("mcp")
    from tests.integrations.test_openai_agents_mcp import notes_server, reached

    def mock_lookup(event: ToolCallEvent) -> None:
        event.mock("cached value")

    def redact(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"text": "[redacted]"}})

    pipe.register(
        hook("no-delete", "PreToolUse", lambda e: Block("no purges"), matcher="mcp__notes__purge"),
        hook("mock", "before_tool_call", mock_lookup, matcher="notes/lookup"),
        hook("redact", "before_tool_call", redact, matcher="write_note"),
    )
    log = tmp_path / "log"
    calls = [("lookup", {"key": "k"}), ("write_note", {"text": "secret"}), ("purge", {"key": "k"})]
    turn = [function_call(t, a, call_id=f"m{i}") for i, (t, a) in enumerate(calls, 1)]
    model = ScriptedModel("scripted", [turn, [assistant_message("done")]])

    async def main() -> Any:
        async with notes_server(log) as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            return await stream_to_end(pipe, agent, "go")

    assert asyncio.run(main()).final_output == "done"
    assert [(c["tool"], c["args"]) for c in reached(log)] == [
        ("write_note", {"text": "[redacted]"})
    ]
    seen = model.tool_outputs()
    assert "cached value" in seen["m1"]
    assert "noted: [redacted]" in seen["m2"]
    assert "no purges" in seen["m3"]


def test_the_callers_context_holds_neither_the_run_nor_its_span(pipe: TestPipeline) -> None:
    # the run and its operation's span live in the SDK's task only: a hooked agent the caller
    # then runs with the SDK's own Runner is not reported into the streamed run (it says so)
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, _ = deleter(ran)
    plain, _ = deleter(ran, call_id="d2")

    async def main() -> None:
        before = trace.get_current_span()
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up")
        assert trace.get_current_span() is before
        with pytest.warns(UnguardedToolWarning, match="delete_file"):
            await Runner.run(hook_agent(plain), "clean up")
        async for _ in result.stream_events():
            pass

    asyncio.run(main())
    assert ran == ["a.txt"]  # the plain SDK run's call, which no guard saw (and said so)
    assert [
        (s.attributes or {})["gen_ai.tool.call.id"] for s in pipe.spans("execute_tool delete_file")
    ] == ["d1"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_run_config_given_as_a_dict_is_taken_as_the_sdk_takes_it(
    pipe: TestPipeline, streamed: bool
) -> None:
    # the SDK's runner takes run_config as a RunConfig or a dict of its fields: the dict raised
    # a TypeError from otelhooks' copy of it (replace() of a non-dataclass) before the SDK ran
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, model = deleter(ran)
    config = {"workflow_name": "cleanup", "tracing_disabled": True}

    async def main() -> Any:
        if streamed:
            return await stream_to_end(pipe, agent, "clean up", run_config=config)
        return await HookedRunner(pipe.tracer).run(agent, "clean up", run_config=config)

    assert asyncio.run(main()).final_output == "done"
    assert ran == []
    assert model.tool_outputs()["d1"] == "deleting files is not allowed"


def test_a_streamed_runs_tool_guardrail_rejection_is_a_deny_and_a_mock_answers(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # an SDK tool input guardrail's reject_content and an otelhooks mock, in one streamed turn
    ran: list[str] = []

    @tool_input_guardrail
    def no_root(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        if "/root" in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.reject_content("no access to /root")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_root])
    def list_dir(path: str) -> str:
        """List a directory."""
        ran.append(path)
        return "a b c"

    @function_tool
    def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return "live results"

    def offline(event: ToolCallEvent) -> None:
        event.mock("cached results")

    model = ScriptedModel(
        "scripted",
        [
            [
                function_call("list_dir", {"path": "/root"}, call_id="g1"),
                function_call("search", {"query": "otel"}, call_id="s1"),
            ],
            [assistant_message("ok")],
        ],
    )
    pipe.register(
        hook("denied", "on_tool_call_denied", recorder),
        hook("offline", "before_tool_call", offline, matcher="search"),
    )
    agent = Agent(name="bot", model=model, tools=[list_dir, search])
    asyncio.run(stream_to_end(pipe, agent, "go"))
    pipe.flush()

    assert ran == []
    assert model.tool_outputs() == {"g1": "no access to /root", "s1": "cached results"}
    told = [(e.apiName, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [("list_dir", "guardrail:no_root")]
    assert [e.name for e in pipe.span("step 0").events] == ["otelhooks.tool_guardrail"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_handoff_to_an_agent_a_guard_refuses_never_runs_it(
    pipe: TestPipeline, streamed: bool
) -> None:
    # a before_agent_start guard blocked the agent handed off to: its operation said
    # interrupted, yet the SDK ran it (its model twice, its word_count tool) without a word
    from tests.integrations.test_openai_agents import GUARDS, World, build

    def no_summaries(event: HookEvent) -> Block:
        return Block("no summaries")

    pipe.register(
        *GUARDS, hook("no-summaries", "before_agent_start", no_summaries, matcher="summarizer")
    )
    world = World()
    planner, _, summarizer_model = build(world)
    runner = HookedRunner(pipe.tracer)
    go = stream_to_end(pipe, planner, "plan it") if streamed else runner.run(planner, "plan it")
    with pytest.raises(RunBlockedError, match="no summaries"):
        asyncio.run(go)

    assert summarizer_model.inputs == []
    assert world.ran == ["add", "read_file"]
    reasons = {
        s.name: (s.attributes or {})["otelhooks.operation.complete_reason"]
        for s in pipe.spans()
        if s.name.startswith("invoke_agent ")
    }
    assert reasons == {
        "invoke_agent planner": "interrupted",
        "invoke_agent summarizer": "interrupted",
    }
    assert pipe.span("call_agent summarizer").status.status_code is StatusCode.ERROR
