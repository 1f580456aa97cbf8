"""The lifecycle event in flight, and what the hooks decided about it.

The instrumentation builds a :class:`LiveEvent` as an action starts and hands it to the
:class:`~otelhooks.HooksEngine` (``start``); the engine runs its interceptors and returns a
:class:`Verdict`. Events that happen when the span ends (``after_tool_call``, ``on_complete``,
...) are added with ``follow`` and handed over by ``end``.

Payloads are built lazily: when no hook matches, no pydantic model is ever created.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanContext
from opentelemetry.util.types import AttributeValue

from otelhooks import _semconv as sc
from otelhooks._events import HookEvent, ToolResult
from otelhooks._hook_step import HookStep

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["Answered", "ApprovalNote", "LiveEvent", "Verdict", "persist_event", "refusal"]


@dataclass(slots=True, frozen=True)
class ApprovalNote:
    """How one ``approval:`` hook's call was answered: who, when, what.

    The caller that owns the span of the call writes it there as an ``approve`` or ``reject``
    span event (:meth:`attributes`), so it reaches every exporter of that span.

    Attributes:
        hook_id: the approval hook.
        approval_id: the inbox's id of the approval.
        tool: what was asked about (``identifier/apiName``, or the event).
        decision: ``allow`` or ``deny``.
        answered_by: the answer's ``by`` (``browser``, ``api``, a name), or ``timeout`` when the
            hook's default applied.
        answered_ms: when, Unix epoch milliseconds.
        reason: the person's reason (empty when none was given).
        args: the edited arguments of an allow (never written on a span), else None.
    """

    hook_id: str
    approval_id: str
    tool: str
    decision: str
    answered_by: str
    answered_ms: int
    reason: str = ""
    args: Mapping[str, Any] | None = None

    @property
    def event_name(self) -> str:
        """The span event's name: ``otelhooks.approve`` or ``otelhooks.reject``."""
        return sc.EVENT_APPROVE if self.decision == "allow" else sc.EVENT_REJECT

    def attributes(self) -> dict[str, AttributeValue]:
        """The span event's attributes (``otelhooks.approval.*``; no argument values)."""
        return {
            sc.APPROVAL_HOOK_ID: self.hook_id,
            sc.APPROVAL_ID: self.approval_id,
            sc.APPROVAL_TOOL: self.tool,
            sc.APPROVAL_DECISION: self.decision,
            sc.APPROVAL_ANSWERED_BY: self.answered_by,
            sc.APPROVAL_ANSWERED_MS: self.answered_ms,
            sc.APPROVAL_REASON: self.reason,
            sc.APPROVAL_TIMED_OUT: self.answered_by == "timeout",
            sc.APPROVAL_ARGS_EDITED: self.args is not None,
        }


@dataclass(slots=True, frozen=True)
class Answered:
    """What an ``approval:`` action returns: its handler result and the note of the answer
    (the dispatcher keeps the note in :attr:`Verdict.approvals` and applies the result)."""

    result: Any
    note: ApprovalNote


@dataclass(slots=True)
class Verdict:
    """What the intercept hooks decided.

    Attributes:
        blocked: the action must not happen (tool denied, message dropped, run refused).
        reason: why, for a block.
        decided_by: the hook id that blocked.
        payload: the event payload after every rewrite.
        rewritten_by: hook ids that changed the payload, in order.
        mock: the accepted mock result of a tool call, and ``mocked_by`` its hook.
        errors: ``hook id: problem`` for each hook that failed.
        matched: ids of the intercept hooks that matched, in the order they ran.
        would_call: control webhooks and approvals a dry run (``HooksEngine.dry_run``) did
            not ask.
        steps: what each hook that ran did, in order.
        approvals: how each ``approval:`` hook that ran was answered, in order.
    """

    payload: HookEvent | None = None
    blocked: bool = False
    reason: str | None = None
    decided_by: str | None = None
    rewritten_by: list[str] = field(default_factory=list)
    mock: ToolResult | None = None
    mocked_by: str | None = None
    errors: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    would_call: list[str] = field(default_factory=list)
    steps: list[HookStep] = field(default_factory=list)
    approvals: list[ApprovalNote] = field(default_factory=list)


def refusal(problem: str) -> Verdict:
    """The verdict on a tool call otelhooks itself refuses before any hook runs (its arguments'
    types are not the ones the tool's schema declares): a deny decided by ``otelhooks``, which
    every runtime records and tells ``on_tool_call_denied`` observers as it does a hook's deny.

    Example:
        >>> refusal("arguments.force is string").reason
        'otelhooks refused the call: arguments.force is string'
    """
    return Verdict(
        blocked=True,
        reason=f"otelhooks refused the call: {problem}",
        decided_by=sc.DECIDED_BY_OTELHOOKS,
    )


