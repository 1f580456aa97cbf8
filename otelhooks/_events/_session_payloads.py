"""Payloads of messages, sessions and the gateway (the kernel's events)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from otelhooks._events._base import HookEvent, now_ms

__all__ = [
    "BeforeResetEvent",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "MessageReceivedEvent",
    "MessageSendingEvent",
    "MessageSentEvent",
    "SessionEndEvent",
    "SessionStartEvent",
]


class MessageReceivedEvent(HookEvent):
    """An inbound message (kernel ``message_received``)."""

    event: Literal["message_received"] = "message_received"
    content: str
    channelId: str | None = None
    from_: str | None = Field(default=None, alias="from")
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageSendingEvent(HookEvent):
    """An outbound message before it is sent (kernel ``message_sending``, intercept)."""

    event: Literal["message_sending"] = "message_sending"
    channelId: str
    target: str
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageSentEvent(HookEvent):
    """An outbound message was delivered (kernel ``message_sent``)."""

    event: Literal["message_sent"] = "message_sent"
    channelId: str
    target: str
    content: str
    deliveredAt: int = Field(default_factory=now_ms)


class SessionStartEvent(HookEvent):
    """A session was created (kernel ``session_start``)."""

    event: Literal["session_start"] = "session_start"
    agentId: str | None = None
    channelId: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SessionEndEvent(HookEvent):
    """A session ended (kernel ``session_end``)."""

    event: Literal["session_end"] = "session_end"
    reason: str = ""
    duration: float = 0.0
    messageCount: int = 0


class BeforeResetEvent(HookEvent):
    """Before a session reset (kernel ``before_reset``)."""

    event: Literal["before_reset"] = "before_reset"
    reason: str = ""


class GatewayStartEvent(HookEvent):
    """The gateway started (kernel ``gateway_start``)."""

    event: Literal["gateway_start"] = "gateway_start"
    port: int
    host: str


class GatewayStopEvent(HookEvent):
    """The gateway is stopping (kernel ``gateway_stop``)."""

    event: Literal["gateway_stop"] = "gateway_stop"
    reason: str = ""
