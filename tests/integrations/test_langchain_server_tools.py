"""LangChain / LangGraph: the calls of tools the model's provider runs itself (a web search
given to ``create_agent`` as a provider tool dict, ``{"type": "web_search_preview"}``) are
recorded from the model's answer, and a guard that denies one says it was not enforced.

Before, no otelhooks hook ever saw them: no ``execute_tool`` span, no hook run, no line, no
warning, while a guard written for ``web_search`` looked as if it held. A real ``create_agent``
agent and LangGraph graph, a scripted chat model answering as a provider does after running
its own tool (LangChain's standard ``server_tool_call`` blocks, read from the provider's own
format where the message names its provider)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from opentelemetry.trace import StatusCode
from structlog.testing import capture_logs

from otelhooks import Block
from otelhooks.integrations.langchain import (
    OtelHooksCallbackHandler,
    OtelHooksMiddleware,
    UnguardedToolWarning,
)
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook

WEB_SEARCH = {"type": "web_search_preview"}


class Scripted(GenericFakeChatModel):
    """A chat model answering from a script, binding tools as a provider's model does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), **kwargs)


def _searched(provider_format: bool) -> AIMessage:
    """What the provider answers after running its own web search (OpenAI's Responses format,
    or LangChain's standard blocks)."""
    if provider_format:
        call = {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "admin password"},
        }
        return AIMessage(
            [call, {"type": "text", "text": "found it"}],
            response_metadata={"model_provider": "openai"},
        )
    blocks = [
        {"type": "server_tool_call", "name": "web_search", "args": {"query": "admin password"}},
        {"type": "server_tool_result", "tool_call_id": "ws_1", "status": "success", "output": "r"},
        {"type": "text", "text": "found it"},
    ]
    blocks[0]["id"] = "ws_1"
    return AIMessage(blocks)


def _agent_run(pipe: TestPipeline, mode: str, provider_format: bool = False) -> list[Any]:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    model = Scripted(messages=iter([_searched(provider_format)]))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    agent = create_agent(
        model, tools=[lookup, WEB_SEARCH], middleware=[OtelHooksMiddleware(handler)]
    )
    given, config = {"messages": [("user", "go")]}, {"callbacks": [handler]}
    with warnings.catch_warnings(), capture_logs() as logs:
        warnings.simplefilter("ignore", UnguardedToolWarning)  # what a service's logs may drop
        if mode == "invoke":
            out = agent.invoke(given, config)
        else:
            out = asyncio.run(agent.ainvoke(given, config))
    assert out["messages"][-1].text == "found it"  # the provider ran it: nothing could stop it
    pipe.flush()
    return logs


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("provider_format", [False, True], ids=["standard", "openai"])
def test_a_deny_of_a_provider_tool_s_call_is_recorded_as_not_enforced(
    pipe: TestPipeline, recorder: Recorder, mode: str, provider_format: bool
) -> None:
    pipe.register(
        hook("no-search", "before_tool_call", lambda e: Block("no web"), matcher="web_search"),
        hook("errors", "on_tool_call_error", recorder),
    )
    logs = _agent_run(pipe, mode, provider_format)

    span = pipe.span("execute_tool web_search")
    attrs = span.attributes or {}
    assert attrs["gen_ai.tool.call.id"] == "ws_1"
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert attrs["error.type"] == "otelhooks.integrations.langchain.UnguardedToolCall"
    assert span.status.status_code is StatusCode.ERROR
    told = [(e.apiName, e.errorType) for e in recorder.of("on_tool_call_error")]  # type: ignore[attr-defined]
    assert told == [("web_search", "UnguardedToolCall")]
    lines = [e for e in logs if "not enforced" in e["event"]]
    assert [(e["tool"], e["decision"], e["log_level"]) for e in lines] == [
        ("web_search", "denied", "warning")
    ]


def test_a_provider_tool_s_call_no_hook_decided_on_is_observed(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    pipe.register(
        hook("audit", "before_tool_call", lambda e: seen.append((e.apiName, dict(e.args)))),
        hook("after", "after_tool_call", recorder),
    )
    logs = _agent_run(pipe, "invoke")

    assert seen == [("web_search", {"query": "admin password"})]
    span = pipe.span("execute_tool web_search")
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "success"
    assert (span.attributes or {})["gen_ai.tool.type"] == "extension"
    assert span.status.status_code is not StatusCode.ERROR
    assert [e.apiName for e in recorder.of("after_tool_call")] == ["web_search"]  # type: ignore[attr-defined]
    assert [e for e in logs if "not enforced" in e["event"]] == []


def test_create_agent_names_the_provider_tools_no_hook_can_stop(pipe: TestPipeline) -> None:
    model = Scripted(messages=iter([AIMessage("nothing to do")]))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    agent = create_agent(model, tools=[WEB_SEARCH], middleware=[OtelHooksMiddleware(handler)])
    with pytest.warns(UnguardedToolWarning, match="'web_search_preview'") as caught:
        agent.invoke({"messages": [("user", "go")]}, {"callbacks": [handler]})
    assert "the model's provider runs it" in str(caught[0].message)


def test_a_graph_s_own_model_call_records_the_provider_s_tool_calls(pipe: TestPipeline) -> None:
    # no create_agent: a node calls a model bound to a provider tool, the handler in the config
    pipe.register(
        hook("no-search", "before_tool_call", lambda e: Block("no"), matcher="web_search")
    )
    model = Scripted(messages=iter([_searched(False)])).bind_tools([WEB_SEARCH])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent").compile()
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    with pytest.warns(UnguardedToolWarning, match="'web_search_preview'"), capture_logs() as logs:
        graph.invoke({"messages": [("user", "go")]}, {"callbacks": [handler]})
    pipe.flush()

    span = pipe.span("execute_tool web_search")
    assert (span.attributes or {})["error.type"] == (
        "otelhooks.integrations.langchain.UnguardedToolCall"
    )
    step = span.parent
    assert step is not None
    assert step.span_id == pipe.span("step 0").context.span_id
    assert [e["tool"] for e in logs if "not enforced" in e["event"]] == ["web_search"]


def test_a_model_bound_to_a_provider_tool_is_named_once_at_its_first_call(
    pipe: TestPipeline,
) -> None:
    # no create_agent: the handler names it from the model call's bound tools, a client tool
    # the model binds as a dict (its calls come back as tool calls) not among them
    bash = {"type": "bash_20250124", "name": "bash"}
    model = Scripted(messages=iter([AIMessage("one"), AIMessage("two")]))
    bound = model.bind_tools([WEB_SEARCH, bash])
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bound.invoke("search", {"callbacks": [handler]})
        bound.invoke("again", {"callbacks": [handler]})
    named = [str(w.message) for w in caught if issubclass(w.category, UnguardedToolWarning)]
    assert len(named) == 1
    assert "'web_search_preview' (a provider tool: the model's provider runs it)" in named[0]
    assert "bash" not in named[0]


def test_warnings_made_errors_refuse_a_model_call_bound_to_a_provider_tool(
    pipe: TestPipeline,
) -> None:
    model = Scripted(messages=iter([AIMessage("searched")])).bind_tools([WEB_SEARCH])
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="researcher")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        with pytest.raises(UnguardedToolWarning, match="'web_search_preview'"):
            model.invoke("search", {"callbacks": [handler]})
