"""LangChain / LangGraph: a hooked tool's result keeps its own shape when a
``tool_result_persist`` hook rewrites its text (a ``ToolMessage``'s status and artifact, a
LangGraph ``Command``'s update and ``goto``), or the call fails loudly (a real ``ToolNode``)."""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from opentelemetry.trace import StatusCode

from otelhooks import Block, HookEvent
from otelhooks.integrations.langchain import (
    OtelHooksCallbackHandler,
    ResultNotRewritableError,
    hook_tool,
)
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook


class State(MessagesState):
    fetched: Annotated[list[str], operator.add]
    history: Annotated[list[Any], operator.add]
    done: Annotated[list[str], operator.add]


@tool
def fetch(url: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:  # type: ignore[type-arg]
    """Fetch a page."""
    return Command(
        update={
            "messages": [
                ToolMessage(content=f"token=SECRET from {url}", tool_call_id=tool_call_id)
            ],
            "fetched": [url],
        },
        goto="done",
    )


@tool
def rm(path: str) -> str:
    """Remove a file."""
    raise AssertionError("a denied call ran")


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace("SECRET", "***")


def _calls(*calls: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
    tool_calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls]
    return {"messages": [AIMessage(content="", tool_calls=tool_calls)]}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_command_keeps_its_update_and_goto_when_a_hook_rewrites_its_message(
    pipe: TestPipeline, mode: str
) -> None:
    # the caller got str(Command) as the tool's text: the state update and goto were lost
    pipe.register(
        hook("no-rm", "beforeToolCall", lambda e: Block("no rm"), matcher="rm$"),
        hook("redact", "tool_result_persist", _redact),
    )
    app = (
        StateGraph(State)
        .add_node("tools", ToolNode([hook_tool(fetch), hook_tool(rm)]))
        .add_node("done", lambda state: {"done": ["yes"]})
        .add_edge(START, "tools")
        .compile()
    )
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    given = _calls(
        ("fetch", {"url": "a"}, "c1"),
        ("rm", {"path": "/x"}, "c2"),
        ("fetch", {"url": "b"}, "c3"),
    )
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))

    said = {m.tool_call_id: (m.status, m.content) for m in out["messages"][1:]}
    assert said == {
        "c1": ("success", "token=*** from a"),
        "c2": ("error", "no rm"),
        "c3": ("success", "token=*** from b"),
    }
    assert sorted(out["fetched"]) == ["a", "b"]
    assert out["done"]  # the Commands' goto ran


def test_a_command_whose_message_cannot_be_rewritten_fails_loudly(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # a ToolNode whose messages live under another key: the Command holds no
    # update["messages"] for otelhooks to rewrite, so a redaction must not hand back its text
    @tool
    def fetch_history(url: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:  # type: ignore[type-arg]
        """Fetch a page."""
        message = ToolMessage(content=f"token=SECRET from {url}", tool_call_id=tool_call_id)
        return Command(update={"history": [message], "fetched": [url]})

    pipe.register(
        hook("redact", "tool_result_persist", _redact),
        hook("error", "on_tool_call_error", recorder),
    )
    node = ToolNode([hook_tool(fetch_history)], messages_key="history")
    app = StateGraph(State).add_node("tools", node).add_edge(START, "tools").compile()
    call = AIMessage(
        content="",
        tool_calls=[
            {"name": "fetch_history", "args": {"url": "a"}, "id": "h1", "type": "tool_call"}
        ],
    )
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}

    with pytest.raises(ResultNotRewritableError, match="without a single ToolMessage"):
        app.invoke({"history": [call]}, config)
    pipe.flush()

    span = pipe.span("execute_tool fetch_history")
    assert span.status.status_code is StatusCode.ERROR
    (error,) = recorder.of("on_tool_call_error")
    assert "Command" in error.error  # type: ignore[attr-defined]


def test_a_list_of_commands_fails_loudly_when_a_hook_rewrites_it(pipe: TestPipeline) -> None:
    # ToolNode takes a list of Commands from one call; its text is the list's, which a
    # rewrite would hand back as a plain string
    @tool
    def fetch_all(url: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> list[Any]:
        """Fetch a page."""
        message = ToolMessage(content=f"token=SECRET from {url}", tool_call_id=tool_call_id)
        return [Command(update={"messages": [message], "fetched": [url]})]

    pipe.register(hook("redact", "tool_result_persist", _redact))
    app = StateGraph(State).add_node("tools", ToolNode([hook_tool(fetch_all)]))
    graph = app.add_edge(START, "tools").compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}

    with pytest.raises(ResultNotRewritableError, match="list of them"):
        graph.invoke(_calls(("fetch_all", {"url": "a"}, "l1")), config)


def test_a_tool_message_keeps_its_status_and_artifact_when_a_hook_rewrites_it(
    pipe: TestPipeline,
) -> None:
    # the caller got the redacted text alone: LangChain made it a new ToolMessage, its
    # artifact dropped and a tool error's status="error" turned into "success"
    @tool(response_format="content_and_artifact")
    def page(url: str) -> tuple[str, dict[str, int]]:
        """Fetch a page and its raw bytes."""
        return f"token=SECRET from {url}", {"bytes": 42}

    @tool
    def broken(url: str) -> str:
        """Fetch a page that fails."""
        raise ToolException(f"SECRET refused for {url}")

    broken.handle_tool_error = True
    pipe.register(hook("redact", "tool_result_persist", _redact))
    node = ToolNode([hook_tool(page), hook_tool(broken)])
    app = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    out = app.invoke(_calls(("page", {"url": "a"}, "p1"), ("broken", {"url": "b"}, "b1")), config)

    said = {m.tool_call_id: (m.status, m.content, m.artifact) for m in out["messages"][1:]}
    assert said == {
        "p1": ("success", "token=*** from a", {"bytes": 42}),
        "b1": ("error", "*** refused for b", None),
    }


def _redact_blocks(event: HookEvent) -> None:
    # a redactor that reads the result as the JSON it is everywhere else
    result = event.result  # type: ignore[attr-defined]
    blocks = json.loads(result["content"])
    for block in blocks:
        block["text"] = block["text"].replace("SECRET", "***")
    result["content"] = json.dumps(blocks)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_content_blocks_reach_the_hooks_as_json_and_the_model_as_blocks(
    pipe: TestPipeline, mode: str
) -> None:
    # a tool answering with content blocks (a list, as an MCP tool does): the hooks got
    # Python's repr of the list, "[{'type': 'text', ...}]", which a redactor parsing JSON
    # fails on (the model then read SECRET), and a redaction made the blocks that text
    @tool
    def page(url: str) -> list[dict[str, str]]:
        """Fetch a page."""
        return [{"type": "text", "text": f"token=SECRET from {url}"}]

    pipe.register(hook("redact", "tool_result_persist", _redact_blocks))
    node = ToolNode([hook_tool(page)])
    app = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    given = _calls(("page", {"url": "a"}, "p1"))
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))
    answer = out["messages"][-1]
    assert (answer.status, answer.content) == (
        "success",
        [{"type": "text", "text": "token=*** from a"}],
    )
