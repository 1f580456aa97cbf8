"""An approval card: one call waiting for a person, then its answer, and the rules both inboxes
(this process's and a fleet's shared one) read of a card: whether a second ask joins it, when its
lease ends."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CLIENT_GONE",
    "LAPSED",
    "LEASE_ENV",
    "LEASE_S",
    "MIN_LEASE_S",
    "WITHDRAWN",
    "Approval",
    "Decision",
    "InboxFull",
    "epoch_ms",
    "joins",
    "lapsed_at",
    "lapsed_reason",
    "serve_lease",
]

Decision = Literal["allow", "deny"]

WITHDRAWN = "the asker stopped waiting: nobody waits for this answer any more"
#: seconds a pending card lives with none of its askers waiting on it (no long-poll open, no
#: look, no waiter in this process): far above the gap between two long-polls (milliseconds) and
#: an asker's looks once a second when serve has no room for its long-poll, far below an
#: approval's timeout. An asker killed between two long-polls, or an older one that does not
#: send ``asker=1``, leaves its card withdrawn after it instead of approvable to its deadline.
#: The default: ``otelhooks serve --approval-lease`` (``$OTELHOOKS_APPROVAL_LEASE``) sets an
#: inbox's :attr:`~otelhooks._actions._approval_inbox.ApprovalInbox.lease_s`.
LEASE_S = 10.0
#: the shortest lease: twice the second between an asker's looks when serve has no room for
#: its long-poll, so a live asker's card never lapses between two of them
MIN_LEASE_S = 2.0


def lapsed_reason(lease_s: float = LEASE_S) -> str:
    """The reason of a card withdrawn because none of its askers looked for ``lease_s``."""
    return (
        f"no asker has waited on this card for {lease_s:g} s (killed, or gone between two "
        "long-polls): nobody waits for this answer any more"
    )


#: the reason of a card withdrawn because none of its askers looked for :data:`LEASE_S`
LAPSED = lapsed_reason(LEASE_S)
#: the environment variable ``otelhooks serve`` reads the lease from when no option gives it
LEASE_ENV = "OTELHOOKS_APPROVAL_LEASE"


def serve_lease(value: float | None = None) -> float:
    """The lease ``serve`` gives its inbox: ``value``, else ``$OTELHOOKS_APPROVAL_LEASE``, else
    :data:`LEASE_S`.

    Raises:
        ConfigError: not a number of seconds, or below :data:`MIN_LEASE_S`.
    """
    from otelhooks._errors import ConfigError

    where = "the approval lease"
    if value is None:
        text = os.environ.get(LEASE_ENV, "").strip()
        if not text:
            return LEASE_S
        where = f"the approval lease ({LEASE_ENV})"
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{LEASE_ENV} must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value < MIN_LEASE_S:
        raise ConfigError(
            f"{where} must be at least {MIN_LEASE_S:g} s (an asker looks once a second), "
            f"not {value:g}"
        )
    return float(value)


#: the reason of a card withdrawn because the client of the call gave up (an ``Asker`` gone)
CLIENT_GONE = (
    "the client that asked stopped waiting (its own hook timeout, an interrupt): nobody waits "
    "for this answer any more, and the client went on without it"
)


class InboxFull(Exception):
    """The inbox holds ``max_pending`` waiting calls already."""


@dataclass
class Approval:
    """One call waiting for a person, then its answer.

    Attributes:
        id: random, unguessable (it is the answer's address).
        hook_id, event, tool: which hook asked, on which event, for which tool.
        args: the call's arguments (shown only when the server captures content).
        agent, session, user: who is calling, when known.
        trace_id, span_id: the span of the call, when known.
        created_ms, deadline_ms: Unix epoch milliseconds.
        default: what applies at the deadline.
        reason: why the hook asks (shown to the person; the deny reason by default).
        editable: the runtime accepts edited arguments with an allow.
        call: the session and tool call id of the call held ("" when the runtime gives none):
            one card per call (:func:`joins`).
        askers, leaving, held_ms: how many holds are open (:meth:`ApprovalInbox.hold`), how
            many of them are of askers gone already, and when one last began or ended (the
            inbox's clock; creation at first): the lease.
        state: ``pending``, ``allowed``, ``denied``.
        answered_by: ``who`` of the answer (``timeout`` when the default applied).
        answered_ms, answer_reason, answer_args: the rest of the answer.
    """

    id: str
    hook_id: str
    event: str
    tool: str
    args: dict[str, Any]
    agent: str
    session: str
    user: str
    trace_id: str
    span_id: str
    created_ms: int
    deadline_ms: int
    default: Decision
    reason: str
    editable: bool
    call: str = ""
    askers: int = 0
    leaving: int = 0
    held_ms: int = 0
    state: str = "pending"
    answered_by: str = ""
    answered_ms: int = 0
    answer_reason: str = ""
    answer_args: dict[str, Any] | None = None
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _loops: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(
        default_factory=list, repr=False
    )

    @property
    def decision(self) -> Decision | None:
        """``allow`` / ``deny`` once answered."""
        return {"allowed": "allow", "denied": "deny"}.get(self.state)  # type: ignore[return-value]

    def to_json(self, *, content: bool = True, now_ms: int | None = None) -> dict[str, Any]:
        """The JSON of ``GET /v1/approvals`` (arguments left out without ``content``;
        ``time_left_s`` by ``now_ms``, the clock of the deadline: :meth:`ApprovalInbox.now_ms`)."""
        now_ms = epoch_ms() if now_ms is None else now_ms
        body = {
            "id": self.id,
            "hook_id": self.hook_id,
            "event": self.event,
            "tool": self.tool,
            "agent": self.agent,
            "session": self.session,
            "user": self.user,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "created_ms": self.created_ms,
            "deadline_ms": self.deadline_ms,
            "time_left_s": max(0.0, (self.deadline_ms - now_ms) / 1000),
            "default": self.default,
            "reason": self.reason,
            "editable": self.editable and content,
            "state": self.state,
            "decision": self.decision,
            "answered_by": self.answered_by,
            "answered_ms": self.answered_ms,
            "answer_reason": self.answer_reason,
        }
        if content:
            body["args"] = self.args
            body["answer_args"] = self.answer_args
        return body


def epoch_ms() -> int:
    """Unix epoch milliseconds."""
    return time.time_ns() // 1_000_000


def joins(
    item: Approval, *, hook_id: str, event: str, call: str, args: dict[str, Any], now_ms: int
) -> bool:
    """Whether asking ``hook_id`` about ``call`` again (a client or a load balancer retrying
    a hook input, a second instance reached) gets ``item`` instead of a card of its own: the
    same hook, event, call and arguments, and ``item`` still pending, or answered by a person or
    its default before its deadline (``now_ms``: the deadline's clock) passed. Two cards of one
    call would let the retry's default allow what a person denied on the other. A card its
    asker withdrew is not joined (nobody answered it: the retry's asker waits for a person),
    and an answer past its card's deadline answers no later ask (a runtime reusing a call id,
    an MCP client its request ids, is asked again). Arguments a person edited are asked about
    again (they differ). The rule of both inboxes (a shared one reads its candidates from the
    database)."""
    return (
        bool(call)
        and item.call == call
        and item.hook_id == hook_id
        and item.event == event
        and item.args == args
        and (item.state == "pending" or (item.answered_by != "asker" and now_ms < item.deadline_ms))
    )


def lapsed_at(item: Approval, lease_s: float = LEASE_S) -> float:
    """When ``item``'s lease ends (epoch milliseconds, by its inbox's clock): ``lease_s``
    after its last asker stopped waiting on it or looked; never while one waits."""
    return math.inf if item.askers > item.leaving else item.held_ms + lease_s * 1000
