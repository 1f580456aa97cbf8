"""The LangChain / LangGraph adapter, in a real LangGraph agent graph with a fake chat model."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from structlog.testing import capture_logs

from otelhooks import AgentTracer, Block, HookEvent, ToolCallEvent, ToolDenied, WebhookDeliverer
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, RunBlockedError, hook_tool
from otelhooks.testing import TestPipeline
from tests._webhook_server import WebhookServer
from tests.conftest import Recorder, hook


class ToolCallingFake(GenericFakeChatModel):
    """The fake chat model, accepting ``bind_tools`` as a tool-calling model does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFake:
        return self

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        # A provider package names its provider here (langchain-mistralai: "mistralai").
        return {**super()._get_ls_params(stop=stop, **kwargs), "ls_provider": "mistralai"}


def ai(*calls: tuple[str, dict[str, Any], str], text: str = "") -> AIMessage:
    return AIMessage(
        content=text,
        tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls],
        usage_metadata={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35},
        response_metadata={"model_name": "fake-gpt"},
    )


@dataclass
class World:
    ran: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=lambda: {"a.txt": "hello otel hooks"})
    seen: list[list[BaseMessage]] = field(default_factory=list)


def make_tools(world: World) -> list[BaseTool]:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        world.ran.append("add")
        return a + b

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        world.ran.append("read_file")
        return world.files[path]

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        world.ran.append("delete_file")
        del world.files[path]
        return "deleted"

    @tool
    def search(query: str) -> str:
        """Search the web."""
        world.ran.append("search")
        return "live results"

    return [add, read_file, delete_file, search]


SCRIPT = [
    ai(("add", {"a": 2, "b": 3}, "t1"), ("read_file", {"path": "a.txt"}, "t2")),
    ai(("delete_file", {"path": "a.txt"}, "t3"), ("search", {"query": "otel"}, "t4")),
    ai(text="5, and the file says hello"),
]


def graph(
    world: World, tools: list[BaseTool], script: list[AIMessage], *, handle_errors: bool = True
) -> CompiledStateGraph[Any]:
    model = ToolCallingFake(messages=iter(script)).bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        world.seen.append(list(state["messages"]))
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        world.seen.append(list(state["messages"]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent, afunc=aagent)  # type: ignore[call-overload]
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=handle_errors))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def no_delete(event: HookEvent) -> Block:
    return Block("deleting files is not allowed")


def offline_search(event: ToolCallEvent) -> None:
    event.mock("cached: otel is great")


GUARDS = (
    hook("no-delete", "PreToolUse", no_delete, matcher="delete_file"),
    hook("offline-search", "beforeToolCall", offline_search, matcher="search"),
)


def run(pipe: TestPipeline, world: World, *, hooked: bool = True, use_async: bool = False) -> Any:
    tools = make_tools(world)
    if hooked:
        tools = [hook_tool(t) for t in tools]
    app = graph(world, tools, list(SCRIPT))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher", session_id="s-7")
    state = {"messages": [("user", "add 2 and 3, read a.txt, then clean up")]}
    config: Any = {"callbacks": [handler]}
    if use_async:
        return asyncio.run(app.ainvoke(state, config=config))
    return app.invoke(state, config=config)


