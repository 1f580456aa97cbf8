"""LangChain / LangGraph: each way of calling a tool that docs/adapters.md's "What is guarded"
table names as guarded holds a deny: the tool never runs. A hooked tool called through each of
``Runnable``'s and ``BaseTool``'s entry points, in a ``Send`` fan-out, in a subgraph, in
``create_react_agent``, with LangGraph's injected arguments, returning a ``Command``; and the
same tool unwrapped, refused as it starts (``ToolDenied``). Real LangGraph graphs and a scripted
chat model."""

from __future__ import annotations

import asyncio
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode
from langgraph.types import Command, Send
from typing_extensions import TypedDict

from otelhooks import Block, ToolDenied
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import hook

GUARD = hook("no-rm", "before_tool_call", lambda e: Block("no removing"), matcher="rm")


class Scripted(GenericFakeChatModel):
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def _rm(ran: list[str]) -> BaseTool:
    @tool
    def rm(path: str) -> str:
        """Remove a file."""
        ran.append(path)
        return f"removed {path}"

    return rm


ENTRY_POINTS: dict[str, Callable[[BaseTool, Any], Any]] = {
    "invoke": lambda t, c: t.invoke({"path": "a"}, c),
    "ainvoke": lambda t, c: asyncio.run(t.ainvoke({"path": "a"}, c)),
    "batch": lambda t, c: t.batch([{"path": "a"}, {"path": "b"}], c),
    "abatch": lambda t, c: asyncio.run(t.abatch([{"path": "a"}, {"path": "b"}], c)),
    "stream": lambda t, c: list(t.stream({"path": "a"}, c)),
    "run": lambda t, c: t.run({"path": "a"}, callbacks=c["callbacks"]),
    "arun": lambda t, c: asyncio.run(t.arun({"path": "a"}, callbacks=c["callbacks"])),
    "with_retry": lambda t, c: t.with_retry().invoke({"path": "a"}, c),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_each_entry_point_of_a_hooked_tool_obeys_a_deny(pipe: TestPipeline, entry: str) -> None:
    pipe.register(GUARD)
    ran: list[str] = []
    handler = OtelHooksCallbackHandler(pipe.tracer)
    out = ENTRY_POINTS[entry](hook_tool(_rm(ran)), {"callbacks": [handler]})
    assert ran == []
    assert "no removing" in str(out)


class Fan(TypedDict):
    paths: list[str]
    out: Annotated[list[str], operator.add]


def _fan_out(rm: BaseTool) -> Any:
    def fan(state: Fan) -> list[Send]:
        return [Send("work", {"paths": [p], "out": []}) for p in state["paths"]]

    def work(state: Fan) -> dict[str, Any]:
        return {"out": [rm.invoke({"path": state["paths"][0]})]}

    builder = StateGraph(Fan).add_node("work", work)
    return builder.add_conditional_edges(START, fan, ["work"]).add_edge("work", END).compile()


def _subgraph(rm: BaseTool) -> Any:
    def work(state: Fan) -> dict[str, Any]:
        return {"out": [rm.invoke({"path": "s"})]}

    sub = StateGraph(Fan).add_node("work", work).add_edge(START, "work").compile()
    return StateGraph(Fan).add_node("sub", sub).add_edge(START, "sub").compile()


@pytest.mark.parametrize("shape", ["send_fan_out", "subgraph"])
@pytest.mark.parametrize("wrapped", [True, False], ids=["hook_tool", "unwrapped"])
def test_a_node_s_own_tool_call_obeys_a_deny(pipe: TestPipeline, shape: str, wrapped: bool) -> None:
    pipe.register(GUARD)
    ran: list[str] = []
    rm = hook_tool(_rm(ran)) if wrapped else _rm(ran)
    app = _fan_out(rm) if shape == "send_fan_out" else _subgraph(rm)
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    given = {"paths": ["a", "b"], "out": []}
    if wrapped:
        assert set(app.invoke(given, config)["out"]) == {"no removing"}
    else:
        with pytest.raises(ToolDenied, match="no removing"):
            app.invoke(given, config)
    assert ran == []


def _injected_tools(ran: list[str]) -> list[BaseTool]:
    @tool
    def rm_state(path: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Remove a file, reading the graph's state."""
        ran.append(path)
        return "removed"

    @tool
    def rm_command(path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Remove a file, answering with a Command."""
        ran.append(path)
        return Command(update={"messages": [ToolMessage("removed", tool_call_id=tool_call_id)]})

    return [rm_state, rm_command]


@pytest.mark.parametrize("name", ["rm_state", "rm_command"])
@pytest.mark.parametrize("wrapped", [True, False], ids=["hook_tool", "unwrapped"])
def test_a_tool_node_call_with_injected_arguments_obeys_a_deny(
    pipe: TestPipeline, name: str, wrapped: bool
) -> None:
    pipe.register(hook("no", "before_tool_call", lambda e: Block("no removing"), matcher=name))
    ran: list[str] = []
    tools = [t for t in _injected_tools(ran) if t.name == name]
    node = ToolNode([hook_tool(t) for t in tools] if wrapped else tools, handle_tool_errors=True)
    app = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    call = {"name": name, "args": {"path": "a"}, "id": "c1", "type": "tool_call"}
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    out = app.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
    answer = out["messages"][-1]
    assert ran == []
    assert answer.status == "error"
    assert "no removing" in str(answer.content)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_create_react_agent_with_hooked_tools_obeys_a_deny(pipe: TestPipeline, mode: str) -> None:
    from langgraph.prebuilt import create_react_agent

    pipe.register(GUARD)
    ran: list[str] = []
    call = {"name": "rm", "args": {"path": "a"}, "id": "c1", "type": "tool_call"}
    model = Scripted(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
        app = create_react_agent(model, [hook_tool(_rm(ran))])
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    given = {"messages": [("user", "clean up")]}
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))
    assert ran == []
    assert out["messages"][2].content == "no removing"
