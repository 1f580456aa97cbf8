"""The span scope every instrumentation context manager is built on, and ``AgentTracer``.

A scope starts its span through the SDK and hands its lifecycle event to the tracer's
:class:`~otelhooks.HooksEngine` (``start``), makes the span current, and on exit records errors,
ends the span and hands the events that followed to the engine (``end``). The same scope works
with ``with`` and ``async with``; in async code the intercept hooks are awaited instead of run on
the calling thread.
"""

from __future__ import annotations

import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from otelhooks import _semconv as sc
from otelhooks._capture import capture_from_env
from otelhooks._engine import HooksEngine
from otelhooks._events import HookEvent
from otelhooks._instrument._spend import SessionSpend
from otelhooks._live import LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics
from otelhooks._redact import scrub
from otelhooks._span_mapping import (
    approval_events,
    security_findings,
    security_findings_enabled,
    verdict_attributes,
)
from otelhooks._version import __version__

if TYPE_CHECKING:
    from otelhooks._hooks import Hook
    from otelhooks._instrument._operation import Operation

__all__ = ["AgentTracer", "SpanScope", "record_failure", "record_verdict"]


class _HasEngine(Protocol):
    """What ``AgentTracer(hooks=...)`` needs of a hook processor: its engine."""

    @property
    def engine(self) -> HooksEngine: ...


def record_failure(span: Span, exc: BaseException, *, event: bool = True) -> None:
    """Mark ``span`` failed by ``exc``: status ``ERROR`` and ``error.type``, and (``event``)
    the ``exception`` event.

    The conventions ask that the same exception be recorded once: the event goes on the first
    span it leaves (where it happened), and the parents it propagates through (step,
    ``invoke_agent``, ``call_agent``) say they failed through their status. Which exception a
    scope inside already recorded is the scopes' own state (``SpanScope.fail``), never a mark on
    the exception, which is the caller's object.
    """
    message = str(exc)
    scrubbed = scrub(message)
    span.set_status(Status(StatusCode.ERROR, scrubbed))
    span.set_attribute(sc.ERROR_TYPE, sc.error_type(exc))
    if not event:
        return
    if scrubbed == message:
        span.record_exception(exc)
    else:
        # A tool's error can quote a known secret (a token it was given): keep it off the span.
        trace_text = "".join(traceback.format_exception(exc))
        span.record_exception(
            exc,
            attributes={"exception.message": scrubbed, "exception.stacktrace": scrub(trace_text)},
        )


