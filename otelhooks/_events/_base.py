"""What every lifecycle event's pydantic payload model shares (:class:`HookEvent`), and the model
of an event without a field list of its own (:class:`GenericEvent`).

The models keep the field names of the reference systems. One JSON form of an event
(``model_dump(mode="json", by_alias=True)``) serves webhook bodies, command stdin and the event
log. Where two reference systems describe the same moment with different field names (LobeHub's
``args`` and the kernel's ``toolInput``), the model carries both, kept equal, so a user of either
system reads the names they know.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from otelhooks._sources import SOURCES

__all__ = [
    "GenericEvent",
    "HookEvent",
]


def now_ms() -> int:
    return SOURCES.now_ms()  # asked at every call: tests swap the clock


def _event_id() -> str:
    return SOURCES.event_id()


class HookEvent(BaseModel):
    """Fields every event carries. ``event`` is the canonical event name (the discriminator).

    ``eventId`` is stable for the event and serves receivers as an idempotency key.
    """

    # defer_build: the 36 schemas are built on first use, not at import (0.4 s of `import`).
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, validate_assignment=False, defer_build=True
    )

    event: str
    eventId: str = Field(default_factory=_event_id)
    timestamp: int = Field(default_factory=now_ms)
    operationId: str | None = None
    parentOperationId: str | None = None
    sessionKey: str | None = None
    userId: str | None = None
    traceId: str | None = None
    spanId: str | None = None


class GenericEvent(HookEvent):
    """Events the references name without a field list (``Notification``, ``TaskCreated``, ...).

    Their facts go in ``data``; ``matcherValue`` is what a matcher runs against (``*`` if none).
    """

    agentId: str | None = None
    matcherValue: str = "*"
    data: dict[str, Any] = Field(default_factory=dict)
