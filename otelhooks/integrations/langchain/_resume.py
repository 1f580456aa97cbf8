"""A hooked LangGraph call resumed after its tool asked a person (``interrupt()``) runs only with
the arguments its tool had when it asked.

LangGraph runs the tool again from its start on resume, and the ``before_tool_call`` hooks judge
it again: a rewrite answering otherwise the second time would run what nobody was shown. Each
paused call is remembered (by thread, LangGraph task namespace and tool call id, or the call's
place in its task when a node called the tool without one: a new input runs in a new task),
until its thread goes, as fingerprints of the arguments it came with and those its tool had, and a
resumed call the hooks gave other arguments is refused.

Where the memory lives: the graph's store (given when the graph is compiled; LangGraph's public
cross-process persistence, read with ``get_store()``) when it has one, so a resume handled by
another handler object or process is checked too; else the handler object. LangGraph gives a
task no public way to read what was saved with its interrupt, so nothing of otelhooks can ride
in the checkpoint itself. A call a resume reruns whose pause no memory holds (a new handler, a
checkpoint edited so the task is new) cannot be checked: it is refused, never judged afresh.

LangGraph hands a task's answers to its ``interrupt()``s in the order they are reached, and a
``ToolNode`` runs a model's calls together in one task: no answer can be matched to its call
where two calls asked in the same run (all are refused), and a call waits for those that asked
before it to take their answers in this run (it is refused if they do not end in time), so
that an answer given for one call never reaches another.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

import structlog
from langgraph.config import get_store
from langgraph.store.base import BaseStore
from langgraph.types import Command
from pydantic import BaseModel

if TYPE_CHECKING:
    from otelhooks.integrations.langchain._tool_run import ToolRun

__all__ = [
    "RESUMED_AHEAD",
    "RESUMED_CHANGED",
    "RESUMED_EDITED",
    "RESUMED_TOGETHER",
    "RESUME_UNCHECKED",
    "RESUME_UNVERIFIED",
    "PausedCalls",
    "ResumeWave",
    "is_resume",
]

_log = structlog.get_logger("otelhooks")

# calls paused and never resumed are forgotten oldest first (the handler's own memory)
_MAX_PAUSED = 1024
_NAMESPACE = ("otelhooks", "langgraph_paused")
# how long a resumed call waits for the calls of its task that asked before it to take their
# answers (their tools end) before it is refused rather than take one of them
_TURN_WAIT_SECONDS = 30.0
RESUMED_CHANGED = (
    "the hooks gave this resumed call other arguments than its tool had when it asked a person "
    "(interrupt()): nobody was shown them"
)
RESUMED_EDITED = (
    "this resumed call's arguments changed since its tool asked a person (interrupt()): the "
    "answer given was for other arguments; to ask about these, run the graph on without "
    "Command(resume=...)"
)
RESUMED_TOGETHER = (
    "several calls of this LangGraph task (a ToolNode running them together) asked a person in "
    "the same run: LangGraph hands the task's answers to whichever call reaches interrupt() "
    "first, so the answer given did not name this call, and it does not run; send each call to "
    "a task of its own (Send, as create_agent does) so that each takes its own answer"
)
RESUMED_AHEAD = (
    "another call of this LangGraph task asked a person before this one and had not taken its "
    "answer after a wait (its tool still running, or it did not run again): LangGraph hands "
    "the task's answers to whichever call reaches interrupt() first, so the answer given did "
    "not name this call, and it does not run; send each call to a task of its own (Send, as "
    "create_agent does)"
)
RESUME_UNVERIFIED = (
    "this call runs in a LangGraph task a resume reruns, and otelhooks holds no record of that "
    "task's pause (another handler or process paused it and the graph has no store, or the "
    "checkpoint was edited since): the arguments its tool had when it asked a person cannot be "
    "checked, so it does not run"
)
RESUME_UNCHECKED = (
    "the graph's store failed as otelhooks read what this call's tool had when it asked a "
    "person (interrupt()): it could not be checked, so it does not run"
)
# a paused task as remembered: the fingerprints of each call that asked (call id -> record)
_Task = dict[str, dict[str, Any]]


def _asked_together(records: _Task) -> bool:
    """Whether two calls of a task paused in the same graph run (a ``ToolNode`` running them
    together; calls a node makes in turn cannot: the first pause ends the node's run)."""
    seen: set[str] = set()
    for record in records.values():
        runs = set(record.get("runs", []))
        if seen & runs:
            return True
        seen |= runs
    return False


def is_resume(inputs: Any) -> bool:
    """A root run's input resumes a paused graph (``Command(resume=...)``)."""
    return isinstance(inputs, Command) and inputs.resume is not None


def _plain(value: Any) -> Any:
    """``value`` as the same JSON in every process: a set sorted (its order follows the
    process's string hashing), a pydantic model by its fields, anything else by its repr."""
    if isinstance(value, set | frozenset):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return repr(value)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, default=_plain)


