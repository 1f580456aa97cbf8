"""The OpenAI Agents SDK adapter, with the real SDK and a scripted model (no network)."""

from __future__ import annotations

import asyncio
import itertools
import json
import warnings
from dataclasses import dataclass, field
from typing import Annotated, Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    RunConfig,
    ToolErrorFormatterArgs,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    ToolInputGuardrailTripwireTriggered,
    UserError,
    function_tool,
    input_guardrail,
    set_trace_processors,
    tool_input_guardrail,
)
from agents.testing import assistant_message, function_call
from agents.tool import resolve_function_tool_failure_error_function
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import Field, SecretStr

import otelhooks
from otelhooks import Block, HookEvent, ToolCallEvent, WebhookDeliverer
from otelhooks.integrations.openai_agents import (
    HookedRunner,
    RunBlockedError,
    ToolNotHookedError,
    UnguardedToolWarning,
    hook_agent,
    hook_tool,
)
from otelhooks.testing import TestPipeline
from tests._webhook_server import WebhookServer
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@dataclass
class World:
    """The tools' side effects: what really ran."""

    ran: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=lambda: {"a.txt": "hello otel hooks"})


def build(world: World) -> tuple[Agent[Any], ScriptedModel, ScriptedModel]:
    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        world.ran.append("add")
        return a + b

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        world.ran.append("read_file")
        return world.files[path]

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        world.ran.append("delete_file")
        del world.files[path]
        return "deleted"

    @function_tool
    def search(query: str) -> str:
        """Search the web."""
        world.ran.append("search")
        return "live results"

    @function_tool
    def word_count(text: str) -> int:
        """Count words."""
        world.ran.append("word_count")
        return len(text.split())

    summarizer_model = ScriptedModel(
        "scripted-small",
        [
            [function_call("word_count", {"text": "hello otel hooks"}, call_id="c6")],
            [assistant_message("3 words, 1 file kept")],
        ],
    )
    summarizer = Agent(name="summarizer", model=summarizer_model, tools=[word_count])
    planner_model = ScriptedModel(
        "scripted-large",
        [
            [
                function_call("add", {"a": 2, "b": 3}, call_id="c1"),
                function_call("read_file", {"path": "a.txt"}, call_id="c2"),
            ],
            [
                function_call("delete_file", {"path": "a.txt"}, call_id="c3"),
                function_call("search", {"query": "otel"}, call_id="c4"),
            ],
            [function_call("transfer_to_summarizer", {}, call_id="c5")],
        ],
    )
    planner = Agent(
        name="planner",
        model=planner_model,
        tools=[add, read_file, delete_file, search],
        handoffs=[summarizer],
    )
    return planner, planner_model, summarizer_model


def no_delete(event: HookEvent) -> Block | None:
    return Block("deleting files is not allowed")


def offline_search(event: ToolCallEvent) -> None:
    event.mock("cached: otel is great")


GUARDS = (
    hook("no-delete", "beforeToolCall", no_delete, matcher="delete_file$"),
    hook("offline-search", "before_tool_call", offline_search, matcher="search"),
)


def run(pipe: TestPipeline, world: World, **options: Any) -> Any:
    planner, _, _ = build(world)
    runner = HookedRunner(pipe.tracer)
    return asyncio.run(runner.run(planner, "plan it", session_id="s-42", **options))


