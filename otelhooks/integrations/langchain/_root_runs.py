"""The root runs the LangChain handler has open: which operation each callback belongs to.

LangChain hands every callback its run's id and its parent's. A root run (a graph, a chain, a
model called alone) is one otelhooks operation, opened at its first callback and ended when the
run that opened it ends; every run below it (a node, a sub-chain, a model or tool call) is a
member of it. A model call opens a new step of the operation, which stays open while a call in
it has not ended. Nothing here locks: the handler calls it under its own lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from otelhooks._errors import RunBlockedError
from otelhooks._instrument import Operation, Step
from otelhooks.integrations._scopes import DetachedScope
from otelhooks.integrations.langchain._resume import ResumeWave

__all__ = ["RootRun", "RootRuns", "is_interrupt"]

_INTERRUPTS = frozenset({"GraphInterrupt", "NodeInterrupt"})

_REWRITE_REFUSED = (
    "a before_agent_start hook rewrote the input, which a LangChain run cannot take from a "
    "callback: the run was refused rather than run with the input as it was"
)


def is_interrupt(exc: BaseException | None) -> bool:
    """``exc`` is LangGraph's pause for a person (``interrupt()``), not a failure. By name:
    LangGraph is an optional extra, and a LangChain-only run never raises them."""
    return exc is not None and type(exc).__name__ in _INTERRUPTS


@dataclass
class RootRun:
    """A root run's operation, its current step and what is still open in the step."""

    owner: UUID
    operation: DetachedScope[Operation]
    step: DetachedScope[Step] | None = None
    open_in_step: int = 0
    members: set[UUID] = field(default_factory=set)
    wave: ResumeWave | None = None  # a resumed graph's: the tasks it resumes
    # hooked calls without a tool call id started so far, by task and tool: the n-th such
    # call of a tool in a task is the n-th again when a resume reruns the task, so its key
    # (by tool, so that calls of two tools a node runs at once cannot swap places)
    unnamed: dict[tuple[str, str], int] = field(default_factory=dict)

    def unnamed_key(self, metadata: dict[str, Any], name: str) -> str:
        """The key of a hooked call without a tool call id (a node calls the tool itself): its
        tool and place among such calls of it in its task (NULs: no model's call id spells
        it)."""
        place = (str(metadata.get("langgraph_checkpoint_ns", "")), name)
        n = self.unnamed[place] = self.unnamed.get(place, -1) + 1
        return f"\0{name}\0{n}"

    def new_step(self) -> Step:
        """Open the next step (a model call starts one); the current one ends unless a call
        in it is still open."""
        if self.step is not None and self.open_in_step == 0:
            self.step.exit()
            self.step = None
        op = self.operation.scope
        self.step = DetachedScope(op.step(), op.span)
        self.open_in_step = 0
        return self.step.enter()

    def current_step(self) -> Step:
        """The open step, or a new one (a tool called before any model call)."""
        return self.step.scope if self.step is not None else self.new_step()

    def call_ended(self) -> None:
        """A model or tool call of the current step ended."""
        self.open_in_step = max(0, self.open_in_step - 1)


class RootRuns:
    """The open root runs, and the root of every run id seen under them."""

    def __init__(self) -> None:
        self._root_of: dict[UUID, UUID] = {}
        self._runs: dict[UUID, RootRun] = {}

    def root(self, run_id: UUID, parent: UUID | None) -> UUID:
        """Remember and return the root of ``run_id`` (itself when it has no parent)."""
        root = run_id if parent is None else self._root_of.get(parent, parent)
        self._root_of[run_id] = root
        return root

    def member(self, run_id: UUID, parent: UUID | None) -> RootRun | None:
        """The open root run ``run_id`` belongs to under ``parent``, once remembered."""
        return self._runs.get(self.root(run_id, parent))

    def of(self, run_id: UUID) -> RootRun | None:
        """The open root run of a run id already seen."""
        root = self._root_of.get(run_id)
        return self._runs.get(root) if root is not None else None

    def open(
        self, run_id: UUID, parent: UUID | None, input: str, start: Callable[[], Operation]
    ) -> RootRun:
        """The root run of ``run_id``, its operation started by ``start`` when it has none.

        Raises:
            RunBlockedError: a ``before_agent_start`` hook blocked the run, or rewrote its
                ``input``, which a callback cannot hand it: the run does not start.
        """
        root = self.root(run_id, parent)
        run = self._runs.get(root)
        if run is None:
            op = start()
            run = RootRun(owner=run_id, operation=DetachedScope(op, None))
            run.operation.enter()
            refused = op.block_reason if op.blocked else None
            if not op.blocked and op.input != input:
                # a callback cannot hand the run another input: run as it was, the rewrite (a
                # redaction, say) would be lost without a word
                refused = _REWRITE_REFUSED
                op.complete("interrupted")
            if op.blocked or refused is not None:
                self._root_of.pop(run_id, None)
                run.operation.exit()
                raise RunBlockedError(refused)
            self._runs[root] = run
        run.members.add(run_id)
        return run

    def end(self, run_id: UUID, exc: BaseException | None = None) -> None:
        """``run_id`` ended: the operation ends with it when it is the run that opened it (a
        LangGraph interrupt ends it ``interrupted``, not failed)."""
        root = self._root_of.pop(run_id, None)
        if root is None or root not in self._runs or self._runs[root].owner != run_id:
            return
        run = self._runs.pop(root)
        for member in run.members:
            self._root_of.pop(member, None)
        if is_interrupt(exc):
            run.operation.scope.complete("interrupted")
            exc = None
        if run.step is not None:
            run.step.exit(exc)
        run.operation.exit(exc)
