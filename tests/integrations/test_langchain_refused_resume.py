"""LangGraph hands each ``interrupt()`` of a task the answers given so far, in turn: a hooked call
refused on resume (a deny, a rewrite nobody was shown) never reaches its tool's ``interrupt()``,
so the person's answer to it must not pass to the task's next question."""

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

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import hook

PAY = "send $1000?"


def _app(done: list[str], *, shape: str, store: bool, asks: int = 1) -> Any:
    """A delete whose tool asks a person ``asks`` times, then a payment question of the
    graph's own: in the node that called the tool (``node``: with the model's call id, or
    ``plain`` arguments), or in a ``ToolNode``'s ``wrap_tool_call`` after the tool ran."""

    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        for n in range(asks):
            if interrupt({"delete": path, "ask": n}) != "yes":
                return "not approved"
        done.append(path)
        return f"deleted {path}"

    deleter = hook_tool(delete_file)
    call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "c1", "type": "tool_call"}

    def pay() -> None:
        if interrupt(PAY) == "yes":
            done.append("PAID")

    def node(state: MessagesState) -> dict[str, Any]:
        out = deleter.invoke(call if shape == "node" else {"path": "a.txt"})
        pay()
        return {"messages": [AIMessage(str(getattr(out, "content", out)))]}

    def ask_after(request: Any, handler: Any) -> Any:
        result = handler(request)
        pay()
        return result

    def model(state: MessagesState) -> dict[str, Any]:
        return {} if state["messages"] else {"messages": [AIMessage("", tool_calls=[call])]}

    graph = StateGraph(MessagesState)
    if shape == "tool_node":
        graph.add_node("model", model).add_edge(START, "model").add_edge("model", "tools")
        graph.add_node("tools", ToolNode([deleter], wrap_tool_call=ask_after))
    else:
        graph.add_node("node", node).add_edge(START, "node")
    return graph.compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)


def _run(app: Any, config: Any, mode: str, answers: list[str], before_last: Any) -> list[Any]:
    """The graph run, then resumed with each answer; ``before_last`` runs before the last."""

    async def each() -> list[Any]:
        runs = [await app.ainvoke({"messages": []}, config)]
        for n, answer in enumerate(answers):
            if n == len(answers) - 1:
                before_last()
            runs.append(await app.ainvoke(Command(resume=answer), config))
        return runs

    if mode == "ainvoke":
        return asyncio.run(each())
    runs = [app.invoke({"messages": []}, config)]
    for n, answer in enumerate(answers):
        if n == len(answers) - 1:
            before_last()
        runs.append(app.invoke(Command(resume=answer), config))
    return runs


