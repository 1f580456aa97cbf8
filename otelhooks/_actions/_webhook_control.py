"""Control webhooks: ``before_tool_call`` waits for an allow/deny decision over HTTP.

The protocol, exactly (LobeHub ``agentHookResponse``): HTTP 200 with a JSON object
``{"decision": "allow"}`` or ``{"decision": "deny", "reason": "..."}``; a deny without a string
reason gets ``Blocked by beforeToolCall hook.``; extra fields are ignored (``updatedInput`` and
``additionalContext`` change nothing). Everything else is a protocol error, handled by the hook's
``onError`` (``continue`` by default, or ``block``): an empty body, 204 or any other status, a
redirect, invalid JSON, JSON that repeats a key at any level (``{"decision": "deny",
"decision": "allow"}``: parsers disagree on which one wins, so neither does), a missing or unknown
decision, the old nested ``hookSpecificOutput``
format, a body over 64 KiB, a timeout or a network error. An empty response is never an allow.
Control requests are never retried.

The request carries the whole event, arguments included, whatever the content-capture switch:
the endpoint exists to decide on the call, and a policy server must see the command it denies
(notification bodies follow the capture rule of :mod:`._webhook_payload`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import (
    CONTROL_RESPONSE_LIMIT,
    Delivery,
    Prepared,
    io_client,
    prepare,
    run_on_io_loop,
    send,
    send_async,
)
from otelhooks._dispatch._chain import DEFAULT_BLOCK_REASONS
from otelhooks._encoding import dumps, event_json
from otelhooks._errors import ControlProtocolError
from otelhooks._events import HookEvent
from otelhooks._hooks import Block

__all__ = ["ControlProtocolError", "ControlWebhookAction", "parse_control_response"]

DEFAULT_DENY_REASON = DEFAULT_BLOCK_REASONS["before_tool_call"]


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object that names each key once; a repeated key is a protocol error."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKeyError(f"the answer repeats the key {key!r}")
        data[key] = value
    return data


def parse_control_response(delivery: Delivery) -> Block | None:
    """``None`` for allow, :class:`Block` for deny; raises ControlProtocolError otherwise."""
    if not delivery.ok:
        raise ControlProtocolError(delivery.error_class or "http_error", delivery.message)
    if delivery.status != 200:
        raise ControlProtocolError("http_error", f"status {delivery.status} is not 200")
    if not delivery.body.strip():
        raise ControlProtocolError("invalid_response", "empty body (never an allow)")
    try:
        data: Any = json.loads(delivery.body, object_pairs_hook=_unique_keys)
    except _DuplicateKeyError as exc:
        raise ControlProtocolError("invalid_response", str(exc)) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
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

    The request runs on the process's webhook I/O loop under one deadline (connect, headers and
    body), so the action holds no thread past it (``self_bounded``): sync runtimes call it on
    their own thread, which waits at most the timeout; async runtimes await :meth:`acall`, which
    takes no thread at all (neither the application's executor nor ours).
    """

    kind = "webhook"
    is_async = False
    concurrent = False
    hands_payload = False  # otelhooks' own code reads the payload; it never changes it
    self_bounded = True

    def __init__(self, hook_id: str, hook_type: str, config: WebhookConfig) -> None:
        self.hook_id = hook_id
        self.hook_type = hook_type
        self.config = config
        # made known secrets when the hook is registered (HookRegistry.register)
        self.secret_env = tuple(config.allowed_env_vars)
        self.on_error = config.on_error
        self.deadline_s = config.timeout + 1.0  # the HTTP timeout fires first

    def _prepared(self, payload: HookEvent) -> Prepared:
        data = event_json(payload, exclude_none=True)
        data["hookId"] = self.hook_id
        data["hookType"] = self.hook_type
        prepared = prepare(self.config, dumps(data).encode(), payload.eventId)
        if isinstance(prepared, Delivery):
            raise ControlProtocolError(prepared.error_class or "configuration", prepared.message)
        return prepared

    def __call__(self, payload: HookEvent) -> Block | None:
        """Ask the endpoint, waiting on this thread (at most the timeout, plus a second)."""
        prepared = self._prepared(payload)
        delivery = send(self.config, prepared, accept=(200,), limit=CONTROL_RESPONSE_LIMIT)
        return parse_control_response(delivery)

    async def acall(self, payload: HookEvent) -> Block | None:
        """As calling it, awaited: the request runs on the webhook I/O loop, no thread waits."""
        prepared = self._prepared(payload)
        delivery = await asyncio.wrap_future(
            run_on_io_loop(_send_on_io_loop(self.config, prepared, CONTROL_RESPONSE_LIMIT))
        )
        return parse_control_response(delivery)


async def _send_on_io_loop(config: WebhookConfig, prepared: Prepared, limit: int) -> Delivery:
    return await send_async(io_client(), config, prepared, accept=(200,), limit=limit)
