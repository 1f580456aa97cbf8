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
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt
from opentelemetry.trace import StatusCode

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook


def _graph_tool(ran: list[str]) -> Any:
    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    return delete_file


def _graph(ran: list[str]) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([hook_tool(_graph_tool(ran))]))
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


def _node_graph(ran: list[str], *, store: bool, ask_after: bool = False) -> Any:
    """A node calling hooked tools itself, with plain arguments (no tool call id): a listing,
    then a delete that asks a person, then (``ask_after``) a question of the node's own."""

    @tool
    def list_dir(path: str) -> str:
        """List a folder."""
        ran.append(f"ls {path}")
        return "a.txt"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    lister, deleter = hook_tool(list_dir), hook_tool(delete_file)

    def node(state: MessagesState) -> dict[str, Any]:
        lister.invoke({"path": "/tmp"})
        done = deleter.invoke({"path": "a.txt"})
        if ask_after:
            interrupt("anything else?")
        return {"messages": [AIMessage(done)]}

    return (
        StateGraph(MessagesState)
        .add_node("node", node)
        .add_edge(START, "node")
        .compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)
    )


def _paths(*answers: str) -> Any:
    """A guard rewriting ``a.txt`` into ``answers[n]`` at its ``n``-th call, ``/tmp`` as it is."""
    paths = list(answers)

    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        path = event.args["path"]
        return event.model_copy(
            update={"args": {"path": paths.pop(0) if path == "a.txt" else path}}
        )

    return rewrite


def _resume(app: Any, config: Any, mode: str, *answers: str) -> list[Any]:
    """The graph run on ``{"messages": []}``, then resumed with each of ``answers``."""

    async def each() -> list[Any]:
        runs = [await app.ainvoke({"messages": []}, config)]
        return runs + [await app.ainvoke(Command(resume=a), config) for a in answers]

    if mode == "ainvoke":
        return asyncio.run(each())
    return [app.invoke({"messages": []}, config)] + [
        app.invoke(Command(resume=a), config) for a in answers
    ]


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_call_without_a_tool_call_id_resumes_only_with_what_its_tool_asked_about(
    pipe: TestPipeline, mode: str, store: bool
) -> None:
    # a node calling a hooked tool with plain arguments: the person was asked about
    # /tmp/a.txt, the guard rewrote the resumed call into /etc/passwd, and the tool deleted it
    pipe.register(hook("where", "before_tool_call", _paths("/tmp/a.txt", "/etc/passwd")))
    ran: list[str] = []
    config: Any = {
        "configurable": {"thread_id": f"t-no-id-{mode}-{store}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, done = _resume(_node_graph(ran, store=store), config, mode, "yes")
    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "/tmp/a.txt"}]
    assert ran == ["ls /tmp", "ls /tmp"]  # the listing reruns with its task, as LangGraph does
    assert "asked a person" in done["messages"][-1].content


def _asking_tool_node(ran: list[str], *, store: bool) -> Any:
    """A ``ToolNode`` whose ``wrap_tool_call`` asks a question of its own after the tool ran,
    given the model's call of ``delete_file`` on ``a.txt``."""

    def ask_after(request: Any, handler: Any) -> Any:
        result = handler(request)
        interrupt("anything else?")
        return result

    tools = ToolNode([hook_tool(_graph_tool(ran))], wrap_tool_call=ask_after)
    call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "c1", "type": "tool_call"}

    def model(state: MessagesState) -> dict[str, Any]:
        return {} if state["messages"] else {"messages": [AIMessage("", tool_calls=[call])]}

    return (
        StateGraph(MessagesState)
        .add_node("model", model)
        .add_node("tools", tools)
        .add_edge(START, "model")
        .add_edge("model", "tools")
        .compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)
    )


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
@pytest.mark.parametrize("where", ["node", "tool_node"])
def test_a_resumed_call_is_checked_again_when_its_task_reruns_for_a_later_question(
    pipe: TestPipeline, store: bool, where: str
) -> None:
    # the delete of /tmp/a.txt, approved, ran; the node (or the ToolNode's wrap_tool_call)
    # then asked a question of its own, and answering it reran the task: the delete's
    # interrupt() took the old "yes", the guard now said /etc/passwd, and the tool deleted
    # /etc/passwd, judged afresh as a new call
    rewrite = _paths("/tmp/a.txt", "/tmp/a.txt", "/etc/passwd")
    pipe.register(hook("where", "before_tool_call", rewrite))
    ran: list[str] = []
    if where == "node":
        app = _node_graph(ran, store=store, ask_after=True)
    else:
        app = _asking_tool_node(ran, store=store)
    config: Any = {
        "configurable": {"thread_id": f"t-later-{where}-{store}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, later, _ = _resume(app, config, "invoke", "yes", "no")
    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "/tmp/a.txt"}]
    assert [i.value for i in later["__interrupt__"]] == ["anything else?"]
    assert "/etc/passwd" not in ran
    assert ran.count("/tmp/a.txt") == 1


def test_a_call_without_a_tool_call_id_judged_alike_resumes_and_runs(pipe: TestPipeline) -> None:
    # the control: the same arguments at each pass run, at each rerun of the task, and the
    # node's own question after the tool refuses nothing
    ran: list[str] = []
    config: Any = {
        "configurable": {"thread_id": "t-no-id-alike"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    app = _node_graph(ran, store=False, ask_after=True)
    asked, later, done = _resume(app, config, "invoke", "yes", "no")
    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "a.txt"}]
    assert [i.value for i in later["__interrupt__"]] == ["anything else?"]
    assert done["messages"][-1].content == "deleted a.txt"
    assert ran == ["ls /tmp", "ls /tmp", "a.txt", "ls /tmp", "a.txt"]


def test_a_call_without_a_tool_call_id_is_known_by_its_tool_whatever_ran_before(
    pipe: TestPipeline,
) -> None:
    # a node lists the folder only when its cache is empty: on resume the listing no longer
    # ran before the delete, so the delete took another place among the task's calls, found
    # no record, and ran the guard's /etc/passwd judged afresh
    pipe.register(hook("where", "before_tool_call", _paths("/tmp/a.txt", "/etc/passwd")))
    ran: list[str] = []
    cache: dict[str, str] = {}

    @tool
    def list_dir(path: str) -> str:
        """List a folder."""
        return "a.txt"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    lister, deleter = hook_tool(list_dir), hook_tool(delete_file)

    def node(state: MessagesState) -> dict[str, Any]:
        if "/tmp" not in cache:
            cache["/tmp"] = lister.invoke({"path": "/tmp"})
        return {"messages": [AIMessage(deleter.invoke({"path": "a.txt"}))]}

    app = (
        StateGraph(MessagesState)
        .add_node("node", node)
        .add_edge(START, "node")
        .compile(checkpointer=InMemorySaver())
    )
    config: Any = {
        "configurable": {"thread_id": "t-no-id-cache"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, done = _resume(app, config, "invoke", "yes")
    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "/tmp/a.txt"}]
    assert ran == []
    assert "asked a person" in done["messages"][-1].content