def children(pipe: TestPipeline, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return sorted(
        (s for s in pipe.spans() if s.parent and s.parent.span_id == parent.context.span_id),
        key=lambda s: s.start_time or 0,
    )


def test_a_run_is_one_trace_of_steps_chats_tools_and_a_linked_handoff(pipe: TestPipeline) -> None:
    pipe.register(*GUARDS)
    result = run(pipe, World())

    assert result.final_output == "3 words, 1 file kept"
    assert len({s.context.trace_id for s in pipe.spans() if s.context}) == 1
    planner = pipe.span("invoke_agent planner")
    assert planner.parent is None
    assert planner.attributes is not None
    assert planner.attributes["gen_ai.conversation.id"] == "s-42"
    assert planner.attributes["otelhooks.operation.complete_reason"] == "done"
    steps = children(pipe, planner)
    assert [s.name for s in steps] == ["step 0", "step 1", "step 2"]
    assert [c.name for c in children(pipe, steps[0])] == [
        "chat scripted-large",
        "execute_tool add",
        "execute_tool read_file",
    ]
    chat = children(pipe, steps[0])[0]
    assert chat.attributes is not None
    assert (
        chat.attributes["gen_ai.usage.input_tokens"],
        chat.attributes["gen_ai.usage.output_tokens"],
    ) == (21, 7)
    add = children(pipe, steps[0])[1]
    assert add.attributes is not None
    assert add.attributes["otelhooks.tool.matcher_value"] == "planner/add"
    assert add.attributes["gen_ai.tool.call.id"] == "c1"
    assert [c.name for c in children(pipe, steps[2])] == [
        "chat scripted-large",
        "call_agent summarizer",
    ]
    call = children(pipe, steps[2])[1]
    child = pipe.span("invoke_agent summarizer")
    assert child.parent is not None
    assert call.context is not None
    assert child.parent.span_id == call.context.span_id
    assert planner.context is not None
    assert child.links[0].context.span_id == planner.context.span_id
    sub_steps = children(pipe, child)
    assert [[c.name for c in children(pipe, s)] for s in sub_steps] == [
        ["chat scripted-small", "execute_tool word_count"],
        ["chat scripted-small"],
    ]
    # usage adds up on each operation (three planner turns, two summarizer turns)
    assert planner.attributes["gen_ai.usage.output_tokens"] == 21
    assert child.attributes is not None
    assert child.attributes["gen_ai.usage.output_tokens"] == 14


def test_a_denied_tool_never_runs_and_the_model_is_told_why(pipe: TestPipeline) -> None:
    pipe.register(*GUARDS)
    world = World()
    planner, planner_model, _ = build(world)
    asyncio.run(HookedRunner(pipe.tracer).run(planner, "plan it"))

    assert "delete_file" not in world.ran
    assert world.files == {"a.txt": "hello otel hooks"}
    assert planner_model.tool_outputs()["c3"] == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert span.attributes["otelhooks.hook.classification"] == "hook_denied"
    assert span.attributes["otelhooks.hook.decided_by"] == "no-delete"


def test_a_mocked_tool_never_runs_and_the_model_gets_the_mock(pipe: TestPipeline) -> None:
    pipe.register(*GUARDS)
    world = World()
    planner, planner_model, _ = build(world)
    asyncio.run(HookedRunner(pipe.tracer).run(planner, "plan it"))

    assert "search" not in world.ran
    assert planner_model.tool_outputs()["c4"] == "cached: otel is great"
    assert pipe.span("execute_tool search").attributes["otelhooks.tool.outcome"] == "mocked"  # type: ignore[index]


def test_tools_that_ran_fire_after_tool_call_with_their_results(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(*GUARDS, hook("rec", "afterToolCall", recorder))
    world = World()
    run(pipe, world)
    pipe.flush()

    assert world.ran == ["add", "read_file", "word_count"]
    got = {e.apiName: (e.content, e.mocked) for e in recorder.of("after_tool_call")}  # type: ignore[attr-defined]
    assert got["add"] == ("5", False)
    assert got["read_file"] == ("hello otel hooks", False)
    assert got["search"] == ("cached: otel is great", True)


def test_tool_events_reach_a_webhook_on_a_real_local_server(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    pipe.register(
        *GUARDS,
        {"id": "notify", "type": "afterToolCall", "webhook": {"url": server.url + "/tools"}},
        {"id": "denied", "type": "PermissionDenied", "webhook": {"url": server.url + "/denied"}},
    )
    run(pipe, World())
    pipe.flush()
    assert deliverer.flush(10)

    tools = sorted(r.json()["apiName"] for r in server.requests("/tools"))
    assert tools == ["add", "delete_file", "read_file", "search", "word_count"]
    (denied,) = [r.json() for r in server.requests("/denied")]
    assert (denied["apiName"], denied["reason"], denied["sessionKey"]) == (
        "delete_file",
        "deleting files is not allowed",
        "s-42",
    )
    planner = pipe.span("invoke_agent planner").context
    assert planner is not None
    assert denied["traceId"] == format(planner.trace_id, "032x")


def test_a_tool_that_raises_fires_on_tool_call_error(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    @function_tool
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    model = ScriptedModel(
        "m", [[function_call("flaky", {}, call_id="f1")], [assistant_message("gave up")]]
    )
    agent = Agent(name="bot", model=model, tools=[flaky])
    pipe.register(hook("err", "onToolCallError", recorder))
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    span = pipe.span("execute_tool flaky")
    assert span.status.status_code is StatusCode.ERROR
    assert [e.apiName for e in recorder.of("on_tool_call_error")] == ["flaky"]  # type: ignore[attr-defined]


def test_an_input_guardrail_trip_fails_the_operation_with_on_error(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    @input_guardrail
    def no_secrets(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="secret" in str(input))

    model = ScriptedModel("m", [[assistant_message("never")]])
    agent = Agent(name="guarded", model=model, input_guardrails=[no_secrets])
    pipe.register(hook("err", "onError", recorder))
    with pytest.raises(InputGuardrailTripwireTriggered):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "tell me the secret"))
    pipe.flush()

    span = pipe.span("invoke_agent guarded")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["otelhooks.guardrail.name"] == "no_secrets"
    assert [e.errorType for e in recorder.of("on_error")] == ["InputGuardrailTripwireTriggered"]  # type: ignore[attr-defined]


def test_a_tool_guardrail_rejection_is_a_denial_event_and_the_function_never_runs(
    pipe: TestPipeline, recorder: Recorder
) -> None:
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

    model = ScriptedModel(
        "m",
        [[function_call("list_dir", {"path": "/root"}, call_id="g1")], [assistant_message("ok")]],
    )
    agent = Agent(name="bot", model=model, tools=[list_dir])
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    assert ran == []
    (denied,) = recorder.of("on_tool_call_denied")
    assert (denied.apiName, denied.decidedBy, denied.reason) == (  # type: ignore[attr-defined]
        "list_dir",
        "guardrail:no_root",
        "no access to /root",
    )
    step = pipe.span("step 0")
    assert [e.name for e in step.events] == ["otelhooks.tool_guardrail"]


def test_a_blocked_run_never_calls_the_model(pipe: TestPipeline) -> None:
    model = ScriptedModel("m", [[assistant_message("never")]])
    agent = Agent(name="bot", model=model)
    pipe.register(hook("gate", "before_agent_start", lambda e: Block("closed for today")))
    with pytest.raises(RunBlockedError, match="closed for today"):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "hello"))

    assert model.inputs == []
    span = pipe.span("invoke_agent bot")
    assert span.attributes is not None
    assert span.attributes["otelhooks.operation.complete_reason"] == "interrupted"


def test_an_input_guard_reads_a_list_input_and_blocks_it(pipe: TestPipeline) -> None:
    # before: a list of items reached before_agent_start hooks as input "", so a guard on the
    # input let the password reach the model
    model = ScriptedModel("m", [[assistant_message("never")]])
    agent = Agent(name="bot", model=model)

    def no_passwords(event: Any) -> Block | None:
        return Block("no passwords") if "hunter2" in event.input else None

    pipe.register(hook("no-passwords", "before_agent_start", no_passwords))
    items: Any = [{"role": "user", "content": "my password is hunter2"}]
    with pytest.raises(RunBlockedError, match="no passwords"):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, items))
    assert model.inputs == []


