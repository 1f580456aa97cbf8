"""LangChain / LangGraph: the text of an exception a ``hook_tool`` tool raises, which a real
``ToolNode`` (``handle_tool_errors``) turns into the model's ``ToolMessage``, goes through the
``tool_result_persist`` hooks as a result does (a scripted chat model reads it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from opentelemetry.trace import StatusCode

from otelhooks import HookEvent
from otelhooks.integrations.langchain import (
    OtelHooksCallbackHandler,
    ToolErrorNotRetoldError,
    hook_tool,
)
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, attribute_values, hook

SECRET = "S-42-SECRET"


class ScriptedModel(GenericFakeChatModel):
    """The fake chat model taking tools, keeping every conversation it is given."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class NeedsTwo(Exception):
    """An exception that cannot be made again from its text alone."""

    def __init__(self, token: str, where: str) -> None:
        super().__init__(f"bad token {token} at {where}")


@tool
def login(user: str) -> str:
    """Log a user in."""
    raise ValueError(f"bad token {SECRET} for {user}")


class LoginError(Exception):
    """An exception whose text says less than its arguments (and its repr) do."""

    def __str__(self) -> str:
        return "login failed"


@tool
def login_quiet(user: str) -> str:
    """Log a user in (its error's text hides its arguments)."""
    raise LoginError(f"bad token {SECRET} for {user}")


@tool
def login_strict(user: str) -> str:
    """Log a user in (its error needs two values)."""
    raise NeedsTwo(SECRET, user)


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace(SECRET, "[REDACTED]")


def _graph(tool_: Any, handle: Any, model: ScriptedModel) -> Any:
    node = ToolNode([hook_tool(tool_)], handle_tool_errors=handle)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return (
        StateGraph(MessagesState)
        .add_node("agent", agent)
        .add_node("tools", node)
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition)
        .add_edge("tools", "agent")
        .compile()
    )


def _model(name: str) -> ScriptedModel:
    call = {"name": name, "args": {"user": "ann"}, "id": "c1", "type": "tool_call"}
    script = [AIMessage("", tool_calls=[call]), AIMessage("done")]
    return ScriptedModel(messages=iter(script), seen=[])


def _run(app: Any, pipe: TestPipeline, mode: str) -> dict[str, Any]:
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    start = {"messages": [("user", "log ann in")]}
    if mode == "ainvoke":
        return asyncio.run(app.ainvoke(start, config))
    return app.invoke(start, config)  # type: ignore[no-any-return]


def _by_hand(e: Exception) -> str:
    return f"the tool failed: {e}"


HANDLERS: dict[str, Callable[[], Any]] = {
    "true": lambda: True,
    "callable": lambda: _by_hand,
    "types": lambda: (ValueError,),
}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("handle", sorted(HANDLERS))
def test_a_tool_error_the_model_reads_goes_through_tool_result_persist(
    pipe: TestPipeline, handle: str, mode: str
) -> None:
    # the ToolNode's error message told the model "bad token S-42-SECRET": the redaction
    # ran on results only, and the exception passed the wrapper as it was raised
    errors = Recorder()
    pipe.register(
        hook("redact", "tool_result_persist", _redact),
        hook("errors", "on_tool_call_error", errors),
    )
    model = _model("login")
    out = _run(_graph(login, HANDLERS[handle](), model), pipe, mode)

    told = model.seen[1][-1]
    assert isinstance(told, ToolMessage)
    assert told.status == "error"
    assert SECRET not in str(told.content)
    assert "bad token [REDACTED] for ann" in told.content
    assert out["messages"][-1].content == "done"
    pipe.flush()
    spans = pipe.spans()
    span = next(s for s in spans if s.name == "execute_tool login")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "ValueError"
    assert not any(SECRET in v for v in attribute_values(spans))
    assert not any(SECRET in (s.status.description or "") for s in spans)
    assert len(errors.events) == 1
    assert SECRET not in str(errors.events[0].model_dump())


def test_a_tool_error_the_hooks_leave_alone_is_the_exception_raised(pipe: TestPipeline) -> None:
    seen: list[str] = []
    pipe.register(hook("look", "tool_result_persist", lambda e: seen.append(e.result["content"])))
    model = _model("login")
    _run(_graph(login, True, model), pipe, "invoke")

    told = model.seen[1][-1]
    assert told.content == (
        f"Error: ValueError('bad token {SECRET} for ann')\n Please fix your mistakes."
    )
    assert seen == [f"bad token {SECRET} for ann"]


def test_a_tool_error_that_cannot_be_made_again_fails_loudly_without_its_secret(
    pipe: TestPipeline,
) -> None:
    pipe.register(hook("redact", "tool_result_persist", _redact))
    model = _model("login_strict")
    _run(_graph(login_strict, True, model), pipe, "invoke")

    told = model.seen[1][-1]
    assert isinstance(told, ToolMessage)
    assert told.status == "error"
    assert SECRET not in str(told.content)
    assert ToolErrorNotRetoldError.__name__ in told.content
    assert "bad token [REDACTED] at ann" in told.content


def test_a_blocked_tool_error_tells_the_model_the_reason(pipe: TestPipeline) -> None:
    def _fail(event: HookEvent) -> None:
        raise RuntimeError("scanner down")

    pipe.register(hook("scan", "tool_result_persist", _fail, on_error="block"))
    model = _model("login")
    _run(_graph(login, True, model), pipe, "invoke")

    told = model.seen[1][-1]
    assert isinstance(told, ToolMessage)
    assert told.status == "error"
    assert SECRET not in str(told.content)
    assert "ValueError(" in told.content
    assert "scan" in told.content
    assert "scanner down" in told.content


def test_a_tool_error_whose_repr_says_more_than_its_text_is_made_again_from_its_text(
    pipe: TestPipeline,
) -> None:
    # the hooks judged "login failed" and let it pass; the ToolNode told the model the
    # exception's repr, LoginError('bad token S-42-SECRET for ann'), which no hook had seen
    pipe.register(hook("redact", "tool_result_persist", _redact))
    model = _model("login_quiet")
    _run(_graph(login_quiet, True, model), pipe, "invoke")

    told = model.seen[1][-1]
    assert told.content == "Error: LoginError('login failed')\n Please fix your mistakes."
