"""structlog set-up: every log line inside a span carries ``trace_id`` and ``span_id``."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry import trace

__all__ = ["add_trace_context", "configure_logging"]


def add_trace_context(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: add the current span's ids (nothing outside a span)."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict.setdefault("trace_id", format(ctx.trace_id, "032x"))
        event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    return event_dict


def configure_logging(*, json: bool = False) -> None:
    """Configure structlog with :func:`add_trace_context` in its chain.

    Example:
        >>> configure_logging()
        >>> structlog.get_logger().info("tool ran")  # carries trace_id/span_id inside a span
    """
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            add_trace_context,
            renderer,
        ],
        cache_logger_on_first_use=False,
    )