def persist_event(verdict: Verdict) -> dict[str, AttributeValue]:
    """The attributes of a tool span's ``tool_result_persist`` event: whether its hooks blocked
    the result (and then which hook, and why, as a deny's span says), rewrote it, and matched.

    Example:
        >>> persist_event(Verdict(blocked=True, reason="leak", decided_by="scan"))[
        ...     "otelhooks.hook.decided_by"]
        'scan'
    """
    attrs: dict[str, AttributeValue] = {
        sc.MESSAGE_BLOCKED: verdict.blocked,
        sc.HOOK_REWRITTEN_BY: verdict.rewritten_by,
        sc.HOOK_MATCHED: verdict.matched,
    }
    if verdict.blocked:
        attrs[sc.HOOK_DECIDED_BY] = verdict.decided_by or ""
        attrs[sc.HOOK_DECISION_REASON] = verdict.reason or ""
    return attrs


class LiveEvent:
    """One lifecycle event on its way to the engine.

    ``build()`` makes the payload when a hook needs it, so an event no hook matches costs no
    pydantic model. The engine builds it before this returns to the runtime, whose inputs may
    change afterwards, unless ``snapshot`` says that ``build`` holds its own copy of every value
    it needs: then the observer worker builds it, off the agent's thread.

    Example:
        >>> from otelhooks.events import AfterStepEvent
        >>> live = LiveEvent("after_step", lambda: AfterStepEvent(stepIndex=0))
        >>> live.payload().stepIndex
        0
    """

    __slots__ = (
        "_build",
        "_payload",
        "critical",
        "deferred",
        "followups",
        "hooks",
        "name",
        "operation_id",
        "snapshot",
        "span_context",
        "values",
        "verdict",
    )

    def __init__(
        self,
        name: str,
        build: Callable[[], HookEvent],
        *,
        values: tuple[str, ...] = ("*",),
        operation_id: str | None = None,
        deferred: bool = False,
        snapshot: bool = False,
    ) -> None:
        self.name = name
        self._build: Callable[[], HookEvent] | None = build
        self._payload: HookEvent | None = None
        self.values = values
        self.operation_id = operation_id
        self.deferred = deferred
        self.snapshot = snapshot
        # The observers the engine queued it for (set by the engine; the worker runs them).
        self.hooks: Sequence[Hook] = ()
        self.verdict: Verdict | None = None
        # The end events (``follow``): a list only once an event has one, as most have none.
        self.followups: Sequence[LiveEvent] = ()
        # A fallback-none delivery failed: the instrumentation raises it once the span is safe.
        self.critical: Exception | None = None
        self.span_context: SpanContext | None = None  # of the event's span, once started

    def log_ids(self) -> dict[str, str]:
        """``trace_id`` and ``span_id`` of the event's span, for a log line about one of its
        hooks: the current span is the caller's (a tool call's interceptors run before its span
        is current; observers run on a worker with no current span)."""
        ctx = self.span_context
        if ctx is not None and ctx.is_valid:
            return {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
        payload = self._payload  # a built payload carries its span's ids
        if payload is not None and payload.traceId and payload.spanId:
            return {"trace_id": payload.traceId, "span_id": payload.spanId}
        return {}

    def payload(self) -> HookEvent:
        """The event's payload, built on first use (with its span's ids, when it has a span)."""
        if self._payload is None:
            if self._build is None:
                raise RuntimeError("this event was released when its span ended, unbuilt")
            payload = self._build()
            ctx = self.span_context
            if ctx is not None and ctx.is_valid and payload.traceId is None:
                payload.traceId = format(ctx.trace_id, "032x")
                payload.spanId = format(ctx.span_id, "016x")
            self._payload = payload
            # The builder may hold the whole scope (its span, its step): an event waiting in
            # the observer queue keeps only its payload.
            self._build = None
        return self._payload

    def release(self) -> None:
        """Forget the builder and the end events once the engine has what it needs: both may
        hold the scope that holds this event, a cycle only the garbage collector would free."""
        self._build = None
        self.followups = ()

    def follow(self, name: str, build: Callable[[], HookEvent], *, snapshot: bool = False) -> None:
        """Add an event that happens when this event's span ends (handed over by
        ``HooksEngine.end``)."""
        follow = LiveEvent(
            name, build, values=self.values, operation_id=self.operation_id, snapshot=snapshot
        )
        follow.span_context = self.span_context
        if isinstance(self.followups, list):
            self.followups.append(follow)
        else:
            self.followups = [follow]
