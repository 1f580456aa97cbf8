"""Control webhooks: ``before_tool_call`` waits for an allow/deny decision over HTTP.

The protocol, exactly (LobeHub ``agentHookResponse``): HTTP 200 with a JSON object
``{"decision": "allow"}`` or ``{"decision": "deny", "reason": "..."}``; a deny without a string
reason gets ``Blocked by beforeToolCall hook.``; extra fields are ignored (``updatedInput`` and
``additionalContext`` change nothing). Everything else is a protocol error, handled by the hook's
``onError`` (``continue`` by default, or ``block``): an empty body, 204 or any other status, a
redirect, invalid JSON, a missing or unknown decision, the old nested ``hookSpecificOutput``
format, a body over 64 KiB, a timeout or a network error. An empty response is never an allow.
Control requests are never retried.

The request carries the whole event, arguments included, whatever the content-capture switch:
the endpoint exists to decide on the call, and a policy server must see the command it denies
(notification bodies follow the capture rule of :mod:`._webhook_payload`).
"""

from __future__ import annotations

import json
from typing import Any

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import (
    CONTROL_RESPONSE_LIMIT,
    Delivery,
    prepare,
    send,
    sync_client,
)
from otelhooks._dispatch._chain import DEFAULT_BLOCK_REASONS
from otelhooks._errors import ControlProtocolError
from otelhooks._events import HookEvent
from otelhooks._hooks import Block

__all__ = ["ControlProtocolError", "ControlWebhookAction", "parse_control_response"]

DEFAULT_DENY_REASON = DEFAULT_BLOCK_REASONS["before_tool_call"]


def parse_control_response(delivery: Delivery) -> Block | None:
    """``None`` for allow, :class:`Block` for deny; raises ControlProtocolError otherwise."""
    if not delivery.ok:
        raise ControlProtocolError(delivery.error_class or "http_error", delivery.message)
    if delivery.status != 200:
        raise ControlProtocolError("http_error", f"status {delivery.status} is not 200")
    if not delivery.body.strip():
        raise ControlProtocolError("invalid_response", "empty body (never an allow)")
    try:
        data: Any = json.loads(delivery.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ControlProtocolError("invalid_response", f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ControlProtocolError("invalid_response", "the response is not a JSON object")
    decision = data.get("decision")
    if decision is None and "hookSpecificOutput" in data:
        raise ControlProtocolError(
            "invalid_response",
            "the nested hookSpecificOutput format is not supported; answer with a top-level "
            '{"decision": "allow"|"deny"}',
        )
    if decision == "allow":
        return None
    if decision == "deny":
        reason = data.get("reason")
        return Block(reason if isinstance(reason, str) and reason else DEFAULT_DENY_REASON)
    raise ControlProtocolError("invalid_response", f"missing or invalid decision: {decision!r}")


class ControlWebhookAction:
    """Sends the event and returns the endpoint's decision (the handler return protocol).

    It is a sync action on the shared pooled client: sync runtimes call it inline under the
    hook's deadline, async runtimes through ``asyncio.to_thread``, so the event loop never blocks.
    """

    kind = "webhook"
    is_async = False
    concurrent = False

    def __init__(self, hook_id: str, hook_type: str, config: WebhookConfig) -> None:
        self.hook_id = hook_id
        self.hook_type = hook_type
        self.config = config
        # made known secrets when the hook is registered (HookRegistry.register)
        self.secret_env = tuple(config.allowed_env_vars)
        self.on_error = config.on_error
        self.deadline_s = config.timeout + 1.0  # the HTTP timeout fires first

    def __call__(self, payload: HookEvent) -> Block | None:
        data = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["hookId"] = self.hook_id
        data["hookType"] = self.hook_type
        content = json.dumps(data, separators=(",", ":"), default=str).encode()
        prepared = prepare(self.config, content, payload.eventId)
        if isinstance(prepared, Delivery):
            raise ControlProtocolError(prepared.error_class or "configuration", prepared.message)
        delivery = send(
            sync_client(), self.config, prepared, accept=(200,), limit=CONTROL_RESPONSE_LIMIT
        )
        return parse_control_response(delivery)