def test_a_rewrite_a_list_input_cannot_take_refuses_the_run(pipe: TestPipeline) -> None:
    # only a string takes a rewrite: a redaction of a list of items, run as it was, would
    # send the password to the model without a word
    model = ScriptedModel("m", [[assistant_message("never")]])
    agent = Agent(name="bot", model=model)

    def redact(event: Any) -> dict[str, Any]:
        return {"input": event.input.replace("hunter2", "***")}

    pipe.register(hook("redact", "before_agent_start", redact))
    items: Any = [{"role": "user", "content": "my password is hunter2"}]
    with pytest.raises(RunBlockedError, match="cannot take"):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, items))
    assert model.inputs == []


def test_a_rewritten_input_is_what_the_model_receives(pipe: TestPipeline) -> None:
    model = ScriptedModel("m", [[assistant_message("ok")]])
    agent = Agent(name="bot", model=model)

    def add_context(event: Any) -> dict[str, Any]:
        return {"input": event.input + " (answer briefly)"}

    pipe.register(hook("ctx", "before_agent_start", add_context))
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "hello"))

    assert "hello (answer briefly)" in str(model.inputs[0])


def test_max_turns_ends_the_operation_with_max_steps(pipe: TestPipeline) -> None:
    world = World()
    planner, _, _ = build(world)
    with pytest.raises(MaxTurnsExceeded):
        asyncio.run(HookedRunner(pipe.tracer).run(planner, "go", max_turns=1))

    span = pipe.span("invoke_agent planner")
    assert span.attributes is not None
    assert span.attributes["otelhooks.operation.complete_reason"] == "max_steps"


