"""Scopes opened in one framework callback and closed in another.

A :class:`~otelhooks._instrument.SpanScope` attaches its span to the OTel Context on enter and
detaches it on exit, which must happen in the same ``contextvars.Context``. Framework callbacks
(LangChain handlers, Agents SDK run hooks) start and end a span in different calls, often on
different tasks or threads, so each :class:`DetachedScope` owns a private ``contextvars.Context``:
enter and exit both run inside it, under an explicit parent span, and nothing leaks into the
framework's own context.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Generic, TypeVar

import structlog
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._instrument import SpanScope

__all__ = ["DetachedScope"]

S = TypeVar("S", bound=SpanScope)

_log = structlog.get_logger("otelhooks")


class DetachedScope(Generic[S]):
    """``scope`` entered and exited in its own ``contextvars.Context`` under ``parent``.

    Args:
        scope: the otelhooks scope (an operation, step, LLM call, tool call, ...).
        parent: the span the scope's span is a child of (``None``: a new trace).
    """

    def __init__(self, scope: S, parent: Span | None) -> None:
        self.scope = scope
        self.closed = False
        self._ctx = contextvars.Context()
        self._parent = parent

    def _attach_parent(self) -> None:
        if self._parent is not None:
            otel_context.attach(trace.set_span_in_context(self._parent))

    def enter(self) -> S:
        """Enter synchronously (intercept hooks, if any, run on the calling thread)."""

        def run() -> None:
            self._attach_parent()
            self.scope.__enter__()

        self._ctx.run(run)
        return self.scope

    async def aenter(self) -> S:
        """Enter from async code: intercept hooks are awaited, off the event loop thread."""

        async def run() -> None:
            self._attach_parent()
            await self.scope.__aenter__()

        await asyncio.create_task(run(), context=self._ctx)
        return self.scope

    def exit(self, exc: BaseException | None = None) -> None:
        """End the span (recording ``exc`` as its error); a second call does nothing.

        A ``fallback: none`` delivery failure is logged here: a framework callback has no one to
        raise it to.
        """
        if self.closed:
            return
        self.closed = True
        try:
            self._ctx.run(
                self.scope.__exit__,
                type(exc) if exc is not None else None,
                exc,
                exc.__traceback__ if exc is not None else None,
            )
        except CriticalHookDeliveryError:
            _log.exception("critical hook delivery failed", span=type(self.scope).__name__)