def _fingerprint(args: Mapping[str, Any]) -> str:
    """A digest of ``args`` (stored instead of the arguments, which may hold secrets)."""
    try:
        text = _canonical(args)
    except (TypeError, ValueError):  # keys of mixed types, a cycle
        text = repr(args)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ResumeWave:
    """The LangGraph tasks a resumed run runs first: those it resumes (its later tasks, and
    those of a subgraph entered afresh, are new). A task is in the wave when it runs at the
    first step its graph runs in this run and its parent task (if any) is in the wave."""

    first_step: dict[str, int] = field(default_factory=dict)
    tasks: set[str] = field(default_factory=set)

    def saw(self, metadata: Mapping[str, Any]) -> None:
        """A run started in a task (``langgraph_checkpoint_ns``, ``langgraph_step``)."""
        ns, step = metadata.get("langgraph_checkpoint_ns"), metadata.get("langgraph_step")
        if not isinstance(ns, str) or not ns or not isinstance(step, int):
            return
        parent = ns.rpartition("|")[0]
        first = self.first_step.setdefault(parent, step)
        if step == first and (not parent or parent in self.tasks):
            self.tasks.add(ns)

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        return metadata.get("langgraph_checkpoint_ns") in self.tasks


def _store() -> BaseStore | None:
    """The running graph's store (``None``: none, or not in a graph's task)."""
    try:
        return get_store()
    except (RuntimeError, KeyError, AttributeError):
        return None


def _namespace(thread: str) -> tuple[str, ...]:
    """The store namespace of ``thread``'s paused calls: the thread id hashed, since a store
    label may hold no period and cannot be empty (``user.42``, a run without a thread)."""
    return (*_NAMESPACE, hashlib.sha256(thread.encode()).hexdigest()[:32])


def _key(*parts: str) -> str:
    return json.dumps(parts)  # a tool call id holding a separator cannot pass for another key


