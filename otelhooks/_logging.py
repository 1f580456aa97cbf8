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
    """structlog processor: replace known secrets (:func:`~otelhooks.register_secret`) with
    ``[REDACTED]`` in every value of the line, the message included.

    A hook's error text or output can quote an environment secret; this is the last place to
    catch it before a line is written. Put it just before the renderer. With ``exc_info`` the
    traceback is formatted here (when a secret is registered), so its text is scrubbed too.

    Example (your own structlog chain):
        >>> import structlog
        >>> from otelhooks import register_secret, scrub_secrets
        >>> register_secret("hunter2-token")  # a webhook's allowedEnvVars values are registered
        True
        >>> structlog.configure(processors=[scrub_secrets, structlog.processors.JSONRenderer()])
        >>> structlog.get_logger().warning("hook failed", error="401 for hunter2-token")
        {"error": "401 for [REDACTED]", "event": "hook failed"}
        >>> structlog.reset_defaults()
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
        >>> import structlog
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from otelhooks import configure_logging
        >>> configure_logging()
        >>> with TracerProvider().get_tracer("demo").start_as_current_span("tool"):
        ...     structlog.get_logger().info("tool ran")
        20...Z [info     ] tool ran    span_id=... trace_id=...
        >>> structlog.reset_defaults()
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