def children(pipe: TestPipeline, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return sorted(
        (s for s in pipe.spans() if s.parent and s.parent.span_id == parent.context.span_id),
        key=lambda s: s.start_time or 0,
    )


def tool_message(result: Any, call_id: str) -> ToolMessage:
    (found,) = [
        m for m in result["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    ]
    return found


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_graph_run_is_one_operation_of_steps_chats_and_tools(
    pipe: TestPipeline, use_async: bool
) -> None:
    pipe.register(*GUARDS)
    result = run(pipe, World(), use_async=use_async)

    assert result["messages"][-1].content == "5, and the file says hello"
    assert len({s.context.trace_id for s in pipe.spans() if s.context}) == 1
    op = pipe.span("invoke_agent researcher")
    assert op.parent is None
    assert op.attributes is not None
    assert op.attributes["gen_ai.conversation.id"] == "s-7"
    # The model call's provider, in the GenAI conventions' spelling; LangChain is not one.
    assert op.attributes["gen_ai.provider.name"] == "mistral_ai"
    assert op.attributes["otelhooks.operation.complete_reason"] == "done"
    assert op.attributes["gen_ai.usage.input_tokens"] == 90
    steps = children(pipe, op)
    shape = [sorted(c.name for c in children(pipe, s)) for s in steps]
    assert shape == [
        ["chat ToolCallingFake", "execute_tool add", "execute_tool read_file"],
        ["chat ToolCallingFake", "execute_tool delete_file", "execute_tool search"],
        ["chat ToolCallingFake"],
    ]
    (chat,) = [c for c in children(pipe, steps[0]) if c.name.startswith("chat ")]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.response.model"] == "fake-gpt"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    add = pipe.span("execute_tool add")
    assert add.attributes is not None
    assert (add.attributes["gen_ai.tool.call.id"], add.attributes["otelhooks.tool.outcome"]) == (
        "t1",
        "success",
    )


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_denied_tool_never_runs_and_the_graph_goes_on_with_a_hook_denied_message(
    pipe: TestPipeline, use_async: bool
) -> None:
    pipe.register(*GUARDS)
    world = World()
    result = run(pipe, world, use_async=use_async)

    assert "delete_file" not in world.ran
    assert world.files == {"a.txt": "hello otel hooks"}
    denied = tool_message(result, "t3")
    assert (denied.status, denied.content) == ("error", "deleting files is not allowed")
    assert denied.response_metadata["otelhooks"]["classification"] == "hook_denied"
    assert denied.response_metadata["otelhooks"]["decidedBy"] == "no-delete"
    assert denied in world.seen[-1]  # the model's next turn saw the denial
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert span.attributes["otelhooks.tool.outcome"] == "denied"


def test_a_mocked_tool_never_runs_and_returns_the_mock(pipe: TestPipeline) -> None:
    pipe.register(*GUARDS)
    world = World()
    result = run(pipe, world)

    assert "search" not in world.ran
    assert tool_message(result, "t4").content == "cached: otel is great"
    assert sorted(world.ran) == ["add", "read_file"]  # parallel tool calls: in no set order


def test_rewritten_arguments_reach_the_tool(pipe: TestPipeline) -> None:
    world = World(files={"a.txt": "hello otel hooks", "safe.txt": "the safe copy"})

    def redirect(event: Any) -> dict[str, Any] | None:
        if event.apiName == "read_file":
            return {"args": {"path": "safe.txt"}}
        return None

    pipe.register(*GUARDS, hook("redirect", "before_tool_call", redirect))
    result = run(pipe, world)

    assert tool_message(result, "t2").content == "the safe copy"


def test_arguments_a_hook_changed_in_place_are_the_ones_the_later_guard_judged_and_the_tool_got(
    pipe: TestPipeline,
) -> None:
    world = World(files={"a.txt": "hello otel hooks", "safe.txt": "the safe copy"})
    judged: list[str] = []

    def redirect(event: Any) -> None:
        if event.apiName == "read_file":
            event.args["path"] = "safe.txt"

    def guard(event: Any) -> Block | None:
        if event.apiName != "read_file":
            return None
        judged.append(event.args["path"])
        return Block("not a.txt") if event.args["path"] == "a.txt" else None

    pipe.register(
        *GUARDS, hook("redirect", "before_tool_call", redirect), hook("guard", "PreToolUse", guard)
    )
    result = run(pipe, world)

    assert (judged, tool_message(result, "t2").content) == (["safe.txt"], "the safe copy")


def test_tool_events_reach_a_webhook_on_a_real_local_server(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    deliverer.builder.capture_content = True  # results in the bodies
    pipe.register(
        *GUARDS,
        {"id": "notify", "type": "afterToolCall", "webhook": {"url": server.url + "/tools"}},
    )
    run(pipe, World())
    pipe.flush()
    assert deliverer.flush(10)

    bodies = {r.json()["apiName"]: r.json() for r in server.requests("/tools")}
    assert sorted(bodies) == ["add", "delete_file", "read_file", "search"]
    assert (bodies["add"]["content"], bodies["add"]["sessionKey"]) == ("5", "s-7")
    assert bodies["search"]["mocked"] is True
    assert bodies["delete_file"]["result"]["state"]["classification"] == "hook_denied"


def test_a_failing_tool_fires_on_tool_call_error_and_the_failed_graph_fires_on_error(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    @tool
    def flaky() -> str:
        """Always fails."""
        raise ConnectionError("upstream down")

    world = World()
    tools = [hook_tool(flaky)]
    app = graph(world, tools, [ai(("flaky", {}, "f1"))], handle_errors=False)  # fail the graph
    pipe.register(hook("tool-err", "onToolCallError", recorder), hook("err", "onError", recorder))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="fragile")
    with pytest.raises(ConnectionError):
        app.invoke({"messages": [("user", "go")]}, config={"callbacks": [handler]})
    pipe.flush()

    assert pipe.span("execute_tool flaky").status.status_code is StatusCode.ERROR
    op = pipe.span("invoke_agent fragile")
    assert op.status.status_code is StatusCode.ERROR
    assert recorder.names() == ["on_tool_call_error", "on_error"]
    assert recorder.fields("errorType", event="on_error") == [("ConnectionError",)]


def test_an_unwrapped_tool_a_hook_decided_on_is_refused_before_it_runs(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # before: delete_file and search ran as the model asked, a warning said "not enforced"
    pipe.register(*GUARDS, hook("rec", "afterToolCall", recorder))
    world = World()
    result = run(pipe, world, hooked=False)
    pipe.flush()

    assert sorted(world.ran) == ["add", "read_file"]  # the deny and the mock stopped theirs
    for call_id, reason in (("t3", "deleting files is not allowed"), ("t4", "a hook mocked it")):
        message = tool_message(result, call_id)
        assert message.status == "error"
        assert "ToolDenied" in str(message.content)
        assert reason in str(message.content)
    assert pipe.span("execute_tool delete_file").attributes["otelhooks.tool.outcome"] == "denied"
    assert sorted(e.apiName for e in recorder.of("after_tool_call")) == [  # type: ignore[attr-defined]
        "add",
        "delete_file",
        "read_file",
        "search",
    ]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_an_unwrapped_tool_whose_arguments_a_hook_rewrote_is_refused(
    pipe: TestPipeline, use_async: bool
) -> None:
    # before: a sandboxing rewrite was dropped and read_file ran with the model's own path
    def sandbox(event: ToolCallEvent) -> None:
        event.args["path"] = "/sandbox/" + event.args["path"]

    pipe.register(hook("sandbox", "before_tool_call", sandbox, matcher="read_file"))
    world = World()
    tools = make_tools(world)
    app = graph(world, tools, list(SCRIPT), handle_errors=False)  # ToolNode's default
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    state = {"messages": [("user", "read a.txt")]}
    config: Any = {"callbacks": [handler]}

    def invoke() -> Any:
        if use_async:
            return asyncio.run(app.ainvoke(state, config=config))
        return app.invoke(state, config=config)

    with pytest.raises(ToolDenied, match="rewrote the arguments"):
        invoke()
    pipe.flush()
    assert "read_file" not in world.ran
    span = pipe.span("execute_tool read_file")
    assert span.attributes["otelhooks.hook.decided_by"] == "otelhooks"


def test_a_tool_kind_guard_denies_the_runtimes_tool_of_that_kind(pipe: TestPipeline) -> None:
    # read_file is LangChain's file-read tool name in the tool-kind table (docs/adapters.md)
    pipe.register(hook("no-reads", "PreToolUse", lambda e: Block("no reads"), matcher="@file_read"))
    world = World()
    result = run(pipe, world)
    assert "read_file" not in world.ran
    assert "add" in world.ran  # a tool of no kind the guard names runs
    assert tool_message(result, "t2").content == "no reads"
    assert pipe.span("execute_tool read_file").attributes["otelhooks.tool.outcome"] == "denied"


def test_a_hooked_tool_that_lost_the_runs_context_says_no_hook_saw_it(pipe: TestPipeline) -> None:
    # a node calling the hooked tool through a thread pool of its own: the thread has none of the
    # run's context, so neither its callbacks (the handler) nor a guard see the call; the tool
    # runs as it would without otelhooks, which must not look guarded
    pipe.register(*GUARDS)
    world = World()
    [delete_file] = [hook_tool(t) for t in make_tools(world) if t.name == "delete_file"]

    def clean(state: MessagesState) -> dict[str, Any]:
        with ThreadPoolExecutor(1) as pool:
            out = pool.submit(delete_file.invoke, {"path": "a.txt"}).result()
        return {"messages": [AIMessage(str(out))]}

    builder = StateGraph(MessagesState)
    builder.add_node("clean", clean)
    builder.add_edge(START, "clean")
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    with capture_logs() as logs:
        builder.compile().invoke({"messages": [("user", "clean")]}, {"callbacks": [handler]})

    assert world.ran == ["delete_file"]
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == (
        "a hooked tool ran without the otelhooks handler in its callbacks: no hook saw it"
    )
    assert warning["tool"] == "delete_file"
    assert "copy_context" in warning["fix"]
    assert pipe.spans("execute_tool delete_file") == []

    # in the run's context (a copy of it in the thread) the guard holds and nothing is logged
    world = World()
    [delete_file] = [hook_tool(t) for t in make_tools(world) if t.name == "delete_file"]

    def clean_in_context(state: MessagesState) -> dict[str, Any]:
        with ThreadPoolExecutor(1) as pool:
            run = contextvars.copy_context().run
            out = pool.submit(run, delete_file.invoke, {"path": "a.txt"}).result()
        return {"messages": [AIMessage(str(out))]}

    builder = StateGraph(MessagesState)
    builder.add_node("clean", clean_in_context)
    builder.add_edge(START, "clean")
    with capture_logs() as logs:
        builder.compile().invoke({"messages": [("user", "clean")]}, {"callbacks": [handler]})
    assert world.ran == []
    assert [e for e in logs if e["log_level"] == "warning"] == []


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_before_agent_start_block_refuses_the_graph_before_the_model(
    pipe: TestPipeline, use_async: bool
) -> None:
    # the block was written on the operation's span and the graph ran on: the model was called
    # and the tools ran, and nothing said the guard was not enforced
    runs: list[str] = []

    def first_run_only(event: HookEvent) -> Block | None:
        runs.append("run")
        return Block("no runs today") if len(runs) == 1 else None

    pipe.register(hook("no-runs", "before_agent_start", first_run_only))
    world = World()
    app = graph(world, [hook_tool(t) for t in make_tools(world)], list(SCRIPT))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    state = {"messages": [("user", "add 2 and 3, read a.txt, then clean up")]}
    config: Any = {"callbacks": [handler]}

    def invoke() -> Any:
        if use_async:
            return asyncio.run(app.ainvoke(state, config=config))
        return app.invoke(state, config=config)

    with pytest.raises(RunBlockedError, match="no runs today") as blocked:
        invoke()
    assert blocked.value.reason == "no runs today"
    assert world.ran == []
    assert world.seen == []  # the model was never called
    op = pipe.span("invoke_agent researcher")
    assert (op.attributes or {})["otelhooks.hook.decision_reason"] == "no runs today"
    assert [s.name for s in pipe.spans()] == ["invoke_agent researcher"]

    # the same handler runs the next, allowed, run whole
    assert invoke()["messages"][-1].content == "5, and the file says hello"
    # each turn's two calls run at once (ainvoke): their order is theirs
    assert sorted(world.ran) == ["add", "delete_file", "read_file", "search"]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_an_input_guard_reads_the_runs_input_and_blocks_it(
    pipe: TestPipeline, use_async: bool
) -> None:
    # before: before_agent_start hooks got input "", so a guard on the input let every run by
    def no_passwords(event: HookEvent) -> Block | None:
        return Block("no passwords") if "hunter2" in getattr(event, "input", "") else None

    pipe.register(hook("no-passwords", "before_agent_start", no_passwords))
    world = World()
    app = graph(world, [hook_tool(t) for t in make_tools(world)], list(SCRIPT))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    config: Any = {"callbacks": [handler]}

    def invoke(state: Any) -> Any:
        if use_async:
            return asyncio.run(app.ainvoke(state, config=config))
        return app.invoke(state, config=config)

    for state in ({"messages": [("user", "my password is hunter2")]}, "my password is hunter2"):
        with pytest.raises(RunBlockedError, match="no passwords"):
            invoke(state)
    assert world.seen == []  # the model was never called
    assert world.ran == []


def test_a_rewrite_of_the_input_refuses_the_run_which_cannot_take_it(pipe: TestPipeline) -> None:
    # a callback cannot give the graph another input: run as it was, the redaction was lost
    # without a word and the model got the password
    def redact(event: HookEvent) -> dict[str, Any]:
        return {"input": getattr(event, "input", "").replace("hunter2", "***")}

    pipe.register(hook("redact", "before_agent_start", redact))
    world = World()
    app = graph(world, [hook_tool(t) for t in make_tools(world)], list(SCRIPT))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    state = {"messages": [("user", "my password is hunter2")]}
    with pytest.raises(RunBlockedError, match="cannot take"):
        app.invoke(state, config={"callbacks": [handler]})
    assert world.seen == []
    # an input the hook leaves alone runs
    state = {"messages": [("user", "add 2 and 3, read a.txt, then clean up")]}
    assert app.invoke(state, config={"callbacks": [handler]})["messages"][-1].content


@pytest.mark.parametrize("outer_hooked", [False, True], ids=["plain-outer", "hooked-outer"])
def test_a_hooked_tool_called_by_another_tool_obeys_its_deny(
    pipe: TestPipeline, outer_hooked: bool
) -> None:
    # a tool started under an unwrapped tool was taken for that tool's own inner call (a
    # wrapper's): the hooked tool found no decision and ran, its deny only logged
    pipe.register(*GUARDS)
    world = World()
    [delete_file] = [hook_tool(t) for t in make_tools(world) if t.name == "delete_file"]

    @tool
    def cleanup(folder: str) -> str:
        """Clean a folder up."""
        return str(delete_file.invoke({"path": "a.txt"}))

    outer = hook_tool(cleanup) if outer_hooked else cleanup
    app = StateGraph(MessagesState).add_node("tools", ToolNode([outer]))
    call = {"name": "cleanup", "args": {"folder": "."}, "id": "t1", "type": "tool_call"}
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    with capture_logs() as logs:
        out = (
            app.add_edge(START, "tools")
            .compile()
            .invoke({"messages": [AIMessage("", tool_calls=[call])]}, {"callbacks": [handler]})
        )

    assert world.ran == []
    assert world.files == {"a.txt": "hello otel hooks"}
    assert out["messages"][-1].content == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert (span.attributes or {})["otelhooks.hook.decided_by"] == "no-delete"
    assert [e for e in logs if e["log_level"] == "warning"] == []


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_hooked_tool_whose_handler_was_given_to_the_tool_obeys_its_deny(
    pipe: TestPipeline, use_async: bool
) -> None:
    # LangChain's own way to give one tool a handler (its `callbacks`): hook_tool dropped them, so
    # the wrapper saw no handler and ran the tool, whose own start then logged the deny as "not
    # enforced": both warnings said to do what had been done, and the file was deleted
    pipe.register(*GUARDS)
    world = World()
    [delete_file] = [t for t in make_tools(world) if t.name == "delete_file"]
    delete_file.callbacks = [OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")]
    app = StateGraph(MessagesState).add_node("tools", ToolNode([hook_tool(delete_file)]))
    call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "t1", "type": "tool_call"}
    state = {"messages": [AIMessage("", tool_calls=[call])]}
    compiled = app.add_edge(START, "tools").compile()
    with capture_logs() as logs:
        out = asyncio.run(compiled.ainvoke(state)) if use_async else compiled.invoke(state)

    assert world.ran == []
    assert world.files == {"a.txt": "hello otel hooks"}
    assert out["messages"][-1].content == "deleting files is not allowed"
    [span] = [s for s in pipe.spans() if s.name.startswith("execute_tool")]
    assert (span.attributes or {})["otelhooks.hook.decided_by"] == "no-delete"
    assert [e for e in logs if e["log_level"] == "warning"] == []


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("guarded_first", [False, True], ids=["guarded-last", "guarded-first"])
def test_every_otelhooks_handler_of_a_run_has_its_decisions_obeyed(
    pipe: TestPipeline, use_async: bool, guarded_first: bool
) -> None:
    # two handlers in one run (one tracing only, one with the guards): the wrapper obeyed the
    # first it found, so with the guarded one last the delete ran and no warning was logged
    world = World(files={"a.txt": "hello otel hooks", "safe.txt": "the safe copy"})

    def redirect(event: Any) -> dict[str, Any] | None:
        return {"args": {"path": "safe.txt"}} if event.apiName == "read_file" else None

    guarded = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    pipe.register(*GUARDS, hook("redirect", "before_tool_call", redirect))
    tracing = OtelHooksCallbackHandler(AgentTracer(), agent_name="tracing")  # no hooks
    handlers = [guarded, tracing] if guarded_first else [tracing, guarded]
    app = graph(world, [hook_tool(t) for t in make_tools(world)], list(SCRIPT))
    state = {"messages": [("user", "read a.txt, then clean up")]}
    config: Any = {"callbacks": handlers}
    with capture_logs() as logs:
        result = (
            asyncio.run(app.ainvoke(state, config=config))
            if use_async
            else app.invoke(state, config=config)
        )

    assert sorted(world.ran) == ["add", "read_file"]
    assert world.files["a.txt"] == "hello otel hooks"
    assert tool_message(result, "t3").content == "deleting files is not allowed"
    assert tool_message(result, "t4").content == "cached: otel is great"
    assert tool_message(result, "t2").content == "the safe copy"
    assert [e for e in logs if e["log_level"] == "warning"] == []


def _deny_force(event: ToolCallEvent) -> Block | ToolCallEvent | None:
    if event.args.get("path") == "/":  # the root is cleaned without force
        return event.model_copy(update={"args": {**event.args, "force": False}})
    return Block("force is not allowed") if event.args.get("force") else None


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_guard_sees_the_defaults_the_function_receives(
    pipe: TestPipeline, use_async: bool
) -> None:
    # guards saw only the arguments the model sent: a call leaving out `force` ran the
    # function with its default force=True past a guard denying force
    ran: list[tuple[str, bool]] = []

    @tool
    def remove(path: str, force: bool = True, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013 (a sloppy default, as users write)
        """Remove a path."""
        ran.append((path, force))
        return "removed"

    pipe.register(hook("no-force", "beforeToolCall", _deny_force))
    calls = [
        {"name": "remove", "args": {"path": "/tmp/x"}, "id": "r1", "type": "tool_call"},
        {"name": "remove", "args": {"path": "/"}, "id": "r2", "type": "tool_call"},
    ]
    app = StateGraph(MessagesState).add_node("tools", ToolNode([hook_tool(remove)]))
    graph_ = app.add_edge(START, "tools").compile()
    state: Any = {"messages": [AIMessage("", tool_calls=calls)]}
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer, agent_name="r")]}
    out = asyncio.run(graph_.ainvoke(state, config)) if use_async else graph_.invoke(state, config)

    assert ran == [("/", False)]  # the guard's rewrite of a default reaches the function
    assert tool_message(out, "r1").content == "force is not allowed"
    assert tool_message(out, "r2").content == "removed"


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_hooked_tool_given_a_plain_string_is_judged_by_its_argument(
    pipe: TestPipeline, use_async: bool
) -> None:
    # LangChain takes a plain string for a one-argument tool: the guard saw {"input": ...}, so a
    # guard reading `command` let it pass, and the wrapper then failed with a ValidationError
    ran: list[str] = []

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return f"ran {command}"

    def no_rm(event: ToolCallEvent) -> Block | None:
        return Block("rm is not allowed") if "rm" in str(event.args.get("command")) else None

    pipe.register(hook("no-rm", "beforeToolCall", no_rm))
    hooked = hook_tool(shell)
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer, agent_name="r")]}

    def call(text: str) -> Any:
        if use_async:
            return asyncio.run(hooked.ainvoke(text, config))
        return hooked.invoke(text, config)

    assert call("ls") == "ran ls"
    assert call("rm -rf /") == "rm is not allowed"
    assert ran == ["ls"]