class PausedCalls:
    """The hooked calls whose tool asked a person, until they resume: in the graph's store
    (an item per paused task, one per call), else in this handler (the latest tasks). A call's
    record holds the fingerprint of the arguments it came with and of each set its tool was
    given at a pause (one per otelhooks handler in the run, each recording what its hooks
    decided)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns = threading.Condition(self._lock)  # a hooked call ended
        self._local: dict[tuple[str, str], _Task] = {}  # (thread, task) -> its paused calls
        # each open hooked call's thread, task and call id (or key, without one), graph run
        self._keys: dict[UUID, tuple[str, str, str, str]] = {}
        # the hooked calls that ended, by thread, task and graph run: a resumed call whose
        # turn at the task's answers comes later waits for them
        self._ended: dict[tuple[str, str, str], set[str]] = {}
        self._warned = False  # that a pause was seen without the graph's run

    def _recalled(
        self, store: BaseStore | None, thread: str, task: str, call_id: str
    ) -> tuple[bool, dict[str, Any] | None]:
        """Whether ``task``'s pause is remembered, and ``call_id``'s record in it."""
        if store is not None:
            known = store.get(_namespace(thread), _key("task", task)) is not None
            item = store.get(_namespace(thread), _key("call", task, call_id)) if known else None
            return known, None if item is None else item.value
        with self._lock:
            calls = self._local.get((thread, task))
            return calls is not None, None if calls is None else calls.get(call_id)

    def _task_records(self, store: BaseStore | None, thread: str, task: str) -> _Task:
        """Every call of ``task`` whose pause is remembered (call id -> record; each call's
        own record says where it paused: one record a call, so no two writers share one)."""
        if store is None:
            with self._lock:
                return dict(self._local.get((thread, task), {}))
        records: _Task = {}
        offset = 0
        while page := store.search(_namespace(thread), limit=100, offset=offset):
            offset += len(page)
            for item in page:
                parts = json.loads(item.key)
                if parts[:2] == ["call", task] and len(parts) == 3:
                    records[str(parts[2])] = item.value
        return records

    def _remember(
        self,
        store: BaseStore | None,
        key: tuple[str, str, str],
        given: str,
        ran: str,
        pause: tuple[str, str],
    ) -> None:
        """Record a pause of the call ``key`` (thread, task, call id): the fingerprints, and
        ``pause`` (the tool run's id and the graph run's, the same in each handler) among the
        call's pauses."""
        thread, task, call_id = key
        tool_run, graph_run = pause

        def merged(old: dict[str, Any] | None) -> dict[str, Any]:
            kept = old if old is not None and old.get("given") == given else {}
            return {
                "first": kept.get("first", time.time_ns()),  # its turn among the task's calls
                "given": given,
                "ran": sorted({*kept.get("ran", []), ran}),
                "pauses": sorted({*kept.get("pauses", []), tool_run}),
                "runs": sorted({*kept.get("runs", []), graph_run}),
            }

        if store is not None:
            found = store.get(_namespace(thread), _key("call", task, call_id))
            record = merged(None if found is None else found.value)
            store.put(_namespace(thread), _key("call", task, call_id), record, index=False)
            store.put(_namespace(thread), _key("task", task), {}, index=False)
            return
        with self._lock:
            calls = self._local.pop((thread, task), {})
            calls[call_id] = merged(calls.get(call_id))
            self._local[(thread, task)] = calls
            while len(self._local) > _MAX_PAUSED:
                del self._local[next(iter(self._local))]

    def judge(
        self,
        run_id: UUID,
        tool: ToolRun,
        metadata: Mapping[str, Any],
        *,
        resumed: bool,
        rootless: bool = False,
        call_id: str | None = None,
        graph_run: UUID | None = None,
    ) -> None:
        """As the call starts, its hooks having decided: refuse it (``ToolCall.refuse``) when it
        resumes a paused call whose hooks gave the tool other arguments, or (``resumed``: in a
        task a resume reruns) whose own arguments changed since it asked, or when nothing
        remembers that task's pause. A call the handler sees is no resume (neither ``resumed``
        nor ``rootless``: the handler saw the graph's run) is not looked up. ``call_id``: the
        key of a call without a tool call id (a node calling the tool itself), which is
        checked against a pause recorded under it, but not refused for want of one: the task
        may have paused at a question of the node's own."""
        thread = str(metadata.get("thread_id", ""))
        task = str(metadata.get("langgraph_checkpoint_ns", ""))
        has_id = call_id is None
        call_id = str(tool.tool_call_id) if call_id is None else call_id
        if not resumed and not rootless:
            with self._lock:
                self._keys[run_id] = (thread, task, call_id, str(graph_run))
            return
        store = _store()
        try:
            known, asked = self._recalled(store, thread, task, call_id)
        except Exception:
            _log.error(
                "the graph's store failed as a hooked call started", refused=resumed, exc_info=True
            )
            known, asked = False, None
            if resumed:
                tool.call.refuse(RESUME_UNCHECKED)
                tool.answers = 1  # it may have asked: better a question asked again than
                # its answer taken by the next one
        with self._lock:
            self._keys[run_id] = (thread, task, call_id, str(graph_run))
        if asked is not None:
            if asked.get("given") != _fingerprint(tool.args):
                # the same task rerun with another call (Command(resume=..., update=...)):
                # its interrupt() takes the answer given for the old one
                if resumed:
                    tool.call.refuse(RESUMED_EDITED)
            elif _fingerprint(tool.call.args) not in asked.get("ran", []):
                tool.call.refuse(RESUMED_CHANGED)
        elif resumed and has_id and not known and tool.call.should_run:
            _log.warning(
                "a resumed LangGraph call was refused: its pause was not recorded",
                thread_id=thread,
                tool_call_id=tool.tool_call_id,
                fix="give the graph a store when it is compiled (its store= argument) or resume "
                "with the OtelHooksCallbackHandler object that saw it pause",
            )
            tool.call.refuse(RESUME_UNVERIFIED)
            tool.answers = 1  # as above

        if asked is None and not (resumed and known):
            return
        try:
            records = self._task_records(store, thread, task)
        except Exception:  # whether its answers are its own is unknown: it does not run
            _log.error("the graph's store failed as a resumed call started", exc_info=True)
            tool.call.refuse(RESUME_UNCHECKED)
            return
        if _asked_together(records):
            # LangGraph hands the task's answers to its interrupt()s in the order they are
            # reached, which for calls run together is no order at all: none can be matched
            tool.call.refuse(RESUMED_TOGETHER)
            # the answers go to one call (the same in every handler), so that no other
            # interrupt() of the task (the node's own after the tools) takes one
            first = call_id == min(records)
            tool.answers = len({r for c in records.values() for r in c.get("runs", [])}) * first
            return
        # a call that asked before this one (or any that asked, for a call that never did)
        # owns the task's earlier answers: it must have taken them before this one starts.
        # Calls a node makes with plain arguments run in turn, the same turn at each rerun
        mine = None if asked is None else asked.get("first", 0)
        earlier = {c for c, r in records.items() if mine is None or r.get("first", 0) < mine}
        waiting = (thread, task, str(graph_run))
        with self._turns:
            ahead = has_id and not self._turns.wait_for(
                lambda: not earlier - {call_id} - self._ended.get(waiting, set()),
                timeout=_TURN_WAIT_SECONDS,
            )
        if ahead:
            tool.call.refuse(RESUMED_AHEAD)
            tool.answers = 0  # its answers come after those not yet taken
            return
        if asked is not None and not tool.call.should_run:
            # each pause's answer is its tool's: refused, it must take them (see ToolRun)
            tool.answers = max(len(asked.get("pauses", [])), 1)

    def done(
        self,
        run_id: UUID,
        tool: ToolRun,
        *,
        paused: bool,
        rootless: bool = False,
        graph_run: UUID | None = None,
    ) -> None:
        """The call ended: ``paused`` (its tool asked a person), remember what it had. A
        resumed call that finished is remembered still: its task runs again from its start
        at its next pause (the node asks a question of its own after the tool), where the
        call's ``interrupt()`` takes the answer given before, for these arguments.
        ``rootless``: the handler saw no run above the call, so it cannot tell a resume of it
        (said once). ``graph_run``: the root run it paused in."""
        with self._lock:
            key = self._keys.pop(run_id, None)
            if key is not None:
                thread, task, call_id, graph_run_key = key
                self._ended.setdefault((thread, task, graph_run_key), set()).add(call_id)
                while len(self._ended) > _MAX_PAUSED:
                    del self._ended[next(iter(self._ended))]
                self._turns.notify_all()
            warn = paused and rootless and not self._warned
            self._warned = self._warned or warn
        if warn:
            _log.warning(
                "a hooked LangGraph call paused, but the handler does not see the graph's run: "
                "a resume of it by another handler, unless the graph's store recorded the "
                "pause, is judged afresh",
                tool_call_id=tool.tool_call_id,
                fix="pass the OtelHooksCallbackHandler in the run's config "
                "(config={'callbacks': [handler]}), not only in the tool's callbacks",
            )
        if key is None:
            return
        if not paused or not tool.call.should_run:
            return
        store = _store()
        try:
            given, ran = _fingerprint(tool.args), _fingerprint(tool.call.args)
            # the graph run the call started in: the run may have ended before this (an async
            # ToolNode's other call paused first), and a rootless call is a run of its own
            graph = key[3] if key[3] != "None" else str(graph_run or run_id)
            self._remember(store, key[:3], given, ran, (str(run_id), graph))
        except Exception:  # its resume, finding no record, is refused
            _log.error("the graph's store failed: a paused call was not recorded", exc_info=True)