def test_a_hooked_tool_outside_a_hooked_run_behaves_as_the_original_and_says_so(
    pipe: TestPipeline,
) -> None:
    world = World()
    planner, _, _ = build(world)
    tool = hook_tool(planner.tools[0])  # type: ignore[arg-type]
    assert hook_tool(tool) is tool
    model = ScriptedModel(
        "m", [[function_call("add", {"a": 1, "b": 1}, call_id="x")], [assistant_message("2")]]
    )
    from agents import Runner

    with pytest.warns(UnguardedToolWarning, match="'add' of a hooked agent ran outside"):
        asyncio.run(Runner.run(Agent(name="plain", model=model, tools=[tool]), "go"))
    assert world.ran == ["add"]
    assert pipe.spans() == []


def _cleaner(world: World, call_id: str) -> tuple[Agent[Any], ScriptedModel]:
    """An agent whose one turn deletes ``a.txt``."""

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        world.ran.append("delete_file")
        del world.files[path]
        return "deleted"

    model = ScriptedModel(
        "scripted-small",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id=call_id)],
            [assistant_message("cleaned")],
        ],
    )
    return Agent(name="cleaner", model=model, tools=[delete_file]), model


def test_a_deny_holds_for_the_agent_of_a_handoff_object(pipe: TestPipeline) -> None:
    # handoff(agent) returns the caller's own agent when the handoff happens: its tools were
    # run unhooked, so the deny was silently not applied
    from agents import handoff

    pipe.register(*GUARDS)
    world = World()
    cleaner, cleaner_model = _cleaner(world, "d1")
    model = ScriptedModel(
        "scripted-large",
        [[function_call("transfer_to_cleaner", {}, call_id="h1")], [assistant_message("ok")]],
    )
    to_cleaner = handoff(cleaner)
    invoke = to_cleaner.on_invoke_handoff
    boss = Agent(name="boss", model=model, handoffs=[to_cleaner])
    asyncio.run(HookedRunner(pipe.tracer).run(boss, "clean up"))

    assert world.ran == []
    assert world.files == {"a.txt": "hello otel hooks"}
    assert cleaner_model.tool_outputs()["d1"] == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.tool.matcher_value"] == "cleaner/delete_file"
    assert span.attributes["otelhooks.hook.decided_by"] == "no-delete"
    assert boss.handoffs == [to_cleaner]  # the user's agent and handoff are unchanged
    assert to_cleaner.on_invoke_handoff is invoke
    assert [type(t) for t in cleaner.tools] == [FunctionTool]
    assert not hasattr(cleaner.tools[0].on_invoke_tool, "__otelhooks_hooked__")


def test_an_agent_run_as_a_tool_is_guarded_once_hooked_and_refused_until_then(
    pipe: TestPipeline,
) -> None:
    # Agent.as_tool runs the very agent it was made from, never a clone hook_agent could make:
    # its tools ran unhooked (later only named in a warning: delete_file still ran). Now the
    # call of such an agent tool is refused as it starts, as other unhooked tools are
    pipe.register(*GUARDS)

    def boss_of(tool: Any) -> tuple[Agent[Any], ScriptedModel]:
        model = ScriptedModel(
            "scripted-large",
            [[function_call("clean", {"input": "go"}, call_id="t1")], [assistant_message("ok")]],
        )
        return Agent(name="boss", model=model, tools=[tool]), model

    world = World()
    cleaner, _ = _cleaner(world, "d1")
    boss, _ = boss_of(cleaner.as_tool(tool_name="clean", tool_description="Clean up."))
    warned = pytest.warns(UnguardedToolWarning, match="'clean' .*runs agent 'cleaner', whose own")
    with warned, pytest.raises(UserError) as raised:
        asyncio.run(HookedRunner(pipe.tracer).run(boss, "clean up"))
    assert isinstance(raised.value.__cause__, ToolNotHookedError)
    assert "runs agent 'cleaner', whose own tools are not hooked" in str(raised.value.__cause__)
    assert world.ran == []  # refused before the nested agent ran
    assert world.files == {"a.txt": "hello otel hooks"}
    pipe.flush()
    refused = pipe.span("execute_tool clean")
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["otelhooks.tool.matcher_value"] == "boss/clean"

    world = World()
    cleaner, cleaner_model = _cleaner(world, "d2")
    boss, _ = boss_of(hook_agent(cleaner).as_tool(tool_name="clean", tool_description="Clean."))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        asyncio.run(HookedRunner(pipe.tracer).run(boss, "clean up"))
    assert world.ran == []
    assert world.files == {"a.txt": "hello otel hooks"}
    assert cleaner_model.tool_outputs()["d2"] == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.tool.matcher_value"] == "cleaner/delete_file"
    assert span.attributes["otelhooks.hook.decided_by"] == "no-delete"