@pytest.mark.parametrize("handler", [True, False], ids=["handler", "no-handler"])
def test_a_hooked_tool_with_a_none_default_runs_as_it_does_unwrapped(
    pipe: TestPipeline, handler: bool
) -> None:
    # LangChain hands a tool's _run every default of its schema; the wrapper gave them all to
    # the inner tool, whose validation refuses the None that `limit: int = None` defaults to:
    # the tool, which runs unwrapped, failed wrapped
    @tool
    def head(path: str, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013 (a sloppy default, as users write)
        """The first lines of a file."""
        return f"{path}: {limit}"

    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)] if handler else []}
    with capture_logs():
        assert head.invoke({"path": "a.txt"}) == "a.txt: None"
        assert hook_tool(head).invoke({"path": "a.txt"}, config) == "a.txt: None"
        assert hook_tool(head).invoke({"path": "a.txt", "limit": 3}, config) == "a.txt: 3"


@pytest.mark.parametrize("hooked", [False, True], ids=["unwrapped", "hook_tool"])
def test_a_tool_error_langchain_answers_with_is_a_failed_call(
    pipe: TestPipeline, hooked: bool
) -> None:
    # a ToolException the tool's handle_tool_error turns into its answer (a ToolMessage with
    # status="error") was recorded as a success; wrapped, the model was even told "success"
    @tool(response_format="content_and_artifact")
    def scan(path: str) -> tuple[str, dict[str, str]]:
        """Scan a disk."""
        if path == "/dev/sdz":
            raise ToolException("disk on fire")
        return "clean", {"path": path}

    scan.handle_tool_error = True
    calls = [
        {"name": "scan", "args": {"path": "/dev/sdz"}, "id": "r1", "type": "tool_call"},
        {"name": "scan", "args": {"path": "/dev/sda"}, "id": "r2", "type": "tool_call"},
    ]
    node = ToolNode([hook_tool(scan) if hooked else scan])
    app = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="r")
    out = app.invoke({"messages": [AIMessage("", tool_calls=calls)]}, {"callbacks": [handler]})
    pipe.flush()

    failed, ok = tool_message(out, "r1"), tool_message(out, "r2")
    assert (failed.content, failed.status) == ("disk on fire", "error")
    assert (ok.content, ok.status, ok.artifact) == ("clean", "success", {"path": "/dev/sda"})
    spans = sorted(pipe.spans("execute_tool scan"), key=lambda s: s.start_time or 0)
    outcomes = [(s.attributes or {})["otelhooks.tool.outcome"] for s in spans]
    assert sorted(outcomes) == ["error", "success"]
    assert sorted(s.status.status_code.name for s in spans) == ["ERROR", "UNSET"]


