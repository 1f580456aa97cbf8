"""The lifecycle event in flight, and what the hooks decided about it.

The instrumentation builds a :class:`LiveEvent` as an action starts and hands it to the
:class:`~otelhooks.HooksEngine` (``start``); the engine runs its interceptors and returns a
:class:`Verdict`. Events that happen when the span ends (``after_tool_call``, ``on_complete``,
...) are queued on ``followups`` and handed over by ``end``.

Payloads are built lazily: when no hook matches, no pydantic model is ever created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanContext

from otelhooks._events import HookEvent, ToolResult

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["HookStep", "LiveEvent", "Verdict"]

_object_new = object.__new__


@dataclass(slots=True, frozen=True)
class HookStep:
    """What one intercept hook did in a chain.

    Attributes:
        hook_id, kind: the hook and its action kind (``handler``, ``command``, ``webhook``...).
        outcome: ``ok``, ``rewritten``, ``blocked``, ``mocked``, ``error`` or ``timeout``.
        error: the problem, for ``error`` and ``timeout`` (known secrets scrubbed).
    """

    hook_id: str
    kind: str
    outcome: str
    error: str | None = None


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
        would_call: control webhooks a dry run (``HooksEngine.decide``) did not call.
        steps: what each hook that ran did, in order.
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


class LiveEvent:
    """One lifecycle event on its way to the engine.

    ``build(*args)`` makes the payload when a hook needs it. With ``snapshot=True`` it holds
    its own copy of every value the payload needs, taken when the event happened (``args``,
    plain values, not a closure over the scope): an observed event is then queued as it is and
    the observer worker builds the model, so observing costs the agent a few copies instead of
    a pydantic build, and the scope and its span are not kept alive while the event waits.
    """

    __slots__ = (
        "_args",
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
        build: Callable[..., HookEvent],
        *,
        values: tuple[str, ...] = ("*",),
        operation_id: str | None = None,
        deferred: bool = False,
        snapshot: bool = False,
        hooks: list[Hook] | None = None,
        args: tuple[Any, ...] = (),
    ) -> None:
        self.name = name
        # The hooks that match it, when the caller asked the registry already (for this event,
        # with these values, at the current registry version): not matched again. Once queued
        # for observers: those the observer worker runs.
        self.hooks = hooks
        self._build = build
        # build's arguments: a snapshot's plain values, held here rather than in a partial
        # (one object less for each observed event waiting in the queue, which the garbage
        # collector's young generation traverses until the worker takes it).
        self._args = args
        self.snapshot = snapshot
        self._payload: HookEvent | None = None
        self.values = values
        self.operation_id = operation_id
        self.deferred = deferred
        self.verdict: Verdict | None = None
        # A list once an event follows: most events have none, and the shared empty tuple
        # spares allocating a list for each of them.
        self.followups: list[LiveEvent] | tuple[()] = ()
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
        payload = self._payload  # a snapshot's payload carries its span's ids
        if payload is not None and payload.traceId and payload.spanId:
            return {"trace_id": payload.traceId, "span_id": payload.spanId}
        return {}

    @classmethod
    def from_snapshot(
        cls,
        name: str,
        build: Callable[..., HookEvent],
        args: tuple[Any, ...],
        values: tuple[str, ...],
        operation_id: str | None,
        hooks: list[Hook],
    ) -> LiveEvent:
        """``LiveEvent(name, build, args=args, values=values, operation_id=operation_id,
        snapshot=True, hooks=hooks)``, at half the cost: an event that happened, with the
        values its payload needs and the hooks that match it, for the hot path (an observed
        tool call's end). Calling the class with keywords builds a dict of them and goes
        through ``type.__call__``: about 3,000 instructions of the agent's, measured.
        ``tests/test_live_event.py`` holds the two equal, slot by slot."""
        live = _object_new(cls)
        live.name = name
        live.hooks = hooks
        live._build = build
        live._args = args
        live.snapshot = True
        live._payload = None
        live.values = values
        live.operation_id = operation_id
        live.deferred = False
        live.verdict = None
        live.followups = ()
        live.critical = None
        live.span_context = None
        return live

    def payload(self) -> HookEvent:
        if self._payload is None:
            payload = self._build(*self._args)
            ctx = self.span_context
            if ctx is not None and ctx.is_valid and payload.traceId is None:
                _set_ids(payload, ctx.trace_id.to_bytes(16).hex(), ctx.span_id.to_bytes(8).hex())
            self._payload = payload
            # The builder's closure may hold the whole scope (its span, its step): an event
            # waiting in the observer queue must keep only its payload.
            self._build, self._args = _built, ()
        return self._payload

    def freeze(self) -> None:
        """Fix what the payload will hold, now: build it, unless ``build`` is a snapshot (then
        whoever calls :meth:`payload` first builds it)."""
        if self._payload is None and not self.snapshot:
            self.payload()

    def release(self) -> None:
        """Forget the builder and the end events once the event was handed over (the engine
        queued what it needed). Both may hold the scope that holds this event: a reference
        cycle that would keep the scope, its span and its step alive until the garbage
        collector ran (about 12,000 instructions per observed tool call, measured)."""
        if self._payload is None:
            self._build, self._args = _released, ()
        self.followups = ()

    def follow(
        self,
        name: str,
        build: Callable[[], HookEvent],
    ) -> None:
        """Queue an event that happens when this event's span ends."""
        follow = LiveEvent(name, build, values=self.values, operation_id=self.operation_id)
        follow.span_context = self.span_context
        if self.followups:
            self.followups.append(follow)  # a list once non-empty
        else:
            self.followups = [follow]


def _set_ids(payload: HookEvent, trace_id: str, span_id: str) -> None:
    """``payload.traceId = trace_id`` and ``payload.spanId = span_id``: what pydantic's
    ``__setattr__`` does for declared fields of a model that does not validate assignment,
    without its generic checks (a fifth of building an observed tool call's payload)."""
    if type(payload).model_config.get("validate_assignment"):
        payload.traceId, payload.spanId = trace_id, span_id
        return
    values = payload.__dict__
    values["traceId"], values["spanId"] = trace_id, span_id
    payload.__pydantic_fields_set__.update(("traceId", "spanId"))


def _built() -> HookEvent:
    raise AssertionError("a LiveEvent builds its payload once")  # pragma: no cover


def _released() -> HookEvent:
    raise RuntimeError("this event was released when its span ended; its payload was not built")