def test_an_agent_tool_whose_agent_hands_off_to_unhooked_tools_is_named_in_a_warning() -> None:
    from agents import handoff

    world = World()
    cleaner, _ = _cleaner(world, "d1")
    for handoffs in ([cleaner], [handoff(cleaner)]):
        desk = Agent(name="desk", handoffs=handoffs)
        with pytest.warns(UnguardedToolWarning, match="'front' .*runs agent 'desk', whose own"):
            hook_agent(Agent(name="boss", tools=[desk.as_tool("front", "The front desk.")]))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnguardedToolWarning)
            hooked = hook_agent(desk).as_tool("front", "The front desk.")
            hook_agent(Agent(name="boss", tools=[hooked]))


def _approved_delete(pipe: TestPipeline, world: World, read_back: Any) -> ScriptedModel:
    """A run whose ``delete_file`` call waits for approval, then its state is written out, read
    back by ``read_back(json)``, approved and resumed."""

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        world.ran.append("delete_file")
        del world.files[path]
        return "deleted"

    model = ScriptedModel(
        "scripted-small",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id="d1")],
            [assistant_message("cleaned")],
        ],
    )
    agent = Agent(name="cleaner", model=model, tools=[delete_file])

    async def both_halves() -> None:
        runner = HookedRunner(pipe.tracer)
        first = await runner.run(agent, "clean up")
        state = await read_back(agent, first.to_state().to_string())
        for item in state.get_interruptions():
            state.approve(item)
        await runner.run(agent, state)

    asyncio.run(both_halves())
    return model


def test_a_run_resumed_from_a_saved_state_is_guarded_or_says_it_is_not(pipe: TestPipeline) -> None:
    # The SDK's human-in-the-loop: a run stops for approval, its state is saved, read back and
    # resumed. The resumed run runs the state's agents, whatever agent it is given: read back with
    # the user's own agent, the approved delete ran past the deny without a word (before).
    from agents import RunState

    pipe.register(*GUARDS)

    world = World()
    with pytest.warns(UnguardedToolWarning, match="resumes agent 'cleaner', whose tools are not"):
        _approved_delete(pipe, world, RunState.from_string)
    assert world.ran == ["delete_file"]  # what the warning says: no hook saw it

    world = World()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        model = _approved_delete(
            pipe, world, lambda agent, saved: RunState.from_string(hook_agent(agent), saved)
        )
    assert world.ran == []
    assert world.files == {"a.txt": "hello otel hooks"}
    assert model.tool_outputs()["d1"] == "deleting files is not allowed"


