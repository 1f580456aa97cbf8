"""LangGraph: a hooked call paused by its tool's ``interrupt()`` and resumed by ANOTHER
``OtelHooksCallbackHandler`` object (a web server resuming from the checkpointer, a new handler
per request), with a real ``ToolNode``, a real checkpointer and a real store: the resumed call runs
only with the arguments its tool had when it asked, checked through the graph's store; with no
store to hold the pause, the call a resume reruns is refused, never judged afresh."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, Send, interrupt
from structlog.testing import capture_logs

from otelhooks import ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline, pipeline
from tests.conftest import Recorder, hook
from tests.integrations import _langgraph_resume_proc as _procs

UNVERIFIED = "holds no record of that task's pause"
CHANGED = "other arguments than its tool had when it asked"


def _delete_tool(ran: list[str], asks: int = 1) -> Any:
    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes (``asks`` times)."""
        for n in range(asks):
            if interrupt({"delete": path, "question": n}) != "yes":
                return "not approved"
        ran.append(path)
        return f"deleted {path}"

    return hook_tool(delete_file)


def _graph(ran: list[str], *, store: bool, asks: int = 1) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([_delete_tool(ran, asks)]))
        .add_edge(START, "tools")
        .compile(checkpointer=InMemorySaver(), store=InMemoryStore() if store else None)
    )


def _call(path: str, call_id: str = "c1") -> dict[str, Any]:
    return {"name": "delete_file", "args": {"path": path}, "id": call_id, "type": "tool_call"}


def _given(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [AIMessage("", tool_calls=list(calls), id="ai-1")]}


def _config(pipe: TestPipeline, thread: str) -> Any:
    """A run's config with a handler object of its own, as a server building one per request."""
    return {
        "configurable": {"thread_id": thread},
        "callbacks": [OtelHooksCallbackHandler(pipe.tracer)],
    }


def _rewrites(*paths: str) -> Any:
    """A guard rewriting the path into ``paths[n]`` at its ``n``-th call (a policy answering
    otherwise once the person has been asked: a clock, a service, a config changed meanwhile)."""
    answers = list(paths)

    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"path": answers.pop(0)}})

    return rewrite


