"""structlog set-up: every log line inside a span carries ``trace_id`` and ``span_id``, and no
line carries a known secret (:mod:`otelhooks._redact`)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry import trace

from otelhooks._redact import registry

__all__ = ["add_trace_context", "configure_logging", "scrub_secrets"]

_PLAIN = (bool, int, float, type(None))


def add_trace_context(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: add the current span's ids (nothing outside a span)."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict.setdefault("trace_id", format(ctx.trace_id, "032x"))
        event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    return event_dict


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return registry.scrub(value)
    if isinstance(value, _PLAIN):
        return value
    text = f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else str(value)
    clean = registry.scrub(text)
    # Rendered as text only when it held a secret: otherwise the renderer keeps its own format.
    return value if clean == text else clean


def scrub_secrets(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: replace known secrets (:mod:`otelhooks._redact`) with
    ``[REDACTED]`` in every value of the line, the message included.

    A hook's error text or output can quote an environment secret; this is the last place to
    catch it before a line is written. Put it just before the renderer. With ``exc_info`` the
    traceback is formatted here (when a secret is registered), so its text is scrubbed too.

    Example (your own structlog chain):
        >>> structlog.configure(processors=[..., otelhooks.scrub_secrets, JSONRenderer()])
    """
    if not len(registry):
        return event_dict
    if event_dict.get("exc_info"):
        event_dict = structlog.processors.format_exc_info(logger, method_name, event_dict)
    for key, value in event_dict.items():
        event_dict[key] = _scrubbed(value)
    return event_dict


def configure_logging(*, json: bool = False) -> None:
    """Configure structlog with :func:`add_trace_context` and :func:`scrub_secrets` in its chain.

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
            scrub_secrets,
            renderer,
        ],
        cache_logger_on_first_use=False,
    )
