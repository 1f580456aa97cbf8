"""LangChain / LangGraph: once a ``tool_result_persist`` hook redacts a hooked tool's result,
the redacted result is the only one other listeners get (a user's callback handler, the tool's
own callbacks, ``astream_events``, LangGraph's stream modes, a ``create_agent`` agent), while a
model the tool calls itself is still heard, under the tool's run (real graphs, scripted
models)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import adispatch_custom_event
from langchain_core.globals import set_debug
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from structlog.testing import capture_logs

from otelhooks import HookEvent
from otelhooks.integrations.langchain import (
    OtelHooksCallbackHandler,
    OtelHooksMiddleware,
    hook_tool,
)
from otelhooks.testing import TestPipeline
from tests.conftest import attribute_values, hook

SECRET = "sk-live-0451"


class Scripted(GenericFakeChatModel):
    """A chat model answering from a script, accepting ``bind_tools``."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
        return self


class Listener(BaseCallbackHandler):
    """A user's handler: every tool end and chain end it hears, and each run's parent."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.tool_starts: list[tuple[str, UUID]] = []
        self.parents: dict[UUID, UUID | None] = {}

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        self.tool_starts.append((str((serialized or {}).get("name")), run_id))
        self.parents[run_id] = kw.get("parent_run_id")

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kw: Any
    ) -> None:
        self.parents[run_id] = kw.get("parent_run_id")

    def on_tool_end(self, output: Any, **kw: Any) -> None:
        self.heard.append(repr(output))

    def on_chain_end(self, outputs: Any, **kw: Any) -> None:
        self.heard.append(repr(outputs))

    def on_llm_end(self, response: Any, **kw: Any) -> None:
        self.heard.append(repr(response))


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace(SECRET, "[REDACTED]")


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"{url}: token {SECRET}"


@tool
async def afetch(url: str) -> str:
    """Fetch a page (async)."""
    return f"{url}: token {SECRET}"


def _graph(tools: list[BaseTool]) -> Any:
    return StateGraph(MessagesState).add_node("tools", ToolNode(tools)).add_edge(START, "tools")


def _graph_of(node: ToolNode) -> Any:
    return StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()


def _call(name: str) -> dict[str, Any]:
    call = {"name": name, "args": {"url": "a"}, "id": "t1", "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "async-tool"])
def test_a_users_callback_handler_hears_only_the_redacted_result(
    pipe: TestPipeline, mode: str
) -> None:
    # before: the wrapper ran its inner tool as a second tool run under the user's handlers,
    # whose on_tool_end got the tool's own result, the secret in it
    pipe.register(hook("redact", "tool_result_persist", _redact))
    name = "afetch" if mode == "async-tool" else "fetch"
    app = _graph([hook_tool(afetch if mode == "async-tool" else fetch)]).compile()
    listener = Listener()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer), listener]}
    given = _call(name)
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))

    assert out["messages"][-1].content == "a: token [REDACTED]"
    assert [n for n, _ in listener.tool_starts] == [name]  # one tool run: the call the model made
    assert any("[REDACTED]" in h for h in listener.heard)
    assert [h for h in listener.heard if SECRET in h] == []


def test_the_tools_own_callbacks_hear_only_the_redacted_result(pipe: TestPipeline) -> None:
    # before: a handler given to the tool itself heard the wrapper's end and the inner's, raw
    pipe.register(hook("redact", "tool_result_persist", _redact))
    own = Listener()
    app = _graph([hook_tool(fetch.model_copy(update={"callbacks": [own]}))]).compile()
    app.invoke(_call("fetch"), {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]})

    assert own.heard == [
        "ToolMessage(content='a: token [REDACTED]', name='fetch', tool_call_id='t1')"
    ]


@pytest.mark.parametrize("version", ["v2"])
def test_astream_events_hand_out_only_the_redacted_result(pipe: TestPipeline, version: str) -> None:
    # before: astream_events' on_tool_end of the inner run carried the secret
    pipe.register(hook("redact", "tool_result_persist", _redact))
    app = _graph([hook_tool(fetch)]).compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}

    async def events() -> list[Any]:
        return [e async for e in app.astream_events(_call("fetch"), config, version=version)]

    seen = asyncio.run(events())
    ends = [e for e in seen if e["event"] == "on_tool_end"]
    assert len(ends) == 1
    assert "[REDACTED]" in repr(ends[0]["data"]["output"])
    assert [e["event"] for e in seen if SECRET in repr(e)] == []


@pytest.mark.parametrize("stream_mode", ["updates", "messages", "values", "debug", "tasks"])
def test_langgraph_streams_hand_out_only_the_redacted_result(
    pipe: TestPipeline, stream_mode: str
) -> None:
    pipe.register(hook("redact", "tool_result_persist", _redact))
    app = _graph([hook_tool(fetch)]).compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    chunks = list(app.stream(_call("fetch"), config, stream_mode=stream_mode))
    assert "[REDACTED]" in repr(chunks)
    assert SECRET not in repr(chunks)


def test_a_model_the_tool_calls_is_heard_under_the_tools_run(pipe: TestPipeline) -> None:
    # the inner run is heard by no handler; what the tool runs itself hangs under the
    # wrapper's run, as it would under the tool unwrapped
    pipe.register(hook("redact", "tool_result_persist", _redact))

    @tool
    def summarise(url: str) -> str:
        """Summarise a page with a model."""
        model = Scripted(messages=iter([AIMessage("a summary")]))
        return f"{model.invoke(url).content} {SECRET}"

    listener = Listener()
    app = _graph([hook_tool(summarise)]).compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer), listener]}
    call = {"name": "summarise", "args": {"url": "a"}, "id": "t1", "type": "tool_call"}
    out = app.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)

    assert out["messages"][-1].content == "a summary [REDACTED]"
    [(_, tool_run)] = listener.tool_starts
    model_runs = [r for r, parent in listener.parents.items() if parent == tool_run]
    assert len(model_runs) == 1  # the model call, a child of the tool's run
    assert [h for h in listener.heard if SECRET in h] == []
    pipe.flush()
    assert len([s for s in pipe.spans() if s.name.startswith("execute_tool")]) == 1


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_create_agent_run_hands_listeners_only_the_redacted_result(
    pipe: TestPipeline, mode: str
) -> None:
    pipe.register(hook("redact", "tool_result_persist", _redact))
    call = {"name": "fetch", "args": {"url": "a"}, "id": "c1"}
    model = Scripted(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")]))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="helper")
    agent = create_agent(model, tools=[fetch], middleware=[OtelHooksMiddleware(handler)])
    listener = Listener()
    config: Any = {"callbacks": [handler, listener]}
    given: Any = {"messages": [("user", "go")]}
    out = (
        agent.invoke(given, config)
        if mode == "invoke"
        else asyncio.run(agent.ainvoke(given, config))
    )

    assert out["messages"][2].content == "a: token [REDACTED]"
    assert [h for h in listener.heard if SECRET in h] == []
    assert [n for n, _ in listener.tool_starts] == ["fetch"]


def test_langchain_debug_on_says_its_console_hears_the_raw_result(pipe: TestPipeline) -> None:
    # LangChain's debug console joins every run it configures, the inner tool's too: said,
    # and the call still makes one tool span in the wrapper's run
    pipe.register(hook("redact", "tool_result_persist", _redact))
    app = _graph([hook_tool(fetch)]).compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    set_debug(True)
    try:
        with capture_logs() as logs:
            out = app.invoke(_call("fetch"), config)
            app.invoke(_call("fetch"), config)  # said once per handler, not once a call
    finally:
        set_debug(False)

    assert out["messages"][-1].content == "a: token [REDACTED]"
    said = [e for e in logs if "LangChain debug or LangSmith tracing is on" in e["event"]]
    assert len(said) == 1
    assert said[0]["log_level"] == "warning"
    pipe.flush()
    tool_spans = [s for s in pipe.spans() if s.name.startswith("execute_tool")]
    assert len(tool_spans) == 2  # one a call
    # the inner runs' ends opened no run of their own: one operation a graph run
    assert len({s.context.trace_id for s in pipe.spans()}) == 2


class ErrorListener(BaseCallbackHandler):
    def __init__(self) -> None:
        self.errors: list[str] = []

    def on_tool_error(self, error: BaseException, **kw: Any) -> None:
        self.errors.append(repr(error))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_users_handler_hears_a_tools_exception_only_as_the_hooks_kept_it(
    pipe: TestPipeline, mode: str
) -> None:
    # before: the inner run's on_tool_error handed every handler the exception as raised
    @tool
    def login() -> str:
        """Log in."""
        raise ValueError(f"bad token {SECRET}")

    pipe.register(hook("redact", "tool_result_persist", _redact))
    app = _graph_of(ToolNode([hook_tool(login)], handle_tool_errors=True))
    listener = ErrorListener()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer), listener]}
    given = _call("login")
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))

    assert "bad token [REDACTED]" in out["messages"][-1].content
    assert listener.errors == ["ValueError('bad token [REDACTED]')"]
    pipe.flush()
    assert [v for v in attribute_values(pipe.spans()) if SECRET in v] == []


def test_events_a_tool_dispatches_reach_the_streams_under_its_run(pipe: TestPipeline) -> None:
    # the inner run is heard by no handler: what the tool dispatches still reaches
    # astream_events (as the wrapper's run's) and stream_mode="custom"
    @tool
    async def progress(url: str) -> str:
        """Report progress."""
        await adispatch_custom_event("progress", {"pct": 50})
        get_stream_writer()({"pct": 60})
        return "done"

    app = _graph([hook_tool(progress)]).compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    given = _call("progress")

    async def main() -> tuple[list[Any], list[Any]]:
        events = [e async for e in app.astream_events(given, config, version="v2")]
        custom = [c async for c in app.astream(given, config, stream_mode="custom")]
        return events, custom

    events, custom = asyncio.run(main())
    [start] = [e for e in events if e["event"] == "on_tool_start"]
    [dispatched] = [e for e in events if e["event"] == "on_custom_event"]
    assert dispatched["data"] == {"pct": 50}
    assert dispatched["run_id"] == start["run_id"]
    assert custom == [{"pct": 60}]
