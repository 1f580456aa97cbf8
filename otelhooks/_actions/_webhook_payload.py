"""Webhook bodies: LobeHub's payload builder and the workspace engine's body shape.

LobeHub order: serialize the event, pass tool results through the redaction chain, select
``eventFields`` (``eventId`` always stays: receivers de-duplicate on it), add ``hookId`` and
``hookType``, enrich ``userEmail`` when it is selected, then merge ``body`` (body wins).

Email enrichment resolves the effective ``userId`` through a pluggable resolver with a shared
cache (at most 1,000 users, 5 minutes). An invalid id, a missing email or a lookup error leaves
the email out; a cancelled lookup cancels the delivery (``build`` returns ``None``).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final

import structlog

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._events import HookEvent

__all__ = [
    "RESULT_LIMIT",
    "EmailCache",
    "EmailResolver",
    "PayloadBuilder",
    "Redactor",
    "truncate_results",
]

_log = structlog.get_logger("otelhooks")

RESULT_LIMIT: Final = 4096
Redactor = Callable[[dict[str, Any]], dict[str, Any]]
EmailResolver = Callable[[str], "str | None"]
_VALID_USER_ID: Final = re.compile(r"^[A-Za-z0-9_.:@\-]{1,128}$")
_RESULT_KEYS: Final = ("content", "toolOutput", "toolResult")


def _trim(value: Any) -> Any:
    if isinstance(value, str) and len(value) > RESULT_LIMIT:
        return value[:RESULT_LIMIT] + f"…[{len(value) - RESULT_LIMIT} more characters]"
    return value


def truncate_results(data: dict[str, Any]) -> dict[str, Any]:
    """The default redaction step: tool results leave the process trimmed to 4,096 characters."""
    for key in _RESULT_KEYS:
        if key in data:
            data[key] = _trim(data[key])
    result = data.get("result")
    if isinstance(result, dict) and "content" in result:
        data["result"] = {**result, "content": _trim(result["content"])}
    return data


class _Cancelled(Exception):
    pass


class EmailCache:
    """Resolves user emails through ``resolver``; caches up to ``size`` users for ``ttl_s``."""

    def __init__(self, resolver: EmailResolver, *, size: int = 1000, ttl_s: float = 300.0) -> None:
        self._resolver = resolver
        self._size = size
        self._ttl_s = ttl_s
        self._entries: OrderedDict[str, tuple[float, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, user_id: str, cancel: threading.Event | None = None) -> str | None:
        """The email of ``user_id``, or ``None``. Raises ``_Cancelled`` when ``cancel`` is set."""
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(user_id)
            if hit is not None and now - hit[0] < self._ttl_s:
                self._entries.move_to_end(user_id)
                return hit[1]
        try:
            email = self._resolver(user_id)
        except Exception as exc:
            _log.warning("email lookup failed", user_id=user_id, error=str(exc))
            return None  # not cached: a transient failure should not stick for five minutes
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        with self._lock:
            self._entries[user_id] = (now, email)
            self._entries.move_to_end(user_id)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return email


class PayloadBuilder:
    """Builds webhook bodies. One per deliverer, so the email cache is shared by its hooks.

    Args:
        redactors: applied in order to every serialized payload before it leaves the process.
        email_resolver: user id → email (``None`` disables enrichment).
    """

    def __init__(
        self,
        *,
        redactors: Sequence[Redactor] = (truncate_results,),
        email_resolver: EmailResolver | None = None,
    ) -> None:
        self.redactors = tuple(redactors)
        self.emails = EmailCache(email_resolver) if email_resolver is not None else None

    def build(
        self,
        hook_id: str,
        hook_type: str,
        config: WebhookConfig,
        payload: HookEvent,
        *,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any] | None:
        data = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
        for redact in self.redactors:
            data = redact(data)
        if config.format == "workspace":
            return self._workspace(hook_type, config, data)
        fields = config.event_fields
        if fields is not None:
            data = {k: data[k] for k in ("eventId", *fields) if k in data}
        data["hookId"] = hook_id
        data["hookType"] = hook_type
        if fields is not None and "userEmail" in fields:
            data.pop("userEmail", None)  # resolved, never taken from the event as supplied
            try:
                email = self._email(payload.userId, cancel)
            except _Cancelled:
                return None
            if email:
                data["userEmail"] = email
        if config.body:
            data.update(config.body)
        return data

    def _email(self, user_id: str | None, cancel: threading.Event | None) -> str | None:
        if self.emails is None or not user_id or not _VALID_USER_ID.match(user_id):
            return None
        return self.emails.lookup(user_id, cancel)

    @staticmethod
    def _workspace(hook_type: str, config: WebhookConfig, data: dict[str, Any]) -> dict[str, Any]:
        """The workspace engine's body: event, toolName, matcherValue, toolInput, toolResult,
        payload, timestamp, workspaceId."""
        tool = data.get("apiName") or data.get("toolName")
        return {
            "event": hook_type,
            "toolName": tool,
            "matcherValue": tool or data.get("matcherValue", "*"),
            "toolInput": data.get("args", data.get("toolInput")),
            "toolResult": data.get("content", data.get("toolOutput")),
            "payload": data,
            "timestamp": data.get("timestamp"),
            "workspaceId": config.workspace_id,
        }
