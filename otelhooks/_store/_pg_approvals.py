"""The approval inbox in PostgreSQL: asked through one instance, answered through any other.

Every approval is a row of ``otelhooks_approvals``; asking, answering and applying the default
are each one transaction that first takes the row of ``otelhooks_approvals_head``
(``UPDATE ... RETURNING``), numbering the change. That lock orders the writers of all
instances, so ``changed`` numbers become visible in order and a reader that saw change N never
misses a change below it. A change runs ``pg_notify('otelhooks_approvals', ...)``; every
instance's listener then reads the rows changed since the last one it saw and updates its
copies of them in place, which wakes whatever waits on them here: the ``approval:`` hook of a
Claude Code call held by this instance, a ``GET /v1/approvals/{id}?wait=S``.

Decided once: an answer is ``UPDATE ... WHERE state = 'pending' AND deadline_ms > <now>``, so
of two answers (two instances, two people, an answer and the deadline) exactly one changes the
row; the other finds it answered (``409``). The deadline is the database's clock: an answer a
second after it loses to the default on every instance, whatever their clocks say. The
instance whose statement changed the row tells its listeners (the event-log record, the
stand-in span), so each answer is recorded once in the fleet.

A card counts its askers in its row (``askers``, ``leaving``, ``held_ms``: the holds open on
any instance, and when one last began, ended or was renewed): the last one gone withdraws it,
and so does none renewed for the lease (``lease_s``, 10 s unless ``otelhooks serve
--approval-lease`` set it) by the database's clock, counted from the database's start at the
earliest (its askers could not look while it was down). Each instance renews the holds it has
open every quarter of its lease: the holds of an instance killed with ``kill -9`` (never
ended, still counted) lapse with it, where the count alone kept its cards pending to their
deadlines, approvable for calls nobody waited for.

What is pending is bounded fleet-wide (``max_pending``, counted under the head lock); answered
rows beyond the last ``keep_answered`` defaults and the last ``keep_answered`` answers of people
are deleted by whoever answers (as in :class:`ApprovalInbox`).

The statements, and the reading of a row into an :class:`Approval`, are ``_pg_approval_sql``'s:
this module holds when each runs and how this instance's copies follow the rows.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

import structlog

from otelhooks._actions._approval_args import showable
from otelhooks._actions._approval_card import (
    WITHDRAWN,
    Approval,
    Decision,
    InboxFull,
    joins,
    lapsed_reason,
)
from otelhooks._actions._approval_inbox import ApprovalInbox, Listing
from otelhooks._store._errors import StoreError
from otelhooks._store._pg_approval_sql import (
    ANSWER,
    CHANGES,
    EXPIRE,
    HOLD,
    INSERT,
    LEAVE,
    NEXT,
    NOTIFY,
    OF_CALL,
    OVERDUE,
    RENEW,
    TRIM,
    read_approval,
)
from otelhooks._store._pg_listen import APPROVALS_CHANNEL

if TYPE_CHECKING:
    from otelhooks._store._pg_connections import PgConnections

__all__ = ["SharedApprovalInbox"]

_log = structlog.get_logger("otelhooks")

_PAGE: Final = 1000
_RECHECK_S: Final = 5.0  # a waiter reads the rows again even if a notification was lost


class SharedApprovalInbox(ApprovalInbox):
    """The inbox of every ``serve`` instance on one PostgreSQL store (see the module docstring).

    This instance keeps copies of the pending approvals and the last answered ones, brought up
    to date by the store's notifications and before every listing; what it waits on is one of
    those copies, updated in place. :attr:`version` is the fleet's change number, the same on
    every instance.

    Args:
        store: the store (its pool, its listener).
        max_pending: approvals allowed to wait at a time, in the whole fleet.
        keep_answered: answered approvals kept for the page's history.

    Raises:
        StoreError: the store cannot be read.
    """

    blocking = True
    recheck_s = _RECHECK_S

    def __init__(
        self, store: PgConnections, *, max_pending: int = 256, keep_answered: int = 200
    ) -> None:
        super().__init__(max_pending=max_pending, keep_answered=keep_answered)
        self.store = store
        self._seen = 0
        self._offset_ms = 0  # the database's clock minus ours, at the last statement
        self._reading = threading.Lock()  # one reader of changes at a time, in order
        # this instance's open holds by card: ids of rows the database said were pending
        self._holding: Counter[str] = Counter()
        self._closed = threading.Event()
        store.listener().subscribe("approvals", self._woken, channel=APPROVALS_CHANNEL)
        self.recheck()
        threading.Thread(target=self._renew, name="otelhooks-approval-holds", daemon=True).start()

    def close(self) -> None:
        """Stop renewing this instance's holds (the store is closing: they lapse)."""
        self._closed.set()

    # -- writing ------------------------------------------------------------------------------

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
        """Add a pending approval, its deadline by the database's clock, or give the card of
        the same call asked through any instance (:func:`joins`).

        Raises:
            InboxFull: ``max_pending`` approvals wait in the fleet already.
            StoreUnavailable: the store cannot commit right now.
            ArgsNotShowable: arguments the page cannot show as they are.
        """
        showable(args)
        self._expire_due()
        params = {
            "id": uuid.uuid4().hex,
            "hook_id": hook_id,
            "event": event,
            "tool": tool,
            "args": json.dumps(dict(args or {}), default=str),
            "agent": agent,
            "session": session,
            "user": user,
            "trace_id": trace_id,
            "span_id": span_id,
            "timeout_ms": int(timeout_s * 1000),
            "default": default,
            "reason": reason,
            "editable": editable,
            "call": call,
            "max": self.max_pending,
        }
        asked = json.loads(str(params["args"]))  # as a row gives it back
        with self.store.transaction() as conn:
            params["changed"] = _one_int(conn.execute(NEXT).fetchone())
            rows: list[tuple[Any, ...]] = []
            if call:
                cards: list[tuple[Any, ...]] = conn.execute(OF_CALL, {"call": call}).fetchall()
                rows = [
                    row
                    for row in cards
                    if joins(
                        read_approval(row),
                        hook_id=hook_id,
                        event=event,
                        call=call,
                        args=asked,
                        now_ms=int(row[-1]),
                    )
                ][:1]
            if not rows:
                rows = conn.execute(INSERT, params).fetchall()
            if rows:
                conn.execute(NOTIFY, (APPROVALS_CHANNEL,))
        if not rows:
            with self._lock:
                self._count_refused()  # by this instance: the page of each says what it refused
            self.recheck()  # the refusal took a change number: this instance's page looks again
            raise InboxFull(f"{self.max_pending} approvals are waiting already")
        self._clock(rows[0])
        self.recheck()
        with self._lock:
            held = self._pending.get(str(rows[0][0])) or self._answered.get(str(rows[0][0]))
        return held if held is not None else self._apply(rows, tell=False)[0]

    def answer(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str = "",
        args: dict[str, Any] | None = None,
    ) -> Approval | None:
        """Answer a pending approval unless another instance, a person or its deadline did
        first; ``None`` when it is unknown or was answered already (then its default applies
        now if its deadline passed); edited ``args`` the page cannot show raise
        ``ArgsNotShowable``."""
        showable(args)
        allowed = decision == "allow"
        params: dict[str, object] = {
            "id": approval_id,
            "state": "allowed" if allowed else "denied",
            "by": by,
            "reason": reason,
            "args": json.dumps(args, default=str) if args is not None and allowed else None,
            "lease_ms": self._lease_ms(),
        }
        with self.store.transaction() as conn:
            params["changed"] = _one_int(conn.execute(NEXT).fetchone())
            rows = conn.execute(ANSWER, params).fetchall()
            if rows:
                conn.execute(NOTIFY, (APPROVALS_CHANNEL,))
                self._trim(conn)
        if not rows:
            self.expire(approval_id)  # a late answer: the default wins, and is recorded
            return None
        self._clock(rows[0])
        return self._apply(rows, tell=True)[0]

    def hold(self, approval_id: str) -> None:
        """One more asker waits on the approval, on any instance (the count is the row's;
        this instance renews it until its :meth:`release`)."""
        if self.store.statement(HOLD, {"id": approval_id}):
            with self._lock:
                self._holding[approval_id] += 1

    def release(self, approval_id: str, *, gone: bool, reason: str = WITHDRAWN) -> Approval | None:
        """An asker's hold ends (see :meth:`ApprovalInbox.release`), on any instance; not
        renewed any more, even if the store cannot count its end (then it lapses)."""
        with self._lock:
            if self._holding[approval_id] > 1:
                self._holding[approval_id] -= 1
            else:
                self._holding.pop(approval_id, None)
        return self._leave(approval_id, ended=1, polling=0, gone=gone, reason=reason)

    def withdraw(
        self, approval_id: str, reason: str = WITHDRAWN, *, polling: bool = False
    ) -> Approval | None:
        """An asker stopped waiting (see :meth:`ApprovalInbox.withdraw`), on any instance."""
        return self._leave(approval_id, ended=0, polling=int(polling), gone=True, reason=reason)

    def _leave(
        self, approval_id: str, *, ended: int, polling: int, gone: bool, reason: str
    ) -> Approval | None:
        params: dict[str, object] = {"id": approval_id, "ended": ended, "polling": polling}
        if not gone:  # no answer can follow: the row alone, no change number
            self.store.statement(LEAVE, params)
            return None
        answer: dict[str, object] = {"state": "denied", "by": "asker", "reason": reason}
        answer.update(args=None, lease_ms=self._lease_ms())
        with self.store.transaction() as conn:
            # the head first, as every answer takes it: no other instance answers in between
            params["changed"] = _one_int(conn.execute(NEXT).fetchone())
            left: tuple[Any, ...] | None = conn.execute(LEAVE, params).fetchone()
            rows: list[tuple[Any, ...]] = []
            if left is not None and left[0] <= left[1]:  # no asker waits on it any more
                rows = conn.execute(ANSWER, {**params, **answer}).fetchall()
            if rows:
                conn.execute(NOTIFY, (APPROVALS_CHANNEL,))
                self._trim(conn)
        if not rows:
            return None
        self._clock(rows[0])
        return self._apply(rows, tell=True)[0]

    def expire(self, approval_id: str) -> Approval | None:
        """Apply the default to ``approval_id`` if its deadline passed by the database's clock;
        the approval as it is now (still pending when the database says it is not due)."""
        self._expire(approval_id)
        return self.get(approval_id)

    def _expire_due(self) -> None:
        """Apply the default to every overdue approval (one read when none is)."""
        found = self.store.statement(OVERDUE, {"lease_ms": self._lease_ms()})
        if found and found[0][0]:
            self._expire("")

    def _expire(self, approval_id: str) -> None:
        with self.store.transaction() as conn:
            changed = _one_int(conn.execute(NEXT).fetchone())
            params = {
                "changed": changed,
                "id": approval_id,
                "lapsed": lapsed_reason(self.lease_s),
                "lease_ms": self._lease_ms(),
            }
            rows = conn.execute(EXPIRE, params).fetchall()
            if rows:
                conn.execute(NOTIFY, (APPROVALS_CHANNEL,))
                self._trim(conn)
        if rows:
            self._clock(rows[0])
            self._apply(rows, tell=True)

    def _trim(self, conn: Any) -> None:
        conn.execute(TRIM, {"keep": self.keep_answered})

    # -- reading ------------------------------------------------------------------------------

    def get(self, approval_id: str) -> Approval | None:
        """A pending or recently answered approval of any instance."""
        self.recheck()
        return super().get(approval_id)

    def pending(self) -> list[Approval]:
        """Waiting approvals of the fleet, oldest first (overdue ones get their default now)."""
        self._expire_due()
        self.recheck()
        with self._lock:
            return self._oldest_first()

    def answered(self) -> list[Approval]:
        """The fleet's last answered approvals, newest first."""
        self.recheck()
        return super().answered()

    def listing(self) -> Listing:
        """The fleet's :meth:`ApprovalInbox.listing`: the copies are read with the change
        number they were brought to, no reader of changes in between (one another instance's
        change applied between the list and the version was counted and not listed)."""
        self._expire_due()
        with self._reading:
            self._read_changes()
            with self._lock:
                listed = self._listing(self._seen, self._oldest_first())
        self._publish()
        return listed

    def _oldest_first(self) -> list[Approval]:
        """The waiting approvals of the fleet, oldest first; call with the lock held (the
        instances' copies arrive in the order their changes are read, not asked)."""
        return sorted(self._pending.values(), key=lambda a: (a.created_ms, a.id))

    def now_ms(self) -> int:
        """Now by the database's clock (as last seen): an instance's own may be off."""
        return time.time_ns() // 1_000_000 + self._offset_ms

    def recheck(self) -> None:
        """Read the rows changed since the last change seen and update the copies here.

        Raises:
            StoreUnavailable: the store cannot be read right now.
        """
        with self._reading:
            self._read_changes()
        self._publish()

    def _read_changes(self) -> None:
        """:meth:`recheck`'s reading; call with ``_reading`` held."""
        while True:
            rows = self.store.statement(CHANGES, {"seen": self._seen, "limit": _PAGE})
            head = _one_int(rows[0]) if rows else self._seen
            changed = [row[1:] for row in rows if row[1] is not None]
            if changed:
                self._clock(changed[-1])
                self._apply(changed, tell=False)
                self._seen = int(changed[-1][1])
            if len(changed) < _PAGE:
                self._seen = max(self._seen, head)
                return

    def _publish(self) -> None:
        """Make the change number read the :attr:`version`, and wake its waiters."""
        seen = self._seen
        if self.version != seen:
            self.version = seen
            self.signal.notify()

    def _lease_ms(self) -> int:
        """The lease in milliseconds, as the statements compare it with the database's clock
        (every instance on a store is meant to have the same one)."""
        return int(self.lease_s * 1000)

    def _renew(self) -> None:
        # three renewals may fail (a slow store) before a lease lapses
        while not self._closed.wait(self.lease_s / 4):
            with self._lock:
                ids = list(self._holding)
            if not ids:
                continue
            try:
                self.store.statement(RENEW, {"ids": ids})
            except StoreError as exc:
                _log.warning("approval holds not renewed", holds=len(ids), error=str(exc))

    def _woken(self) -> None:
        try:
            self.recheck()
        except StoreError as exc:
            _log.warning("approvals not read after a notification", error=str(exc))

    # -- inside -------------------------------------------------------------------------------

    def _clock(self, row: tuple[Any, ...]) -> None:
        self._offset_ms = int(row[-1]) - time.time_ns() // 1_000_000

    def _apply(self, rows: list[tuple[Any, ...]], *, tell: bool) -> list[Approval]:
        """Bring this instance's copies in line with ``rows`` (the same objects are updated, so
        their waiters wake); with ``tell`` the listeners hear of each one answered."""
        items: list[Approval] = []
        settled: list[Approval] = []
        with self._lock:
            for row in rows:
                fresh = read_approval(row)
                item = self._pending.get(fresh.id) or self._answered.get(fresh.id)
                if item is None:
                    item = fresh
                    if fresh.state == "pending":
                        self._pending[item.id] = item
                    else:
                        self._keep_answered(item)
                elif item.state == "pending" and fresh.state != "pending":
                    for name in ("state", "answered_by", "answered_ms", "answer_reason"):
                        setattr(item, name, getattr(fresh, name))
                    item.answer_args = fresh.answer_args
                    del self._pending[item.id]
                    self._keep_answered(item)
                    settled.append(item)
                items.append(item)
        # the listeners hear of an answer from the instance whose statement gave it
        self._settled(settled, tell=False)
        if tell:
            self._settled([i for i in items if i.state != "pending"], tell=True)
        return items


def _one_int(row: tuple[Any, ...] | None) -> int:
    if row is None:
        raise StoreError("postgresql", "the approvals' head row is missing")
    return int(row[0])