def test_a_guard_sees_each_value_as_the_function_receives_it(pipe: TestPipeline) -> None:
    # the schema's validation makes "true", 1 and "yes" the function's force=True: a guard
    # comparing with true (as a jq `.force == true` command guard does) saw the string and let
    # the forced delete run
    ran: list[tuple[str, bool]] = []

    @tool
    def remove(path: str, force: bool = False) -> str:
        """Remove a path."""
        ran.append((path, force))
        return "removed"

    def no_force(event: ToolCallEvent) -> Block | None:
        return Block("force is not allowed") if event.args.get("force") is True else None

    pipe.register(hook("no-force", "beforeToolCall", no_force))
    given = [True, "true", 1, "yes", "false"]
    calls = [
        {"name": "remove", "args": {"path": "/", "force": f}, "id": f"r{i}", "type": "tool_call"}
        for i, f in enumerate(given)
    ]
    app = StateGraph(MessagesState).add_node("tools", ToolNode([hook_tool(remove)]))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="r")
    out = (
        app.add_edge(START, "tools")
        .compile()
        .invoke({"messages": [AIMessage("", tool_calls=calls)]}, {"callbacks": [handler]})
    )

    answers = [tool_message(out, f"r{i}").content for i in range(len(given))]
    assert answers == ["force is not allowed"] * 4 + ["removed"]
    assert ran == [("/", False)]
