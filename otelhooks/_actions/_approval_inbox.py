"""``ApprovalInbox``: calls waiting for a person, and their answers.

An ``approval:`` hook puts one :class:`Approval` here per call it holds, and waits (on its thread
or awaited) until a person answers it (``POST /v1/approvals/{id}``, the ``/approvals`` page) or
its deadline passes, when the hook's ``default`` applies. Answering is first-wins under a lock:
a late click, a second bot or the deadline cannot change an answer given, and an answer
after the deadline loses to the default.

A process has one inbox (:func:`process_inbox`, created on first use and never replaced);
``otelhooks serve`` serves it. Listeners see every answered approval (the span and the
event-log record are written by them). At most ``max_pending`` calls wait at a time; one more is
refused (an error the hook turns into a block: a full inbox never lets a call through).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import structlog

from otelhooks._actions._approval_args import showable
from otelhooks._actions._approval_card import (
    CLIENT_GONE,
    LAPSED,
    LEASE_S,
    WITHDRAWN,
    Approval,
    Decision,
    InboxFull,
    epoch_ms,
    joins,
    lapsed_at,
    lapsed_reason,
)
from otelhooks._eventlog._signal import AppendSignal

__all__ = [
    "CLIENT_GONE",
    "LAPSED",
    "LEASE_S",
    "WITHDRAWN",
    "Approval",
    "ApprovalInbox",
    "InboxFull",
    "Listing",
    "joins",
    "lapsed_at",
    "lapsed_reason",
    "process_inbox",
]

_log = structlog.get_logger("otelhooks")
_T = TypeVar("_T")
_NOT_YET_S = 0.05


class Listing(NamedTuple):
    """What :meth:`ApprovalInbox.listing` read, at one :attr:`version`."""

    version: int
    pending: list[Approval]  #: oldest first
    answered: list[Approval]  #: newest first
    refused: int  #: calls refused by a full inbox, since ``refused_since_ms``
    refused_since_ms: int
    refused_last_ms: int


class ApprovalInbox:
    """Pending approvals and the last answered ones (see the module docstring).

    Args:
        max_pending: calls allowed to wait at a time.
        keep_answered: answered approvals kept for the page's history.

    Attributes:
        lease_s: how long a pending card lives with none of its askers waiting on it
            (:data:`LEASE_S` unless ``otelhooks serve --approval-lease`` set it).

    Example:
        >>> inbox = ApprovalInbox()
        >>> item = inbox.request(hook_id="ask", event="before_tool_call", tool="Bash",
        ...                      timeout_s=60, default="deny")
        >>> inbox.answer(item.id, "allow", by="alice").state
        'allowed'
    """

    #: Whether the methods wait for a database (then coroutines call them through :meth:`call`).
    blocking = False
    #: How often a waiter calls :meth:`recheck` (an inbox whose answers may come from elsewhere
    #: looks again even when no wake-up came).
    recheck_s = float("inf")

    def __init__(self, *, max_pending: int = 256, keep_answered: int = 200) -> None:
        self.max_pending = max_pending
        self.keep_answered = keep_answered
        self.lease_s = LEASE_S
        self.signal = AppendSignal()
        self.version = 0
        self._lock = threading.Lock()
        #: calls refused because ``max_pending`` waited (the page says how many, and since when:
        #: a person must act, e.g. **Deny all**, or every call is blocked), with the epoch
        #: milliseconds of the first and the last one
        self.refused = 0
        self.refused_since_ms = 0
        self.refused_last_ms = 0
        self._pending: dict[str, Approval] = {}
        self._answered: OrderedDict[str, Approval] = OrderedDict()
        self._listeners: list[Callable[[Approval], None]] = []

    def add_listener(self, listener: Callable[[Approval], None]) -> None:
        """Call ``listener`` with every approval once it is answered (or its default applied).
        Runs on the answering thread; an exception is logged and swallowed."""
        with self._lock:
            self._listeners = [*self._listeners, listener]

    @property
    def served(self) -> bool:
        """Whether something (``otelhooks serve``'s web view) lists and answers this inbox."""
        return bool(self._listeners)

    def remove_listener(self, listener: Callable[[Approval], None]) -> None:
        """Stop calling ``listener``."""
        with self._lock:
            self._listeners = [x for x in self._listeners if x is not listener]

    def request(
        self,
        *,
        hook_id: str,
        event: str,
        tool: str,
        timeout_s: float,
        default: Decision,
        args: dict[str, Any] | None = None,
        reason: str = "",
        agent: str = "",
        session: str = "",
        user: str = "",
        trace_id: str = "",
        span_id: str = "",
        editable: bool = False,
        call: str = "",
    ) -> Approval:
        """Add a pending approval, or give the card of the same call (:func:`joins`); raises
        :class:`InboxFull` past ``max_pending``, ``ArgsNotShowable`` for arguments the page
        cannot show as they are."""
        showable(args)
        now = epoch_ms()
        item = Approval(
            id=uuid.uuid4().hex,
            hook_id=hook_id,
            event=event,
            tool=tool,
            args=dict(args or {}),
            agent=agent,
            session=session,
            user=user,
            trace_id=trace_id,
            span_id=span_id,
            created_ms=now,
            deadline_ms=now + int(timeout_s * 1000),
            default=default,
            reason=reason,
            editable=editable,
            call=call,
            held_ms=now,
        )
        with self._lock:
            expired = self._expire_overdue()
            # the pending card first, then the newest answer
            seen = [*self._pending.values(), *reversed(self._answered.values())] if call else []
            joined = next(
                (
                    a
                    for a in seen
                    if joins(a, hook_id=hook_id, event=event, call=call, args=item.args, now_ms=now)
                ),
                None,
            )
            full = joined is None and len(self._pending) >= self.max_pending
            if joined is not None:
                item = joined
            elif full:
                self._count_refused()
            else:
                self._pending[item.id] = item
            self.version += 1
        self._settled(expired)  # their defaults are recorded as any other answer
        self.signal.notify()
        if full:
            raise InboxFull(f"{self.max_pending} approvals are waiting already")
        return item

    def get(self, approval_id: str) -> Approval | None:
        """A pending or recently answered approval."""
        with self._lock:
            return self._pending.get(approval_id) or self._answered.get(approval_id)

    def pending(self) -> list[Approval]:
        """Waiting approvals, oldest first (overdue ones get their default now)."""
        with self._lock:
            expired = self._expire_overdue()
            items = list(self._pending.values())
        self._settled(expired)
        return items

    def answered(self) -> list[Approval]:
        """The last answered approvals, newest first."""
        with self._lock:
            return list(reversed(self._answered.values()))

    def listing(self) -> Listing:
        """:meth:`pending`, :meth:`answered`, the refusals and the :attr:`version` they are at,
        read at once: a page that has seen this version has seen every change it counts. Read
        apart, a call asked between the list and the version was counted in the version and
        missing from the list, and the page waiting for the next change never drew it."""
        with self._lock:
            expired = self._expire_overdue()
            listed = self._listing(self.version, list(self._pending.values()))
        self._settled(expired)
        return listed

    def _listing(self, version: int, pending: list[Approval]) -> Listing:
        """The listing of ``pending`` and the rest as they are; call with the lock held."""
        refused = (self.refused, self.refused_since_ms, self.refused_last_ms)
        answered = list(reversed(self._answered.values()))
        return Listing(version, pending, answered, *refused)

    def answer(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str = "",
        args: dict[str, Any] | None = None,
    ) -> Approval | None:
        """Answer a pending approval; ``None`` when it is unknown or was answered already (its
        deadline passed: the default applies now, as a waiter between two looks would find).
        Edited ``args`` the page could not show raise ``ArgsNotShowable``."""
        showable(args)
        with self._lock:
            expired = self._expire_overdue()
            item = self._pending.get(approval_id)
            if item is not None:
                if args is not None and not item.editable:
                    args = None  # a runtime that cannot take edited arguments never gets them
                self._resolve(item, decision, by=by, reason=reason, args=args)
        self._settled(expired if item is None else [*expired, item])
        return item

    def withdraw(
        self, approval_id: str, reason: str = WITHDRAWN, *, polling: bool = False
    ) -> Approval | None:
        """An asker stopped waiting (cancelled, interrupted, gave up: its call was blocked):
        unless another asker of the same call waits on it, the approval is denied by ``asker``,
        so nobody approves a call nobody waits for and a rerun's card is the only one left;
        ``None`` as :meth:`answer`, and while another asker waits on it. ``polling``: one of the
        holds open (:meth:`hold`) is that asker's, whose end it will not wait for (a long-poll
        of a thread it cannot stop)."""
        with self._lock:
            expired = self._expire_overdue()
            item = self._pending.get(approval_id)
            if item is not None:
                item.leaving = min(item.leaving + polling, item.askers)
                item = self._left(item, gone=True, reason=reason)
        self._settled(expired if item is None else [*expired, item])
        return item

    def hold(self, approval_id: str) -> None:
        """One more asker waits on the approval (a long-poll, a waiter in this process) until
        its :meth:`release`: a card is withdrawn only when its last asker is gone."""
        with self._lock:
            item = self._pending.get(approval_id)
            if item is not None:
                item.askers += 1
                item.held_ms = epoch_ms()

    def release(self, approval_id: str, *, gone: bool, reason: str = WITHDRAWN) -> Approval | None:
        """An asker's :meth:`hold` ends: it looks again soon, or, ``gone``, it stopped waiting;
        then as :meth:`withdraw`. Nobody waiting on a card for :data:`LEASE_S` withdraws it
        too (the lease)."""
        with self._lock:
            expired = self._expire_overdue()
            item = self._pending.get(approval_id)
            if item is not None:
                item.askers = max(0, item.askers - 1)
                # a hold of an asker gone already ends first, as far as anyone can tell: the
                # count of the others is at worst one too many, until that hold ends too
                item.leaving = max(0, min(item.leaving - 1, item.askers))
                item = self._left(item, gone=gone, reason=reason)
        self._settled(expired if item is None else [*expired, item])
        return item

    def _left(self, item: Approval, *, gone: bool, reason: str) -> Approval | None:
        """Renew ``item``'s lease; withdraw it if ``gone`` and no asker waits on it any more
        (then it is returned); call with the lock held."""
        item.held_ms = epoch_ms()
        if not gone or item.askers > item.leaving:
            return None
        self._resolve(item, "deny", by="asker", reason=reason)
        return item

    def expire(self, approval_id: str) -> Approval | None:
        """Apply the default to a pending approval (its waiter's deadline passed)."""
        with self._lock:
            item = self._pending.get(approval_id)
            if item is None:
                return self._answered.get(approval_id)
            self._resolve(item, item.default, by="timeout", reason="no answer in time")
        self._settled([item])
        return item

    def now_ms(self) -> int:
        """Now by the clock that decides the deadlines (this process's), epoch milliseconds."""
        return epoch_ms()

    def seconds_left(self, item: Approval) -> float:
        """Seconds until ``item``'s deadline, by the clock that decides it (:meth:`now_ms`)."""
        return (item.deadline_ms - self.now_ms()) / 1000

    def recheck(self) -> None:
        """Read answers given elsewhere (nothing to read here: every answer is given in this
        process). A waiter calls it every :attr:`recheck_s` seconds."""

    def wait(self, item: Approval) -> Approval:
        """Block until ``item`` is answered or its deadline passes (then its default)."""
        while item.state == "pending":
            left = self.seconds_left(item)
            if left > 0:
                if not item._done.wait(min(left, self.recheck_s)):
                    self.recheck()
                continue
            self.expire(item.id)
            if item.state == "pending":  # the deciding clock says not yet: look again soon
                item._done.wait(_NOT_YET_S)
        return item

    async def await_answer(self, item: Approval) -> Approval:
        """As :meth:`wait`, awaited: no thread waits (a :attr:`blocking` inbox's reads and
        writes run on a worker thread, never on the event loop)."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        with self._lock:
            if item.state == "pending":
                item._loops.append((loop, woken))
            else:
                woken.set()
        while item.state == "pending":
            left = self.seconds_left(item)
            if left > 0:
                try:
                    await asyncio.wait_for(woken.wait(), min(left, self.recheck_s))
                except TimeoutError:
                    await self.call(self.recheck)
                continue
            await self.call(self.expire, item.id)
            if item.state == "pending":
                await asyncio.sleep(_NOT_YET_S)
        return item

    async def call(self, method: Callable[..., _T], /, *args: Any) -> _T:
        """``method(*args)`` from a coroutine: on a worker thread when the inbox is
        :attr:`blocking` (its methods wait for a database), else inline."""
        if self.blocking:
            return await asyncio.to_thread(method, *args)
        return method(*args)

    # -- inside -------------------------------------------------------------------------------

    def _resolve(
        self,
        item: Approval,
        decision: Decision,
        *,
        by: str,
        reason: str,
        args: dict[str, Any] | None = None,
    ) -> None:
        """Record the answer; call with the lock held."""
        del self._pending[item.id]
        item.state = "allowed" if decision == "allow" else "denied"
        item.answered_by = by
        item.answered_ms = epoch_ms()
        item.answer_reason = reason
        item.answer_args = args if decision == "allow" else None
        self._keep_answered(item)
        self.version += 1

    def _keep_answered(self, item: Approval) -> None:
        """Keep ``item`` among the answers: the last ``keep_answered`` defaults applied and the
        last ``keep_answered`` answers of people, apart. Anyone holding the ingest token can
        have hundreds of defaults applied in a second, and one **Deny all** gives hundreds of
        answers: either would push out an answer its asker, looking once a second (serve had
        no room for its long-poll), has not read yet. A shared inbox's ``_TRIM`` holds the same
        rule in SQL. Call with the lock held."""
        self._answered[item.id] = item
        self._answered.move_to_end(item.id)
        timed_out = item.answered_by == "timeout"
        kind = [a for a in self._answered.values() if (a.answered_by == "timeout") == timed_out]
        for gone in kind[: max(0, len(kind) - self.keep_answered)]:
            del self._answered[gone.id]

    def _count_refused(self) -> None:
        """Count one call refused by a full inbox; call with the lock held."""
        self.refused_last_ms = epoch_ms()
        self.refused_since_ms = self.refused_since_ms or self.refused_last_ms
        self.refused += 1

    def _expire_overdue(self) -> list[Approval]:
        """Apply the defaults due and withdraw the cards whose lease lapsed; call with the lock
        held."""
        now = epoch_ms()
        overdue = [item for item in self._pending.values() if item.deadline_ms <= now]
        for item in overdue:
            self._resolve(item, item.default, by="timeout", reason="no answer in time")
        lapsed = [item for item in self._pending.values() if lapsed_at(item, self.lease_s) <= now]
        for item in lapsed:
            self._resolve(item, "deny", by="asker", reason=lapsed_reason(self.lease_s))
        return [*overdue, *lapsed]

    def _settled(self, items: list[Approval], *, tell: bool = True) -> None:
        """Wake the waiters of answered ``items`` and, with ``tell``, tell the listeners
        (outside the lock)."""
        if not items:
            return
        for item in items:
            item._done.set()
            for loop, woken in item._loops:
                with contextlib.suppress(RuntimeError):  # that loop closed: nobody waits
                    loop.call_soon_threadsafe(woken.set)
            for listener in self._listeners if tell else ():
                try:
                    listener(item)
                except Exception:
                    _log.exception("approval listener failed", approval=item.id)
        self.signal.notify()


_PROCESS_INBOX: ApprovalInbox | None = None
_PROCESS_LOCK = threading.Lock()


def process_inbox() -> ApprovalInbox:
    """This process's inbox: created on first use, never replaced (the one ``serve`` serves)."""
    global _PROCESS_INBOX
    with _PROCESS_LOCK:
        if _PROCESS_INBOX is None:
            _PROCESS_INBOX = ApprovalInbox()
        return _PROCESS_INBOX