class AgentTracer:
    """The runtime-facing API: creates operations, whose scopes create every other span.

    Every lifecycle event goes to one :class:`~otelhooks.HooksEngine` as its span starts and
    ends; the tracer never relies on a span processor to see it, so hooks hold whatever the
    sampler decides and whichever processors the provider has.

    Args:
        tracer_provider: the provider to create spans on (the global one when omitted).
        engine: the hooks engine (a new, empty one when omitted).
        hooks: instead of ``engine``: a :class:`~otelhooks.HookSpanProcessor` whose engine to use.
        metrics: where agent metrics are recorded (the engine's when omitted).
        capture_content: record prompts, completions, tool arguments and results as span
            attributes. Off by default; ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
            turns it on.
        provider: the ``gen_ai.provider.name`` (``openai``, ``anthropic``, ...) of operations
            and model calls that do not name their own. ``None``: the attribute is left out
            where nobody said which provider serves the model (otelhooks never guesses).

    Example:
        >>> engine = HooksEngine()
        >>> tracer = AgentTracer(engine=engine)
        >>> with tracer.operation("helper") as op, op.step() as step:
        ...     result = step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        engine: HooksEngine | None = None,
        hooks: _HasEngine | None = None,
        metrics: AgentMetrics | None = None,
        capture_content: bool | None = None,
        provider: str | None = None,
    ) -> None:
        self.provider = provider
        tracer_provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = tracer_provider.get_tracer(
            "otelhooks", __version__, schema_url=sc.SCHEMA_URL
        )
        if engine is None:
            engine = hooks.engine if hooks is not None else HooksEngine(metrics=metrics)
        self.engine = engine
        self._scope_claimed = False
        self.metrics = metrics if metrics is not None else engine.metrics
        self.capture_content = capture_from_env() if capture_content is None else capture_content
        # Sessions span operations: their running cost lives here (bounded, oldest out).
        self.sessions = SessionSpend()

    def operation(
        self,
        agent: str,
        *,
        input: str = "",
        session_id: str | None = None,
        user_id: str | None = None,
        hooks: Iterable[Hook | Mapping[str, Any]] = (),
        metadata: Mapping[str, Any] | None = None,
        agent_id: str | None = None,
        provider: str | None = None,
        operation_id: str | None = None,
        full_prompt: str | None = None,
        thread_id: str | None = None,
    ) -> Operation:
        """One agent run: the root ``invoke_agent {agent}`` span. See :class:`Operation`.

        Args:
            agent: the agent's name (``invoke_agent {agent}``).
            input: the run's input (``before_agent_start`` interceptors may rewrite it).
            session_id, user_id: the conversation and the user it belongs to.
            hooks: hooks for this run and the sub-agents it calls, removed when it ends.
            metadata: free-form fields passed to the run's hook events.
            agent_id: a stable id, when it differs from ``agent``.
            provider: the model provider (``gen_ai.provider.name``), e.g. ``openai``.
            operation_id: the run's id (a new one by default).
            full_prompt: the prompt as sent to the model, when it is more than ``input``.
            thread_id: the thread of an isolated run.
        """
        from otelhooks._instrument._operation import Operation

        return Operation(
            self,
            agent,
            input=input,
            session_id=session_id,
            user_id=user_id,
            hooks=hooks,
            metadata=metadata,
            agent_id=agent_id,
            provider=provider,
            operation_id=operation_id,
            full_prompt=full_prompt,
            thread_id=thread_id,
        )

    def emit(self, event: str, **fields: Any) -> Any:
        """Record a point event outside any operation (``gateway_start``, ``session_start``...).

        Inside a span it becomes a span event; with no span around it, a short
        ``agent_lifecycle {event}`` span. Its observer hooks fire either way.
        """
        from otelhooks._instrument._operation import emit_event

        return emit_event(self, event, fields)

    # -- internals shared by the scopes ---------------------------------------------------------

    def start_span(
        self,
        name: str,
        live: LiveEvent | None,
        *,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
        links: Sequence[Link] = (),
        parent: otel_context.Context | None = None,
    ) -> Span:
        """Start the span of ``live`` and dispatch it: interceptors run now (unless the caller
        awaits them: ``live.deferred``), observers are queued, and what the hooks did is
        written on the span. ``live`` is None when the caller knows no hook watches the start."""
        span = self._tracer.start_span(
            name, context=parent, kind=kind, attributes=attributes, links=links
        )
        if not self._scope_claimed:
            # Spans of this scope object are dispatched here; processors on the engine skip them.
            self.engine.claim_scope(getattr(span, "instrumentation_scope", None))
            self._scope_claimed = True
        if live is not None:
            live.span_context = span.get_span_context()
            if not live.deferred:
                record_verdict(span, live.name, self.engine.start(live))
        return span

    def matches(self, event: str, values: tuple[str, ...], operation_id: str | None) -> bool:
        """Whether any registered hook matches ``event`` now (a cached lookup)."""
        return self.engine.matches(event, values, operation_id)

    def observe(self, live: LiveEvent) -> None:
        """Hand a point event to the engine; raise a ``fallback: none`` failure."""
        self.engine.start(live)
        if live.critical is not None:
            critical, live.critical = live.critical, None
            raise critical


def record_verdict(span: Span, event: str, verdict: Verdict) -> None:
    """Write what the hooks of ``event`` did on its span (nothing when none matched and
    nothing was refused: see :func:`~otelhooks._live.refusal`)."""
    if (verdict.matched or verdict.blocked) and span.is_recording():
        span.set_attributes(verdict_attributes(event, verdict))
        for name, attrs, at in approval_events(verdict):  # who answered, on the call's span
            span.add_event(name, attrs, timestamp=at)
        if security_findings_enabled():
            for name, attrs in security_findings(verdict):
                span.add_event(name, attrs)


class SpanScope(ABC):
    """A span with a lifecycle event, usable with ``with`` and ``async with``."""

    span: Span
    # Class-level defaults: a scope is made per action, and every attribute stored in
    # ``__init__`` is paid on the agent's hot path.
    _live: LiveEvent | None = None
    _token: object | None = None
    _started = 0.0
    _error: BaseException | None = None
    # The scope an exception leaving this one propagates into next (None: none of ours), and
    # the exception a scope inside this one recorded last: an exception is recorded once, on
    # the span it left first, and exceptions take no weak references, so the scopes remember.
    _outer: SpanScope | None = None
    _recorded_inside: BaseException | None = None

    def __init__(self, tracer: AgentTracer, outer: SpanScope | None = None) -> None:
        self.tracer = tracer
        self._outer = outer

    @property
    def live(self) -> LiveEvent:
        """This scope's lifecycle event (made on first use by a scope that started without one
        because no hook watched its start: see :meth:`_quiet_event`)."""
        live = self._live
        if live is None:
            live = self._live = self._quiet_event()
        return live

    def _quiet_event(self) -> LiveEvent:
        """The event of a scope that started without one, to hang end events on."""
        raise TypeError(f"{type(self).__name__} always starts with its event")

    # Subclasses implement _open and _close, and override _after_verdict when they intercept.
    @abstractmethod
    def _open(self, *, deferred: bool) -> None:
        """Start the span with its lifecycle event (``deferred``: the caller awaits intercepts)."""

    def _after_verdict(self, verdict: Verdict | None) -> None:  # noqa: B027 - optional hook
        """Apply intercept results (only scopes that start an interceptable event override).
        Called only for a scope that started with its event."""

    @abstractmethod
    def _close(self, exc: BaseException | None) -> None:
        """Record the outcome and queue the end events, before the span ends."""

    def _follow(self, name: str, build: Callable[[], HookEvent]) -> None:
        """Queue the end event ``name`` on this scope's event, if a hook matches it.

        Matching happens again when the span ends; checking here (just before) spares building
        the event's closure, and what it captures, for the calls no hook watches.
        """
        live = self.live
        if self.tracer.matches(name, live.values, live.operation_id):
            live.follow(name, build)

    def _begin(
        self,
        name: str,
        live: LiveEvent | None,
        *,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
        links: Sequence[Link] = (),
        parent: otel_context.Context | None = None,
    ) -> None:
        # The options spelled out, not **kwargs: that packed and unpacked a dict per span.
        self._live = live
        self._started = time.perf_counter()
        self.span = self.tracer.start_span(
            name, live, attributes=attributes, kind=kind, links=links, parent=parent
        )
        self._token = otel_context.attach(self._in_context(trace.set_span_in_context(self.span)))

    def _in_context(self, ctx: otel_context.Context) -> otel_context.Context:
        """The context this scope makes current: its span's, plus what the scope adds (an
        operation and a step put themselves in it: see ``_current``)."""
        return ctx

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self._started

    def fail(self, exc: BaseException) -> None:
        """Record ``exc`` as this scope's error without raising it."""
        self._error = exc
        record_failure(self.span, exc, event=exc is not self._recorded_inside)
        if self._outer is not None:
            self._outer._recorded_inside = exc

    def _finish(self) -> None:
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        self.span.end()
        live = self._live
        if live is not None:
            self.tracer.engine.end(live)
            live.release()
            if live.critical is not None:
                # A fallback-none hook asked for this: raised once the span is complete.
                critical, live.critical = live.critical, None
                raise critical

    def __enter__(self) -> Self:
        self._open(deferred=False)
        live = self._live
        if live is not None:  # else no hook watched the start: nothing to apply
            try:
                self._after_verdict(live.verdict)
            except BaseException as exc:
                self.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and self._error is None:
            self.fail(exc)
        try:
            self._close(self._error)
        finally:
            self._finish()

    async def __aenter__(self) -> Self:
        self._open(deferred=True)
        live = self._live
        if live is not None:
            try:
                verdict = live.verdict  # decided already: a call otelhooks refused
                if live.deferred:
                    verdict = await self.tracer.engine.astart(live)
                    record_verdict(self.span, live.name, verdict)
                self._after_verdict(verdict)
            except BaseException as exc:
                # ``async with`` never calls ``__aexit__`` for an ``__aenter__`` that raised: a
                # runtime cancelling a call while its hooks decide (a tool timeout,
                # ``asyncio.wait_for``) left the span open, never exported, the call unrecorded.
                self.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)