def _paths(*answers: str) -> Any:
    paths = list(answers)

    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"path": paths.pop(0)}})

    return rewrite


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
@pytest.mark.parametrize("shape", ["node", "plain", "tool_node"])
@pytest.mark.parametrize("why", ["deny", "rewrite"])
def test_a_call_refused_on_resume_leaves_the_next_question_unanswered(
    pipe: TestPipeline, why: str, shape: str, store: bool
) -> None:
    # the person said yes to the delete; on resume the call was refused (a guard added while
    # they answered, or a rewrite into /etc/passwd), its interrupt() never ran, and the "yes"
    # answered "send $1000?": paid without anyone being asked
    if why == "rewrite":
        pipe.register(hook("where", "before_tool_call", _paths("/tmp/a.txt", "/etc/passwd")))
    done: list[str] = []
    app = _app(done, shape=shape, store=store)
    config: Any = {
        "configurable": {"thread_id": f"t-{why}-{shape}-{store}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }

    def deny_now() -> None:
        if why == "deny":
            pipe.register(hook("no", "before_tool_call", lambda e: Block("no deleting")))

    asked, resumed = _run(app, config, "invoke", ["yes"], deny_now)
    assert [i.value["delete"] for i in asked["__interrupt__"]] in (["a.txt"], ["/tmp/a.txt"])
    assert done == []
    assert [i.value for i in resumed["__interrupt__"]] == [PAY]  # asked, not taken as said
    app.invoke(Command(resume="no"), config)
    assert done == []


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_tool_that_asked_twice_gives_up_both_answers_when_refused(
    pipe: TestPipeline, mode: str
) -> None:
    done: list[str] = []
    app = _app(done, shape="node", store=True, asks=2)
    config: Any = {
        "configurable": {"thread_id": f"t-twice-{mode}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }

    def deny_now() -> None:
        pipe.register(hook("no", "before_tool_call", lambda e: Block("no deleting")))

    first, second, resumed = _run(app, config, mode, ["yes", "yes"], deny_now)
    assert [i.value["ask"] for i in first["__interrupt__"]] == [0]
    assert [i.value["ask"] for i in second["__interrupt__"]] == [1]
    assert [i.value for i in resumed["__interrupt__"]] == [PAY]
    assert done == []


def test_a_call_allowed_on_resume_runs_and_the_next_question_is_asked(
    pipe: TestPipeline,
) -> None:
    # the control: nothing refused, the delete runs on its "yes" and the payment is asked
    done: list[str] = []
    app = _app(done, shape="node", store=False)
    config: Any = {
        "configurable": {"thread_id": "t-allowed"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    _, resumed = _run(app, config, "invoke", ["yes"], lambda: None)
    assert [i.value for i in resumed["__interrupt__"]] == [PAY]
    app.invoke(Command(resume="yes"), config)
    assert done == ["a.txt", "a.txt", "PAID"]


def test_a_call_refused_as_unrecorded_leaves_the_next_question_unanswered(
    pipe: TestPipeline,
) -> None:
    # resumed by a new handler object with no store, the call is refused (its pause cannot be
    # checked); its "yes" answered "send $1000?"
    done: list[str] = []
    app = _app(done, shape="node", store=False)
    thread = {"thread_id": "t-unrecorded"}
    asked = app.invoke(
        {"messages": []},
        {"configurable": thread, "callbacks": [OtelHooksCallbackHandler(pipe.tracer)]},
    )
    assert [i.value["delete"] for i in asked["__interrupt__"]] == ["a.txt"]
    resumed = app.invoke(
        Command(resume="yes"),
        {"configurable": thread, "callbacks": [OtelHooksCallbackHandler(pipe.tracer)]},
    )
    assert done == []
    assert [i.value for i in resumed["__interrupt__"]] == [PAY]


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
def test_the_second_of_two_asking_calls_refused_leaves_the_next_question_unanswered(
    pipe: TestPipeline, store: bool
) -> None:
    # a node deleting two files, each asked about in turn, then asking to pay: the second
    # delete refused on its resume gave its "yes" to the payment (two calls of the task had
    # paused, if in separate runs, so neither was taken to own its answers)
    done: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        done.append(path)
        return f"deleted {path}"

    deleter = hook_tool(delete_file)

    def node(state: MessagesState) -> dict[str, Any]:
        first = deleter.invoke({"path": "a.txt"})
        second = deleter.invoke({"path": "b.txt"})
        if interrupt(PAY) == "yes":
            done.append("PAID")
        return {"messages": [AIMessage(f"{first}; {second}")]}

    app = (
        StateGraph(MessagesState)
        .add_node("node", node)
        .add_edge(START, "node")
        .compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)
    )
    config: Any = {
        "configurable": {"thread_id": f"t-two-asks-{store}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }

    def deny_b() -> None:
        no_b = lambda e: Block("not b") if e.args["path"] == "b.txt" else None  # noqa: E731
        pipe.register(hook("no-b", "before_tool_call", no_b))

    first, second, resumed = _run(app, config, "invoke", ["yes", "yes"], deny_b)
    assert [i.value["delete"] for i in first["__interrupt__"]] == ["a.txt"]
    assert [i.value["delete"] for i in second["__interrupt__"]] == ["b.txt"]
    assert "PAID" not in done
    assert [i.value for i in resumed["__interrupt__"]] == [PAY]
