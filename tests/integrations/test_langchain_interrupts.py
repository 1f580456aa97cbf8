"""LangChain / LangGraph: a hooked tool that asks a person (LangGraph's ``interrupt()``) in a real
``ToolNode`` with a checkpointer, resumed with ``Command(resume=...)``: the paused call is
recorded as paused, never as a failure, and the resumed call is judged again: it runs only with
the arguments its tool had when it asked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from opentelemetry.trace import StatusCode

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook


def _graph(ran: list[str]) -> Any:
    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    return (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([hook_tool(delete_file)]))
        .add_edge(START, "tools")
        .compile(checkpointer=InMemorySaver())
    )


def _ask_then_resume(app: Any, config: Any, mode: str) -> tuple[Any, Any]:
    call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "c1", "type": "tool_call"}
    given: Any = {"messages": [AIMessage("", tool_calls=[call])]}
    if mode == "invoke":
        return app.invoke(given, config), app.invoke(Command(resume="yes"), config)

    async def both() -> tuple[Any, Any]:
        return await app.ainvoke(given, config), await app.ainvoke(Command(resume="yes"), config)

    return asyncio.run(both())


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_tool_that_asks_a_person_is_paused_not_failed(
    pipe: TestPipeline, recorder: Recorder, mode: str
) -> None:
    # the interrupt was recorded as the tool's failure: an ERROR span with error.type
    # GraphInterrupt and an on_tool_call_error for every call that asked a person
    pipe.register(
        hook("error", "on_tool_call_error", recorder),
        hook("after", "after_tool_call", recorder),
    )
    ran: list[str] = []
    config: Any = {
        "configurable": {"thread_id": f"t-{mode}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, done = _ask_then_resume(_graph(ran), config, mode)
    pipe.flush()

    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "a.txt"}]
    assert done["messages"][-1].content == "deleted a.txt"
    assert ran == ["a.txt"]
    assert recorder.of("on_tool_call_error") == []
    assert [e.toolCallId for e in recorder.of("after_tool_call")] == ["c1"]  # type: ignore[attr-defined]
    paused, finished = pipe.spans("execute_tool delete_file")
    assert paused.status.status_code is StatusCode.UNSET
    assert (paused.attributes or {})["otelhooks.tool.outcome"] == "interrupted"
    assert "error.type" not in (paused.attributes or {})
    assert (finished.attributes or {})["otelhooks.tool.outcome"] == "success"


def test_a_paused_call_from_another_process_is_not_reported_finished(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # a paused call's span reaching serve from another otelhooks process (the same attributes
    # through another tracer) was told to after_tool_call as a success
    pipe.register(
        hook("after", "after_tool_call", recorder), hook("err", "on_tool_call_error", recorder)
    )
    other = pipe.oh.tracer_provider.get_tracer("another.otelhooks.process")
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "delete_file",
        "gen_ai.tool.call.id": "c1",
        "otelhooks.tool.outcome": "interrupted",
    }
    with pipe.tracer.operation("graph") as op, op.step():
        with other.start_as_current_span("execute_tool delete_file", attributes=attrs):
            pass
        with other.start_as_current_span(
            "execute_tool delete_file", attributes={**attrs, "otelhooks.tool.outcome": "success"}
        ):
            pass
    pipe.flush()
    assert recorder.names() == ["after_tool_call"]  # the finished one only


def _rewrites(*paths: str) -> Any:
    """A guard rewriting the path into ``paths[n]`` at its ``n``-th call (a policy that answers
    otherwise once the person has been asked: a clock, a service, a rule changed meanwhile)."""
    answers = list(paths)

    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"path": answers.pop(0)}})

    return rewrite


def test_a_resumed_call_runs_only_with_the_arguments_its_tool_asked_about(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # the person was asked about /tmp/a.txt and said yes; on resume the guard, run again,
    # rewrote the path into /etc/passwd, and the tool deleted /etc/passwd
    pipe.register(
        hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/etc/passwd")),
        hook("denied", "on_tool_call_denied", recorder),
    )
    ran: list[str] = []
    config: Any = {
        "configurable": {"thread_id": "t-changed"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, done = _ask_then_resume(_graph(ran), config, "invoke")
    pipe.flush()

    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "/tmp/a.txt"}]
    assert ran == []
    answer = done["messages"][-1]
    assert (answer.tool_call_id, answer.status) == ("c1", "error")
    assert "asked a person" in answer.content
    told = [(e.args, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [({"path": "/etc/passwd"}, "otelhooks")]
    _, resumed = pipe.spans("execute_tool delete_file")
    assert (resumed.attributes or {})["otelhooks.tool.outcome"] == "denied"


def test_a_resumed_call_judged_alike_runs_and_a_deny_on_resume_stops_it(
    pipe: TestPipeline,
) -> None:
    # controls: the same rewrite at both passes runs; a guard added while the graph waited
    # denies the resumed call (the hooks judge it again)
    ran: list[str] = []
    where = _rewrites("/tmp/a.txt", "/tmp/a.txt", "/tmp/b.txt", "/tmp/b.txt")
    pipe.register(hook("where", "before_tool_call", where))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    alike: Any = {"configurable": {"thread_id": "t-alike"}, "callbacks": [handler]}
    _, done = _ask_then_resume(_graph(ran), alike, "invoke")
    assert ran == ["/tmp/a.txt"]
    assert done["messages"][-1].content == "deleted /tmp/a.txt"

    app = _graph(ran)
    given: Any = {
        "messages": [
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "delete_file",
                        "args": {"path": "b.txt"},
                        "id": "c2",
                        "type": "tool_call",
                    }
                ],
            )
        ]
    }
    later: Any = {"configurable": {"thread_id": "t-deny"}, "callbacks": [handler]}
    app.invoke(given, later)
    pipe.register(hook("no-delete", "before_tool_call", lambda e: Block("no deleting")))
    done = app.invoke(Command(resume="yes"), later)
    assert ran == ["/tmp/a.txt"]
    assert (done["messages"][-1].status, done["messages"][-1].content) == ("error", "no deleting")


def test_a_new_call_with_a_paused_call_s_id_is_not_taken_for_its_resume(pipe: TestPipeline) -> None:
    # a call left waiting, then a new input in the same thread whose model reuses the call id
    # (as scripted and some local models do): a new call, judged as any other
    ran: list[str] = []
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/tmp/b.txt")))
    app = _graph(ran)
    config: Any = {
        "configurable": {"thread_id": "t-reused"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    call = {"name": "delete_file", "args": {"path": "x"}, "id": "c1", "type": "tool_call"}
    app.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
    again = app.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
    assert [i.value for i in again["__interrupt__"]] == [{"delete": "/tmp/b.txt"}]