def _deny_force(event: ToolCallEvent) -> Block | ToolCallEvent | None:
    if event.args.get("path") == "/":  # the root is cleaned without force
        return event.model_copy(update={"args": {**event.args, "force": False}})
    return Block("force is not allowed") if event.args.get("force") else None


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "not-strict"])
def test_a_guard_sees_the_defaults_the_function_receives(pipe: TestPipeline, strict: bool) -> None:
    # guards saw only the JSON the model sent: a call leaving out `force` ran the function with
    # its default force=True past a guard denying force
    ran: list[tuple[str, bool]] = []

    @function_tool(strict_mode=strict)
    def remove(path: str, force: bool = True, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013 (a sloppy default, as users write)
        """Remove a path."""
        ran.append((path, force))
        return "removed"

    model = ScriptedModel(
        "m",
        [
            [
                function_call("remove", {"path": "/tmp/x"}, call_id="r1"),
                function_call("remove", {"path": "/"}, call_id="r2"),
            ],
            [assistant_message("done")],
        ],
    )
    pipe.register(hook("no-force", "beforeToolCall", _deny_force))
    asyncio.run(HookedRunner(pipe.tracer).run(Agent(name="bot", model=model, tools=[remove]), "go"))

    assert ran == [("/", False)]  # the guard's rewrite of a default reaches the function
    assert model.tool_outputs() == {"r1": "force is not allowed", "r2": "removed"}


@pytest.mark.parametrize("own_formatter", [False, True], ids=["sdk-message", "own-formatter"])
def test_a_tool_that_raises_is_a_failure_with_the_sdks_tracing_off(
    pipe: TestPipeline, recorder: Recorder, own_formatter: bool
) -> None:
    # otelhooks read the failure from the SDK's tracing span only: with tracing off, the
    # exception the SDK turned into a message for the model was recorded as a success
    @function_tool
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    def formatter(args: ToolErrorFormatterArgs[Any]) -> str:
        return f"{args.tool_name} is down"

    config = RunConfig(
        tracing_disabled=True, tool_error_formatter=formatter if own_formatter else None
    )
    model = ScriptedModel(
        "m", [[function_call("flaky", {}, call_id="f1")], [assistant_message("gave up")]]
    )
    pipe.register(hook("err", "onToolCallError", recorder))
    agent = Agent(name="bot", model=model, tools=[flaky])
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go", run_config=config))
    pipe.flush()

    span = pipe.span("execute_tool flaky")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ConnectionError"
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "error"
    assert [e.errorType for e in recorder.of("on_tool_call_error")] == ["ConnectionError"]  # type: ignore[attr-defined]
    shown = "flaky is down" if own_formatter else "An error occurred while running the tool"
    assert model.tool_outputs()["f1"].startswith(shown)  # the model is told as the SDK tells it
    assert config.tool_error_formatter is (formatter if own_formatter else None)  # yours, unchanged


def test_a_failure_inside_an_agent_run_as_a_tool_is_not_the_agent_tools(
    pipe: TestPipeline,
) -> None:
    # the exception of a tool of an agent run as a tool reaches the same
    # tool_error_formatter: it is that tool's, not the failure of the call that ran the agent
    @function_tool
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    inner = ScriptedModel(
        "m", [[function_call("flaky", {}, call_id="i1")], [assistant_message("handled")]]
    )
    sub = hook_agent(Agent(name="sub", model=inner, tools=[flaky]))
    ask = sub.as_tool(tool_name="ask_sub", tool_description="Ask the sub-agent.")
    model = ScriptedModel(
        "m",
        [[function_call("ask_sub", {"input": "go"}, call_id="o1")], [assistant_message("ok")]],
    )
    agent = Agent(name="bot", model=model, tools=[ask])
    config = RunConfig(tracing_disabled=True)
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go", run_config=config))
    pipe.flush()

    assert model.tool_outputs() == {"o1": "handled"}
    span = pipe.span("execute_tool ask_sub")
    assert span.status.status_code is StatusCode.UNSET
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "success"


def _deny_true_force(event: ToolCallEvent) -> Block | ToolCallEvent | None:
    if event.args.get("path") == "/":  # the root is cleaned without force
        return event.model_copy(update={"args": {**event.args, "force": False}})
    return Block("force is not allowed") if event.args.get("force") is True else None


def test_a_guard_judges_the_values_a_non_strict_tool_receives(pipe: TestPipeline) -> None:
    # a non-strict tool's JSON is validated by the SDK through the function's annotations before
    # the call: the guard judged the string "true" while the function ran with force=True
    ran: list[tuple[str, object]] = []

    @function_tool(strict_mode=False)
    def remove(path: str, force: bool = False, retries: int = 0) -> str:
        """Remove a path."""
        ran.append((path, force))
        return "removed"

    model = ScriptedModel(
        "m",
        [
            [
                function_call("remove", {"path": "/tmp/x", "force": "true"}, call_id="r1"),
                function_call(
                    "remove", {"path": "/", "force": "yes", "retries": "2"}, call_id="r2"
                ),
                function_call("remove", {"path": "/tmp/y", "force": "maybe"}, call_id="r3"),
            ],
            [assistant_message("done")],
        ],
    )
    seen: list[dict[str, Any]] = []

    def guard(event: ToolCallEvent) -> Block | ToolCallEvent | None:
        seen.append(dict(event.args))
        return _deny_true_force(event)

    pipe.register(hook("no-force", "beforeToolCall", guard))
    asyncio.run(HookedRunner(pipe.tracer).run(Agent(name="bot", model=model, tools=[remove]), "go"))

    assert ran == [("/", False)]  # the rewrite of a coerced value reaches the function
    told = model.tool_outputs()
    assert told["r1"] == "force is not allowed"
    assert told["r2"] == "removed"
    assert told["r3"].startswith("An error occurred")  # the SDK refuses "maybe", as unhooked
    assert {"path": "/tmp/x", "force": True, "retries": 0} in seen
    assert {"path": "/", "force": True, "retries": 2} in seen


def test_a_tool_with_its_own_failure_function_is_a_failure_with_tracing_off(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # the SDK tells a tool's own failure_error_function, not the run's tool_error_formatter, an
    # exception; with tracing off nothing else says so and the call was recorded as a success
    def explain(ctx: Any, error: Exception) -> str:
        return f"flaky said: {error}"

    @function_tool(failure_error_function=explain)
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    model = ScriptedModel(
        "m", [[function_call("flaky", {}, call_id="f1")], [assistant_message("gave up")]]
    )
    pipe.register(hook("err", "onToolCallError", recorder))
    agent = Agent(name="bot", model=model, tools=[flaky])
    config = RunConfig(tracing_disabled=True)
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go", run_config=config))
    pipe.flush()

    span = pipe.span("execute_tool flaky")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ConnectionError"
    assert [e.errorType for e in recorder.of("on_tool_call_error")] == ["ConnectionError"]  # type: ignore[attr-defined]
    assert model.tool_outputs() == {"f1": "flaky said: upstream down"}  # your function's text
    assert resolve_function_tool_failure_error_function(flaky) is explain  # your tool, unchanged


class _DownModel(ScriptedModel):
    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("model down")


def test_an_agent_tool_whose_agent_failed_is_a_failure_with_tracing_off(
    pipe: TestPipeline,
) -> None:
    # Agent.as_tool gives its tool the SDK's default failure handler as one of its own, which
    # the run's tool_error_formatter never hears of: a sub-agent that failed was a success
    sub = hook_agent(Agent(name="sub", model=_DownModel("m", [])))
    ask = sub.as_tool(tool_name="ask_sub", tool_description="Ask the sub-agent.")
    model = ScriptedModel(
        "m", [[function_call("ask_sub", {"input": "go"}, call_id="o1")], [assistant_message("ok")]]
    )
    config = RunConfig(tracing_disabled=True)
    agent = Agent(name="bot", model=model, tools=[ask])
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go", run_config=config))
    pipe.flush()

    span = pipe.span("execute_tool ask_sub")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ConnectionError"
    assert model.tool_outputs()["o1"].startswith("An error occurred")  # as the SDK tells it


def test_a_value_whose_json_form_is_not_the_value_reaches_the_function_as_sent(
    pipe: TestPipeline,
) -> None:
    # a SecretStr's JSON form is its mask: shown to guards, a rewrite of another argument sent
    # the mask to the function in place of the secret
    got: list[tuple[str, str]] = []

    @function_tool(strict_mode=False)
    def upload(path: str, token: SecretStr) -> str:
        """Upload a file."""
        got.append((path, token.get_secret_value()))
        return "uploaded"

    def redirect(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {**event.args, "path": "/tmp/safe"}})

    model = ScriptedModel(
        "m",
        [
            [function_call("upload", {"path": "/etc", "token": "s3cr3t"}, call_id="u1")],
            [assistant_message("done")],
        ],
    )
    pipe.register(hook("redirect", "beforeToolCall", redirect))
    asyncio.run(HookedRunner(pipe.tracer).run(Agent(name="bot", model=model, tools=[upload]), "go"))

    assert got == [("/tmp/safe", "s3cr3t")]
    assert model.tool_outputs() == {"u1": "uploaded"}


class _Files:
    root = "/srv"

    @otelhooks.tool
    def read(this, path: str) -> str:  # a receiver not named self, as users write
        """Read a file."""
        return f"read {this.root}{path}"

    @otelhooks.tool
    async def aread(this, path: str) -> str:
        """Read a file."""
        return f"aread {this.root}{path}"

    @staticmethod
    @otelhooks.tool
    def stat(path: str) -> str:
        """Stat a file."""
        return f"stat {path}"

    @otelhooks.tool
    @classmethod
    def ls(klass, path: str) -> str:
        """List a directory."""
        return f"ls {klass.root}{path}"


def test_a_decorated_method_is_a_function_tool_whose_guard_sees_its_arguments_only(
    pipe: TestPipeline,
) -> None:
    # function_tool refuses a functools.partial: the decorated function stays a function, and
    # a receiver not named self/cls (or a classmethod's) is never shown to the guard
    seen: list[dict[str, Any]] = []

    def no_etc(event: ToolCallEvent) -> Block | None:
        seen.append(dict(event.args))
        return Block("not /etc") if event.args["path"].startswith("/etc") else None

    @function_tool
    @otelhooks.tool
    def plain(path: str) -> str:
        """Read a file."""
        return f"plain {path}"

    files = _Files()
    tools = [
        function_tool(files.read),
        function_tool(files.aread),
        function_tool(_Files.stat),
        function_tool(_Files.ls),
        plain,
    ]
    calls = [
        function_call(t.name, {"path": p}, call_id=f"{t.name}-{i}")
        for t in tools
        for i, p in enumerate(["/ok", "/etc/passwd"])
    ]
    model = ScriptedModel("m", [calls, [assistant_message("done")]])
    pipe.register(hook("no-etc", "beforeToolCall", no_etc))
    asyncio.run(HookedRunner(pipe.tracer).run(Agent(name="bot", model=model, tools=tools), "go"))

    assert all(s.keys() == {"path"} for s in seen)
    assert model.tool_outputs() == {
        **{f"{t.name}-1": "not /etc" for t in tools},
        "read-0": "read /srv/ok",
        "aread-0": "aread /srv/ok",
        "stat-0": "stat /ok",
        "ls-0": "ls /srv/ok",
        "plain-0": "plain /ok",
    }


def _into_root(event: ToolCallEvent) -> ToolCallEvent:
    return event.model_copy(update={"args": {"path": "/root" + event.args["path"]}})


@pytest.mark.parametrize("behavior", ["reject_content", "raise_exception"])
def test_an_sdk_guardrail_judges_the_arguments_a_hook_rewrote(
    pipe: TestPipeline, recorder: Recorder, behavior: str
) -> None:
    # the SDK runs a tool's input guardrails before the tool's on_invoke_tool, where the hooks
    # run: a hook's rewrite into /root reached the function past a guardrail refusing /root
    ran: list[str] = []
    judged: list[str] = []

    @tool_input_guardrail
    def no_root(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        judged.append(data.context.tool_arguments)
        assert data.context.tool_call is not None
        assert data.context.tool_call.arguments == data.context.tool_arguments
        if "/root" not in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.allow()
        if behavior == "reject_content":
            return ToolGuardrailFunctionOutput.reject_content("no access to /root")
        return ToolGuardrailFunctionOutput.raise_exception()

    @function_tool(tool_input_guardrails=[no_root])
    def list_dir(path: str) -> str:
        """List a directory."""
        ran.append(path)
        return "a b c"

    model = ScriptedModel(
        "m",
        [[function_call("list_dir", {"path": "/x"}, call_id="g1")], [assistant_message("ok")]],
    )
    agent = Agent(name="bot", model=model, tools=[list_dir])
    pipe.register(hook("into-root", "beforeToolCall", _into_root))
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    pipe.register(hook("error", "on_tool_call_error", recorder))
    if behavior == "reject_content":
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    else:
        with pytest.raises(ToolInputGuardrailTripwireTriggered):
            asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    assert ran == []
    assert [json.loads(j) for j in judged] == [{"path": "/x"}, {"path": "/root/x"}]
    span = pipe.span("execute_tool list_dir")
    assert span.status.status_code is StatusCode.ERROR
    if behavior == "reject_content":
        assert model.tool_outputs() == {"g1": "no access to /root"}
        (denied,) = recorder.of("on_tool_call_denied")
        assert (denied.args, denied.decidedBy) == ({"path": "/root/x"}, "guardrail:no_root")  # type: ignore[attr-defined]
        # a deny, not also a tool error: the function never ran
        assert recorder.of("on_tool_call_error") == []
        assert (span.attributes or {})["otelhooks.hook.decided_by"] == "guardrail:no_root"


_TICKETS = itertools.count()  # module-level: the SDK reads the annotations from the module


def test_a_decorated_function_under_function_tool_is_judged_as_the_function_gets_it(
    pipe: TestPipeline,
) -> None:
    # the hooked FunctionTool's guard judges a validation of its own (the SDK keeps its own
    # private): a default_factory's value differs between the two and is not shown to it; the
    # guard of @otelhooks.tool under function_tool judges the very objects the SDK passes on
    got: list[int] = []
    judged: list[dict[str, Any]] = []

    @function_tool(strict_mode=False)
    @otelhooks.tool(identifier="desk", name="tag")
    def tag(
        path: str, ticket: Annotated[int, Field(default_factory=lambda: next(_TICKETS))]
    ) -> str:
        """Tag a path."""
        got.append(ticket)
        return "tagged"

    model = ScriptedModel(
        "m",
        [[function_call("tag", {"path": "/x"}, call_id="t1")], [assistant_message("ok")]],
    )
    pipe.register(
        hook("see", "beforeToolCall", lambda e: judged.append(dict(e.args)), matcher="^desk/")
    )
    asyncio.run(HookedRunner(pipe.tracer).run(Agent(name="bot", model=model, tools=[tag]), "go"))

    assert judged == [{"path": "/x", "ticket": got[0]}]
