"""Notification webhook bodies: LobeHub's payload builder and the workspace engine's body shape.

LobeHub order: serialize the event, pass tool results through the redaction chain, leave content
out unless it was asked for (below), select ``eventFields`` (``eventId`` always stays: receivers
de-duplicate on it), add ``hookId`` and ``hookType``, enrich ``userEmail`` when it is selected,
then merge ``body`` (body wins).

Content leaves the process over the network only where the user turned it on. The fields of
:data:`CONTENT_FIELDS` (tool arguments and results, prompts, messages, model input and output)
are omitted from a notification body unless content capture is on (the GenAI switch
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``, or the builder's ``capture_content``) or
the hook's ``eventFields`` names the field (an explicit opt-in per hook). A structured tool
``result`` keeps its non-content facts (``success``, ``executionTime``, ``error``, ``state``)
and loses only its ``content``. Ids, names, timings, outcomes, sizes and fingerprints stay.
The durable outbox stores these same bodies, so what it keeps follows the same rule. Control
webhooks (:mod:`._webhook_control`) and local hooks get the whole event: they exist to decide
on it, or run on this machine as the user's own code.

Email enrichment resolves the effective ``userId`` through a pluggable resolver with a shared
cache (at most 1,000 users, 5 minutes). An invalid id, a missing email or a lookup error leaves
the email out; a cancelled lookup cancels the delivery (``build`` returns ``None``).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any, Final, Protocol

import structlog

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._capture import capture_from_env
from otelhooks._encoding import event_json
from otelhooks._events import HookEvent

__all__ = [
    "CONTENT_FIELDS",
    "RESULT_LIMIT",
    "EmailCache",
    "EmailResolver",
    "PayloadBuilder",
    "Redactor",
    "capture_from_env",
    "truncate_results",
    "without_content",
]

_log = structlog.get_logger("otelhooks")

RESULT_LIMIT: Final = 4096


class Redactor(Protocol):
    """Rewrites a webhook body before it leaves the process; returns the body to send.

    Example:
        >>> from otelhooks import configure, truncate_results
        >>> def drop_prompts(body: dict) -> dict:
        ...     return {k: v for k, v in body.items() if k not in ("input", "userMessage")}
        >>> drop_prompts({"hookEventName": "afterToolCall", "input": "my password is hunter2"})
        {'hookEventName': 'afterToolCall'}
        >>> oh = configure(redactors=[drop_prompts, truncate_results])
        >>> _ = oh.shutdown()
    """

    def __call__(self, data: dict[str, Any], /) -> dict[str, Any]: ...


class EmailResolver(Protocol):
    """Maps a user id to an email address (``None``: unknown), for webhooks that select
    ``userEmail``; results are cached per user.

    Example:
        >>> from otelhooks import configure
        >>> directory = {"u-7": "ada@example.com"}
        >>> oh = configure(email_resolver=lambda user_id: directory.get(user_id))
        >>> _ = oh.shutdown()
    """

    def __call__(self, user_id: str, /) -> str | None: ...


_VALID_USER_ID: Final = re.compile(r"^[A-Za-z0-9_.:@\-]{1,128}$")
_RESULT_KEYS: Final = ("content", "toolOutput", "toolResult")
# What a structured tool result (LobeHub's) says besides its content: how it went.
_RESULT_FACTS: Final = ("success", "executionTime", "error", "state")

CONTENT_FIELDS: Final = frozenset(
    {
        # tool arguments (LobeHub, kernel, Claude Code names)
        "args",
        "toolInput",
        "tool_input",
        # tool results, and the text of messages and steps
        "content",
        "result",
        "toolOutput",
        "toolResult",
        "tool_response",
        # what goes to and comes from the model
        "messages",
        "response",
        # prompts and instructions
        "input",
        "userMessage",
        "fullPrompt",
        "prompt",
        "instruction",
        # a compaction summary is the conversation, condensed
        "summary",
    }
)
"""Payload fields that carry content: left out of notification bodies unless asked for."""


def without_content(data: dict[str, Any], keep: Collection[str] = ()) -> dict[str, Any]:
    """``data`` without its :data:`CONTENT_FIELDS`, except those named in ``keep``.

    A ``result`` object keeps only the facts of LobeHub's structured result (``success``,
    ``executionTime``, ``error``, ``state``), never its content or anything else a tool put in
    it; the ``data`` of an event without a field list (``GenericEvent``) is filtered the same
    way, one level down.
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in keep or key not in CONTENT_FIELDS:
            out[key] = value
        elif key == "result" and isinstance(value, dict):
            facts = {k: value[k] for k in _RESULT_FACTS if k in value}
            if facts:
                out[key] = facts
    nested = out.get("data")
    if isinstance(nested, dict) and "data" not in keep:
        out["data"] = {k: v for k, v in nested.items() if k not in CONTENT_FIELDS}
    return out


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
        capture_content: whether bodies carry :data:`CONTENT_FIELDS` (the same switch as the
            tracer's); ``None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
            now. Off, a hook gets a content field only when its ``eventFields`` names it.
    """

    def __init__(
        self,
        *,
        redactors: Sequence[Redactor] = (truncate_results,),
        email_resolver: EmailResolver | None = None,
        capture_content: bool | None = None,
    ) -> None:
        self.redactors = tuple(redactors)
        self.emails = EmailCache(email_resolver) if email_resolver is not None else None
        self.capture_content = capture_from_env() if capture_content is None else capture_content

    def build(
        self,
        hook_id: str,
        hook_type: str,
        config: WebhookConfig,
        payload: HookEvent,
        *,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any] | None:
        """The body of one notification, or ``None`` when an email lookup was cancelled."""
        data = event_json(payload, exclude_none=True)
        for redact in self.redactors:
            data = redact(data)
        fields = config.event_fields
        if not self.capture_content:
            data = without_content(data, keep=fields or ())
        if config.format == "workspace":
            return self._workspace(hook_type, config, data)
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
        payload, timestamp, workspaceId. The shape has every key: content left out is ``null``
        in ``toolInput``/``toolResult``, as for an event that is not a tool's."""
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
