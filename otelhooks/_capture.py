"""The GenAI content-capture switch, read from the environment: one definition for the spans
(:class:`~otelhooks.AgentTracer`) and the webhook bodies (:class:`~otelhooks.PayloadBuilder`)."""

from __future__ import annotations

import os

from otelhooks import _semconv as sc

__all__ = ["capture_from_env"]


def capture_from_env() -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` turns capture on
    (``true``, ``1`` or ``yes``, any case)."""
    return os.environ.get(sc.ENV_CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")
