"""LangGraph: a ``ToolNode`` running a scripted chat model's parallel calls as ONE task, each
call's tool asking a person (``interrupt()``). LangGraph shows one question and hands the task's
answers to whichever call reaches ``interrupt()`` first: an answer given for one call must never
approve another, whatever the guards decide or however long they take on resume."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import hook

TOGETHER = "the answer given did not name this call"
WHAT = ["read a.txt", "delete prod"]


class _Scripted(GenericFakeChatModel):
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _Scripted:
        return self


def _app(got: dict[str, Any], *, store: bool, together: bool = True) -> Any:
    """A scripted model asking for both acts at once, then the ``ToolNode`` running them
    (``together``: the first time, each call waits for the other before it asks, so that both
    ask in that run whatever the thread pool does)."""
    meet = threading.Barrier(2 if together else 1)

    @tool
    def act(what: str) -> str:
        """Act once a person says yes."""
        if "first" not in got:
            with contextlib.suppress(threading.BrokenBarrierError):
                meet.wait(timeout=5)
        answer = interrupt({"act": what})
        got[what] = answer
        return f"{what}: {answer}"

    calls = [
        {"name": "act", "args": {"what": w}, "id": f"c{n}", "type": "tool_call"}
        for n, w in enumerate(WHAT)
    ]
    model = _Scripted(messages=iter([AIMessage("", tool_calls=calls)]))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return (
        StateGraph(MessagesState)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([hook_tool(act)]))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .add_edge("tools", END)
        .compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)
    )


def _ask_and_answer(app: Any, config: Any, mode: str, between: Any) -> tuple[Any, Any]:
    """The graph run until it asks, then resumed by interrupt id: "yes" to the read, "no" to
    the delete (``between`` runs in between)."""

    def answers(out: Any) -> dict[str, str]:
        return {i.id: "yes" if i.value["act"] == WHAT[0] else "no" for i in out["__interrupt__"]}

    if mode == "ainvoke":

        async def both() -> tuple[Any, Any]:
            asked = await app.ainvoke({"messages": [("user", "go")]}, config)
            between()
            return asked, await app.ainvoke(Command(resume=answers(asked)), config)

        return asyncio.run(both())
    asked = app.invoke({"messages": [("user", "go")]}, config)
    between()
    return asked, app.invoke(Command(resume=answers(asked)), config)


def _answered_until_done(app: Any, config: Any, out: Any) -> Any:
    """Each question asked anew answered as the person would ("yes" to the read only)."""
    for _ in range(3):
        if "__interrupt__" not in out:
            break
        answers = {i.id: "yes" if i.value["act"] == WHAT[0] else "no" for i in out["__interrupt__"]}
        out = app.invoke(Command(resume=answers), config)
    return out


def _refused(out: Any) -> dict[str, Any]:
    return {m.tool_call_id: m for m in out["messages"] if m.type == "tool"}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
def test_a_call_refused_on_resume_does_not_hand_its_yes_to_another(
    pipe: TestPipeline, store: bool, mode: str
) -> None:
    # the person said yes to the one question shown; a guard then refused that call (it
    # changed its mind meanwhile), which no longer reached interrupt(), so the other call
    # took the "yes" and ran: a destructive call nobody approved
    got: dict[str, Any] = {}
    app = _app(got, store=store)
    config = {
        "configurable": {"thread_id": f"t-refused-{store}-{mode}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    shown: list[str] = []

    def yes(out: Any) -> dict[str, str]:
        shown.extend(i.value["act"] for i in out["__interrupt__"])
        return {i.id: "yes" for i in out["__interrupt__"]}

    def off(event: ToolCallEvent) -> Block | None:
        return Block("this is off now") if event.args["what"] in shown else None

    async def both() -> Any:
        asked = await app.ainvoke({"messages": [("user", "go")]}, config)
        answers = yes(asked)
        got["first"] = False
        pipe.register(hook("off", "before_tool_call", off))
        return await app.ainvoke(Command(resume=answers), config)

    if mode == "ainvoke":
        done = asyncio.run(both())
    else:
        answers = yes(app.invoke({"messages": [("user", "go")]}, config))
        got["first"] = False
        pipe.register(hook("off", "before_tool_call", off))
        done = app.invoke(Command(resume=answers), config)

    assert len(shown) == 1
    assert got == {"first": False}  # neither act took the yes given to the one shown
    assert "__interrupt__" not in done  # its answer was taken, no stand-in question asked
    answers = {WHAT[int(c[1])]: m for c, m in _refused(done).items()}
    assert "this is off now" in answers[shown[0]].content
    (other,) = set(WHAT) - set(shown)
    assert answers[other].status == "error"
    assert TOGETHER in answers[other].content


@pytest.mark.parametrize("slow_on", ["first-run", "resume"])
def test_a_guard_slower_on_resume_cannot_swap_the_answers(pipe: TestPipeline, slow_on: str) -> None:
    # a guard whose latency differs run to run (a webhook) holds one call back: the other
    # reached interrupt() first and took the answer given to the question shown
    got: dict[str, Any] = {}
    resumed = {"yes": False}

    def slow(event: ToolCallEvent) -> None:
        held = WHAT[0] if (slow_on == "resume") == resumed["yes"] else WHAT[1]
        if event.args["what"] == held:
            time.sleep(0.3)

    def now_resumed() -> None:
        resumed["yes"] = True
        got["first"] = False

    pipe.register(hook("slow", "before_tool_call", slow))
    app = _app(got, store=True)
    config = {
        "configurable": {"thread_id": f"t-slow-{slow_on}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked, done = _ask_and_answer(app, config, "invoke", now_resumed)

    assert len(asked["__interrupt__"]) == 1
    assert got == {"first": False}
    assert "__interrupt__" not in done
    assert all(TOGETHER in m.content for m in _refused(done).values())


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
def test_a_call_asking_after_another_cannot_take_the_other_s_answer(
    pipe: TestPipeline, store: bool
) -> None:
    # the delete held back by a guard the first time (only the read asked), let through on
    # resume while the read, now refused, is slow to give its "yes" up: the delete reached
    # interrupt() first and took the read's "yes"
    got: dict[str, Any] = {"first": False}
    app = _app(got, store=store, together=False)
    config = {
        "configurable": {"thread_id": f"t-turn-{store}"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    resumed = {"yes": False}

    def guard(event: ToolCallEvent) -> Block | None:
        if not resumed["yes"]:
            return Block("not yet") if event.args["what"] == WHAT[1] else None
        if event.args["what"] == WHAT[0]:
            time.sleep(0.3)
            return Block("reads are off now")
        return None

    pipe.register(hook("turns", "before_tool_call", guard))
    asked, out = _ask_and_answer(app, config, "invoke", lambda: resumed.update(yes=True))
    done = _answered_until_done(app, config, out)

    assert [i.value for i in asked["__interrupt__"]] == [{"act": WHAT[0]}]
    assert WHAT[0] not in got
    assert got[WHAT[1]] == "no"  # it waited for the read to give its "yes" up, then asked
    assert "__interrupt__" not in done


def test_a_call_that_never_asked_runs_once_the_asking_call_took_its_answer(
    pipe: TestPipeline,
) -> None:
    # the control: a read beside a delete that asked waits for the delete to take its "yes",
    # then runs; neither is refused
    ran: list[str] = []

    @tool
    def read(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return "text"

    @tool
    def delete(path: str) -> str:
        """Delete a file once a person says yes."""
        answer = interrupt({"delete": path})
        ran.append(f"delete {path}: {answer}")
        return f"deleted {path}: {answer}"

    app = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([hook_tool(read), hook_tool(delete)]))
        .add_edge(START, "tools")
        .add_edge("tools", END)
        .compile(checkpointer=InMemorySaver())
    )
    calls = [
        {"name": "read", "args": {"path": "a"}, "id": "c0", "type": "tool_call"},
        {"name": "delete", "args": {"path": "b"}, "id": "c1", "type": "tool_call"},
    ]
    config: Any = {
        "configurable": {"thread_id": "t-mixed"},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }
    asked = app.invoke({"messages": [AIMessage("", tool_calls=calls)]}, config)
    done = app.invoke(Command(resume="yes"), config)

    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "b"}]
    assert ran[-2:] == ["delete b: yes", "read a"]
    assert [m.content for m in _refused(done).values()] == ["text", "deleted b: yes"]