def _resume(app: Any, config: Any, resume: Any, how: str) -> Any:
    if how == "ainvoke":
        return asyncio.run(app.ainvoke(resume, config))
    if how == "stream":
        for _ in app.stream(resume, config):
            pass
        return app.get_state(config).values
    return app.invoke(resume, config)


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "by-interrupt-id"])
def test_a_resume_by_another_handler_runs_only_what_its_tool_asked_about(
    pipe: TestPipeline, recorder: Recorder, how: str
) -> None:
    # the person was asked about /tmp/a.txt and said yes; the resume, handled by a new handler
    # object, knew nothing of the pause: the guard, run again, rewrote the path into
    # /etc/passwd and the tool deleted /etc/passwd
    pipe.register(
        hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/etc/passwd")),
        hook("denied", "on_tool_call_denied", recorder),
    )
    ran: list[str] = []
    app = _graph(ran, store=True)
    thread = f"user.{how}"  # a store's namespace label may hold no period
    asked = app.invoke(_given(_call("a.txt")), _config(pipe, thread))
    [question] = asked["__interrupt__"]
    assert question.value == {"delete": "/tmp/a.txt", "question": 0}
    resume = Command(resume={question.id: "yes"} if how == "by-interrupt-id" else "yes")
    done = _resume(app, _config(pipe, thread), resume, how)
    pipe.flush()

    assert ran == []
    answer = done["messages"][-1]
    assert (answer.tool_call_id, answer.status) == ("c1", "error")
    assert CHANGED in answer.content
    told = [(e.args, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [({"path": "/etc/passwd"}, "otelhooks")]


def test_a_resume_by_another_handler_judged_alike_runs(
    pipe: TestPipeline,
) -> None:
    # control: the same rewrite at both passes runs the call, through two handler objects
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/tmp/a.txt")))
    ran: list[str] = []
    app = _graph(ran, store=True)
    app.invoke(_given(_call("a.txt")), _config(pipe, "t-alike"))
    done = app.invoke(Command(resume="yes"), _config(pipe, "t-alike"))
    assert ran == ["/tmp/a.txt"]
    assert done["messages"][-1].content == "deleted /tmp/a.txt"


def test_a_resume_whose_pause_nothing_recorded_is_refused_loudly(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # no store and a new handler object: nothing can say what the person was shown, and the
    # call ran whatever the hooks said this time (here even the very rewrite they gave before)
    pipe.register(
        hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/etc/passwd")),
        hook("denied", "on_tool_call_denied", recorder),
    )
    ran: list[str] = []
    app = _graph(ran, store=False)
    app.invoke(_given(_call("a.txt")), _config(pipe, "t-nostore"))
    with capture_logs() as logs:
        done = app.invoke(Command(resume="yes"), _config(pipe, "t-nostore"))
    pipe.flush()

    assert ran == []
    answer = done["messages"][-1]
    assert (answer.tool_call_id, answer.status) == ("c1", "error")
    assert UNVERIFIED in answer.content
    assert [e.decidedBy for e in recorder.of("on_tool_call_denied")] == ["otelhooks"]  # type: ignore[attr-defined]
    warned = [e for e in logs if "its pause was not recorded" in e["event"]]
    assert [(e["log_level"], e["tool_call_id"]) for e in warned] == [("warning", "c1")]
    _, resumed = pipe.spans("execute_tool delete_file")
    assert (resumed.attributes or {})["otelhooks.tool.outcome"] == "denied"


def test_tools_a_resumed_graph_runs_after_the_paused_node_are_judged_afresh(
    pipe: TestPipeline,
) -> None:
    # control: a person approving in a node of its own (interrupt() before the ToolNode), the
    # graph resumed by a new handler without a store: the tools run later, as new calls
    ran: list[str] = []
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt")))

    def review(state: MessagesState) -> dict[str, Any]:
        if interrupt("run these calls?") != "yes":
            return {"messages": []}
        return {}

    app = (
        StateGraph(MessagesState)
        .add_node("review", review)
        .add_node("tools", ToolNode([hook_tool(_plain_delete(ran))]))
        .add_edge(START, "review")
        .add_edge("review", "tools")
        .compile(checkpointer=InMemorySaver())
    )
    app.invoke(_given(_call("a.txt")), _config(pipe, "t-review"))
    done = app.invoke(Command(resume="yes"), _config(pipe, "t-review"))
    assert ran == ["/tmp/a.txt"]
    assert done["messages"][-1].content == "deleted /tmp/a.txt"


def _plain_delete(ran: list[str]) -> Any:
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return delete_file


@pytest.mark.parametrize("tasks", ["a-task-each", "one-task"])
def test_parallel_calls_each_paused_are_each_checked_when_resumed_elsewhere(
    pipe: TestPipeline, tasks: str
) -> None:
    # two calls, sent to tasks of their own (Send) or run by one ToolNode task, each asking a
    # person; resumed by interrupt id through a new handler, the hooks rewriting only the
    # second otherwise: the second ran /etc/passwd
    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        path = str(event.args["path"])
        seen[path] = seen.get(path, 0) + 1
        changed = path == "b.txt" and seen[path] > 1
        return event.model_copy(update={"args": {"path": "/etc/passwd" if changed else path}})

    seen: dict[str, int] = {}
    pipe.register(hook("where", "before_tool_call", rewrite))
    ran: list[str] = []

    def fan_out(state: MessagesState) -> list[Send]:
        message = state["messages"][-1]
        return [
            Send("tools", {"messages": [AIMessage("", tool_calls=[c], id=f"ai-{c['id']}")]})
            for c in getattr(message, "tool_calls", [])
        ]

    if tasks == "one-task":
        app = _graph(ran, store=True)
    else:
        app = (
            StateGraph(MessagesState)
            .add_node("tools", ToolNode([_delete_tool(ran)]))
            .add_conditional_edges(START, fan_out, ["tools"])
            .add_edge("tools", END)
            .compile(checkpointer=InMemorySaver(), store=InMemoryStore())
        )
    thread = f"t-par-{tasks}"
    asked = app.invoke(_given(_call("a.txt", "c1"), _call("b.txt", "c2")), _config(pipe, thread))
    ids = [i.id for i in asked["__interrupt__"]]
    # one ToolNode task shows the first of its calls' questions (LangGraph's choice)
    assert len(ids) == (2 if tasks == "a-task-each" else 1)
    done = app.invoke(Command(resume=dict.fromkeys(ids, "yes")), _config(pipe, thread))

    answers = {m.tool_call_id: m for m in done["messages"] if m.type == "tool"}
    if tasks == "one-task":
        # the one question shown was either call's, and either may reach interrupt() first:
        # no answer can be matched to its call, so neither runs
        assert ran == []
        assert "did not name this call" in answers["c1"].content
        assert CHANGED in answers["c2"].content  # refused first for its rewrite
        return
    assert ran == ["a.txt"]
    assert answers["c1"].content == "deleted a.txt"
    assert (answers["c2"].status, CHANGED in answers["c2"].content) == ("error", True)


def test_a_tool_asking_twice_is_checked_at_each_resume(pipe: TestPipeline) -> None:
    # a tool asking two questions, each answer resumed by a new handler: the hooks agreed at
    # the first resume and rewrote at the second, after the person had answered both
    pipe.register(
        hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/tmp/a.txt", "/etc/passwd"))
    )
    ran: list[str] = []
    app = _graph(ran, store=True, asks=2)
    first = app.invoke(_given(_call("a.txt")), _config(pipe, "t-twice"))
    second = app.invoke(Command(resume="yes"), _config(pipe, "t-twice"))
    assert [i.value["question"] for i in (*first["__interrupt__"], *second["__interrupt__"])] == [
        0,
        1,
    ]
    done = app.invoke(Command(resume="yes"), _config(pipe, "t-twice"))
    assert ran == []
    assert CHANGED in done["messages"][-1].content


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
def test_a_resume_after_the_checkpoint_was_edited_is_refused(
    pipe: TestPipeline, store: bool
) -> None:
    # the call's arguments edited in the checkpoint (update_state) while a person was asked
    # about a.txt: LangGraph reruns the task as a new one, whose interrupt() takes the "yes"
    # given for a.txt, and the tool deleted what nobody was asked about
    ran: list[str] = []
    app = _graph(ran, store=store)
    config = _config(pipe, f"t-edit-{store}")
    asked = app.invoke(_given(_call("a.txt")), config)
    assert [i.value["delete"] for i in asked["__interrupt__"]] == ["a.txt"]
    app.update_state(config, _given(_call("/etc/passwd")), as_node="__start__")
    # with a store, a new handler resumes; without one, the handler that saw the pause
    resume_config = _config(pipe, f"t-edit-{store}") if store else config
    done = app.invoke(Command(resume="yes"), resume_config)
    assert ran == []
    assert UNVERIFIED in done["messages"][-1].content


def _in_process(*argv: str, hash_seed: str = "2") -> Any:
    """``_langgraph_resume_proc`` run as a process of its own: what it printed last."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-m", "tests.integrations._langgraph_resume_proc", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("store", [True, False], ids=["store", "no-store"])
def test_a_resume_in_another_process_runs_only_what_its_tool_asked_about(
    tmp_path: Path, store: bool
) -> None:
    # the graph paused in this process (the person asked about /tmp/a.txt), its checkpoint
    # carried to another process whose guard now rewrites into /etc/passwd: that process, with
    # a handler of its own, deleted /etc/passwd
    state = tmp_path / "thread.pickle"
    asked = _procs.pause(state, with_store=store)
    assert [i.value for i in asked["__interrupt__"]] == [{"delete": "/tmp/a.txt"}]
    result = _in_process("resume", state, "store" if store else "nostore", "/etc/passwd")
    assert result["ran"] == []
    assert (CHANGED if store else UNVERIFIED) in result["answer"]


class _FailingStore(InMemoryStore):
    """A real in-memory store that fails while ``down`` (a database gone away)."""

    down = False

    def batch(self, ops: Any) -> Any:
        if self.down:
            raise ConnectionError("the store's database is gone")
        return super().batch(ops)


@pytest.mark.parametrize("down_at", ["pause", "resume"])
def test_a_store_failing_at_pause_or_resume_refuses_the_resumed_call(
    pipe: TestPipeline, down_at: str
) -> None:
    # the record of the pause could not be written, or not read: the call must not run what
    # the hooks say this time
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/etc/passwd")))
    ran: list[str] = []
    store = _FailingStore()
    app = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([_delete_tool(ran)]))
        .add_edge(START, "tools")
        .compile(checkpointer=InMemorySaver(), store=store)
    )
    store.down = down_at == "pause"
    with capture_logs() as logs:
        app.invoke(_given(_call("a.txt")), _config(pipe, f"t-down-{down_at}"))
        store.down = down_at == "resume"
        done = app.invoke(Command(resume="yes"), _config(pipe, f"t-down-{down_at}"))
    assert ran == []
    expected = "the graph's store failed" if down_at == "resume" else UNVERIFIED
    assert expected in done["messages"][-1].content
    failed = [(e["log_level"], e["event"]) for e in logs if "store failed" in e["event"]]
    said = "not recorded" if down_at == "pause" else "as a hooked call started"
    assert [(level, said in event) for level, event in failed] == [("error", True)]


def test_a_call_paused_in_a_subgraph_and_resumed_by_another_handler_is_refused(
    pipe: TestPipeline,
) -> None:
    # the ToolNode inside a subgraph (a node of the graph): the resume reruns the subgraph's
    # task, and in it the tool's, which a new handler without a store judged afresh
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/etc/passwd")))
    ran: list[str] = []
    inner = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([_delete_tool(ran)]))
        .add_edge(START, "tools")
        .compile()
    )
    app = (
        StateGraph(MessagesState)
        .add_node("before", lambda state: {})
        .add_node("inner", inner)
        .add_edge(START, "before")
        .add_edge("before", "inner")
        .compile(checkpointer=InMemorySaver())
    )
    app.invoke(_given(_call("a.txt")), _config(pipe, "t-sub"))
    done = app.invoke(Command(resume="yes"), _config(pipe, "t-sub"))
    assert ran == []
    assert UNVERIFIED in done["messages"][-1].content


def test_a_resume_through_two_handlers_each_with_its_hooks_runs_what_they_decided(
    pipe: TestPipeline,
) -> None:
    # control: two otelhooks handlers in the run (each its own hooks, one rewriting), both
    # recording the pause in the one store; resumed by new handlers deciding as before, the
    # call runs with the rewrite, as it had when it asked
    pipe.register(hook("where", "before_tool_call", _rewrites("/tmp/a.txt", "/tmp/a.txt")))
    ran: list[str] = []
    app = _graph(ran, store=True)
    with pipeline() as other:

        def config() -> Any:
            handlers = [
                OtelHooksCallbackHandler(pipe.tracer),
                OtelHooksCallbackHandler(other.tracer),
            ]
            return {"configurable": {"thread_id": "t-two"}, "callbacks": handlers}

        asked = app.invoke(_given(_call("a.txt")), config())
        done = app.invoke(Command(resume="yes"), config())
    assert [i.value["delete"] for i in asked["__interrupt__"]] == ["/tmp/a.txt"]
    assert ran == ["/tmp/a.txt"]
    assert done["messages"][-1].content == "deleted /tmp/a.txt"


@pytest.mark.parametrize("edit", ["update_state", "command-update"])
def test_an_edited_call_asked_again_then_resumed_runs(pipe: TestPipeline, edit: str) -> None:
    # control: the edited call run on without a resume (invoke(None) after update_state, or
    # Command(update=...)) asks the person again, about the edited call, and that answer
    # resumes it
    ran: list[str] = []
    app = _graph(ran, store=True)
    thread = f"t-asked-again-{edit}"
    app.invoke(_given(_call("a.txt")), _config(pipe, thread))
    if edit == "update_state":
        app.update_state(_config(pipe, thread), _given(_call("b.txt")), as_node="__start__")
        again = app.invoke(None, _config(pipe, thread))
    else:
        again = app.invoke(Command(update=_given(_call("b.txt"))), _config(pipe, thread))
    assert [i.value["delete"] for i in again["__interrupt__"]] == ["b.txt"]
    done = app.invoke(Command(resume="yes"), _config(pipe, thread))
    assert (ran, done["messages"][-1].content) == (["b.txt"], "deleted b.txt")


@pytest.mark.parametrize("store", [True, False], ids=["store", "same-handler"])
def test_a_resume_that_edits_the_paused_call_is_refused(pipe: TestPipeline, store: bool) -> None:
    # Command(resume="yes", update=...) changing the paused call: LangGraph reruns the same
    # task with the edited call, whose interrupt() takes the "yes" given for a.txt, and the
    # hooks judged the edit afresh: the tool deleted what nobody was asked about
    ran: list[str] = []
    app = _graph(ran, store=store)
    config = _config(pipe, f"t-update-{store}")
    app.invoke(_given(_call("a.txt")), config)
    resume_config = _config(pipe, f"t-update-{store}") if store else config
    edit = Command(resume="yes", update=_given(_call("/etc/passwd")))
    done = app.invoke(edit, resume_config)
    assert ran == []
    assert "changed since its tool asked" in done["messages"][-1].content


def test_a_resume_in_another_process_judged_alike_runs(tmp_path: Path) -> None:
    # control: paused and resumed in two processes hashing strings with other seeds, the
    # guard answering alike: the call runs (the tool's set default, in another order in each
    # process, must not look like other arguments)
    state = tmp_path / "thread.pickle"
    asked = _in_process("pause", str(state), "store", hash_seed="1")
    assert [a["delete"] for a in asked] == ["/tmp/a.txt"]
    result = _in_process("resume", str(state), "store", "/tmp/a.txt", hash_seed="2")
    assert (result["ran"], result["answer"]) == (["/tmp/a.txt"], "deleted /tmp/a.txt")


def test_a_pause_seen_only_from_the_tool_s_callbacks_says_a_resume_goes_unnoticed(
    pipe: TestPipeline,
) -> None:
    # the handler given to the tool only (hook_tool keeps its callbacks) sees no graph run,
    # so cannot tell a resume from a new call: it said nothing, and a new handler resuming
    # without a store judged the call afresh
    ran: list[str] = []
    handler = OtelHooksCallbackHandler(pipe.tracer)

    @tool
    def delete_file(path: str) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    wrapped = hook_tool(delete_file.model_copy(update={"callbacks": [handler]}))
    app = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([wrapped]))
        .add_edge(START, "tools")
        .compile(checkpointer=InMemorySaver())
    )
    with capture_logs() as logs:
        for call_id in ("c1", "c2"):
            config: Any = {"configurable": {"thread_id": f"t-tool-cb-{call_id}"}}
            app.invoke(_given(_call("a.txt", call_id)), config)
    said = [e for e in logs if "does not see the graph's run" in e["event"]]
    assert [(e["log_level"], e["tool_call_id"]) for e in said] == [("warning", "c1")]  # once
