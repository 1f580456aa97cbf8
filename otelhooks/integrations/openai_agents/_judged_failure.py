"""What other listeners learn of a hooked function tool's failure once ``tool_result_persist``
hooks judged the message the SDK made of it for the model.

The SDK tells the exception's own text to two more places: the error it attaches to its
tracing span (``data["error"]``, which every tracing processor exports, with
``trace_include_sensitive_data`` and a failure function of the tool's or the run's), and the
exception otelhooks records on its ``execute_tool`` span (an ``exception`` event, exported over
OTLP). A redaction that hid a token from the model would leave it in both: they carry the
hooks' text instead.
"""

from __future__ import annotations

from typing import Any

from agents.tracing import SpanError

__all__ = ["judged_exception", "judged_span_error"]


def judged_exception(exc: Exception, kept: str) -> Exception:
    """An exception of ``exc``'s type made from the hooks' text ``kept`` alone, with its
    traceback (where it failed; no values); one saying its type when the type wants more."""
    try:
        again = type(exc)(kept)
    except Exception:  # a constructor wanting more than the text
        again = None
    if not isinstance(again, Exception):
        again = RuntimeError(f"{type(exc).__name__}: {kept}")
    return again.with_traceback(exc.__traceback__)


def judged_span_error(span: Any, kept: str) -> None:
    """Put the hooks' text in place of the exception's in the error the SDK attached to its
    tracing ``span`` (its function span, still open)."""
    error = getattr(span, "error", None)
    if not isinstance(error, dict):
        return
    data = error.get("data")
    if isinstance(data, dict) and data.get("error"):
        span.set_error(
            SpanError(message=str(error.get("message", "")), data={**data, "error": kept})
        )
