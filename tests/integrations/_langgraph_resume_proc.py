"""A LangGraph graph paused in one process and resumed in another, as a web server resumes a
thread from its checkpointer: :func:`pause` runs the graph until its tool asks a person and saves
the checkpoints (and the store's items) with the public checkpointer and store APIs; run as
``python -m tests.integrations._langgraph_resume_proc resume STATE store|nostore PATH``, this
module loads them into a new checkpointer (and store), resumes with a new otelhooks pipeline and
handler whose guard now rewrites the path into ``PATH``, and prints what ran as JSON (``pause
STATE store|nostore`` pauses, in a process of its own). The tool's ``colors`` default is a
set, whose order differs between processes hashing strings with other seeds."""

from __future__ import annotations

import json
import pickle
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from otelhooks import ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import pipeline

THREAD = {"configurable": {"thread_id": "t-elsewhere"}}
COLORS = frozenset({"red", "green", "blue", "cyan"})


def _app(ran: list[str], saver: InMemorySaver, store: InMemoryStore | None) -> Any:
    @tool
    def delete_file(path: str, colors: frozenset[str] = COLORS) -> str:
        """Delete a file, once a person says yes."""
        if interrupt({"delete": path}) != "yes":
            return "not approved"
        ran.append(path)
        return f"deleted {path}"

    return (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([hook_tool(delete_file)]))
        .add_edge(START, "tools")
        .compile(checkpointer=saver, store=store)
    )


def _rewrite_into(path: str) -> dict[str, Any]:
    def rewrite(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"path": path}})

    return {"id": "where", "type": "before_tool_call", "handler": rewrite}


def _config(handler: OtelHooksCallbackHandler) -> Any:
    return {**THREAD, "callbacks": [handler]}


def pause(state_file: Path, *, with_store: bool) -> Any:
    """Run the graph until its tool asks about ``/tmp/a.txt``; save what a new process needs."""
    saver, store = InMemorySaver(), InMemoryStore() if with_store else None
    with pipeline() as pipe:
        pipe.register(_rewrite_into("/tmp/a.txt"))
        call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "c1", "type": "tool_call"}
        given = {"messages": [AIMessage("", tool_calls=[call])]}
        asked = _app([], saver, store).invoke(given, _config(OtelHooksCallbackHandler(pipe.tracer)))
    items = []
    if store is not None:
        for namespace in store.list_namespaces():
            items.extend(store.search(namespace, limit=1000))
    saved = {
        "checkpoints": list(reversed(list(saver.list(THREAD)))),  # oldest first
        "items": [(i.namespace, i.key, i.value) for i in items],
    }
    state_file.write_bytes(pickle.dumps(saved))
    return asked


def _load(state_file: Path, with_store: bool) -> tuple[InMemorySaver, InMemoryStore | None]:
    saved = pickle.loads(state_file.read_bytes())
    saver = InMemorySaver()
    for saved_tuple in saved["checkpoints"]:
        parent = saved_tuple.parent_config or {
            "configurable": {**THREAD["configurable"], "checkpoint_ns": ""}
        }
        checkpoint = saved_tuple.checkpoint
        saver.put(parent, checkpoint, saved_tuple.metadata, checkpoint["channel_versions"])
        by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        for task_id, channel, value in saved_tuple.pending_writes or []:
            by_task[task_id].append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(saved_tuple.config, writes, task_id)
    store = InMemoryStore() if with_store else None
    for namespace, key, value in saved["items"] if store is not None else []:
        store.put(namespace, key, value)
    return saver, store


def resume(state_file: Path, *, with_store: bool, path: str) -> dict[str, Any]:
    """Resume the saved thread with ``yes`` in this process, the guard now answering ``path``:
    what ran and the tool's answer."""
    saver, store = _load(state_file, with_store)
    ran: list[str] = []
    with pipeline() as pipe:
        pipe.register(_rewrite_into(path))
        handler = OtelHooksCallbackHandler(pipe.tracer)
        done = _app(ran, saver, store).invoke(Command(resume="yes"), _config(handler))
    return {"ran": ran, "answer": done["messages"][-1].content}


if __name__ == "__main__":
    mode, state, store_flag = sys.argv[1:4]
    if mode == "pause":
        asked = pause(Path(state), with_store=store_flag == "store")
        print(json.dumps([i.value for i in asked["__interrupt__"]]))
    else:
        print(json.dumps(resume(Path(state), with_store=store_flag == "store", path=sys.argv[4])))
