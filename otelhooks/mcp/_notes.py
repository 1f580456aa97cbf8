"""What a server tells the client about a tool call while it runs, filtered as its result is.

A tool's output reaches the client by more than its answer: the ``message`` of a
``notifications/progress`` for the call's ``progressToken`` (a client shows it as the call
goes), and ``notifications/message`` (logging) the server sends while the call runs (the
Python SDK's ``ctx.info(...)``; over Streamable HTTP on the call's own stream, over stdio tied
to nothing), and the text of a request the tool makes of the client (``sampling/createMessage``:
its ``systemPrompt`` and what its messages show the client's model, their text, a tool call's
``input``, a tool result's ``structuredContent`` and embedded resources; ``elicitation/create``:
its ``message``, its form's ``requestedSchema`` and a URL mode's ``url``, which its user
reads). So while a ``tools/call`` a ``tool_result_persist`` hook
matches is in flight, that text goes through the same hooks as a result ``{"content":
[{"type": "text", "text": ...}]}`` before the client reads it: a progress message by its own
call's hooks, the rest by those of every such call in flight (the protocol names no call for
them). A rewrite is the new text (a value that was not a string is read back from the JSON
text when it still is JSON); a block puts the reason in its place; when the hooks fail the
text is their error, logged: never the server's text unjudged. The call's span gets the hooks'
event.

A notification judged is remembered (the last :data:`MAX_ANSWERS` of a session, by its method
and params): the same one sent again once no call judges it (a resumed Streamable HTTP stream
replays a stream's events, notifications included) is what the client was given the first
time, or dropped (logged) when that was larger than :data:`MAX_ANSWER_BYTES`, never the
server's text unjudged.

The messages judged, and the answers of the calls they are about, reach the client in the
order the server sent them: each waits for the ones judged before it (:class:`Notes`), so a
progress message is never read after its call's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

import structlog

from otelhooks import _semconv as sc
from otelhooks._events import ToolResultPersistEvent
from otelhooks._live import persist_event
from otelhooks.mcp._answered import MAX_ANSWER_BYTES, MAX_ANSWERS
from otelhooks.mcp._calls import Pending, request_key
from otelhooks.mcp._jsonrpc import Message, encode
from otelhooks.mcp._persist import result_event
from otelhooks.mcp._relay import Relay

if TYPE_CHECKING:
    from otelhooks.mcp._gateway import McpSession

__all__ = ["JUDGED", "Notes"]

_log = structlog.get_logger("otelhooks.mcp")

PROGRESS: Final = "notifications/progress"
LOG: Final = "notifications/message"
# each notification judged: the member holding its text
JUDGED: Final = {PROGRESS: "message", LOG: "data"}
# the members of a sampling message's content block the client's model reads
_READ: Final = ("text", "input", "structuredContent")
# the members of an elicitation the client shows its user (the form's schema as its JSON text)
_ASKED: Final = ("message", "requestedSchema", "url")


class Notes:
    """The notifications and requests of ``session``'s server judged by its running calls'
    hooks, in order."""

    def __init__(self, session: McpSession) -> None:
        self.session = session
        # the last notification judged, still on its way: what a later one (or an answer)
        # waits for before it is sent
        self.last: asyncio.Future[Any] | None = None
        # what each notification judged became (None: too large to hold), by _digest
        self.sent: OrderedDict[bytes, bytes | None] = OrderedDict()

    def judge(self, msg: Message) -> Relay | None:
        """The relay of the notification (or server request) ``msg`` once the hooks of the
        calls it is about judged its text; ``None`` when no hook is to see it (sent as it
        came)."""
        if not _parts(msg.method, msg.params):
            return None
        calls = self._calls(msg)
        if not calls and (msg.kind == "request" or not self.sent):
            return None  # the common case: no call filtered, nothing judged before
        key = _digest(msg)
        if not calls:
            if key not in self.sent:
                return None
            again = self.sent[key]
            if again is None:
                _log.warning(
                    "a notification judged before was sent again; what the client was given "
                    "is no longer held, so it was dropped",
                    method=msg.method,
                )
            return Relay(to_client=[again] if again is not None else [])
        work = self._judged(msg, calls, self.last)
        if msg.kind != "request":  # a request sent again is server_asked's
            work = self._recorded(key, work)
        try:
            task = asyncio.ensure_future(work)  # runs whether or not its stream is read
        except RuntimeError:  # no loop running (the public API driven by hand): in turn
            return Relay(later=work)
        self.last = task
        return Relay(later=task)

    def judges(self, msg: Message) -> bool:
        """Whether the text of the notification ``msg`` is for hooks to judge (``True`` too
        when that cannot be told: the caller then never sends it unjudged)."""
        try:
            if not _parts(msg.method, msg.params):
                return False
            return bool(self._calls(msg)) or _digest(msg) in self.sent
        except Exception:
            return True

    async def _recorded(self, key: bytes, work: Awaitable[Relay]) -> Relay:
        relay = await work
        (frame,) = relay.to_client
        self.sent[key] = frame if len(frame) <= MAX_ANSWER_BYTES else None
        self.sent.move_to_end(key)
        while len(self.sent) > MAX_ANSWERS:
            self.sent.popitem(last=False)
        return relay

    def _calls(self, msg: Message) -> list[Pending]:
        engine = self.session.gateway.engine
        calls = [
            p
            for p in self.session.requests.from_client.values()
            if p.method == "tools/call"
            and p.values is not None
            and engine.matches("tool_result_persist", p.values)
        ]
        if msg.method != PROGRESS:
            return calls
        token = request_key(msg.params.get("progressToken"))
        return [p for p in calls if _progress_token(p) == token]

    async def _judged(
        self, msg: Message, calls: list[Pending], ahead: Awaitable[Any] | None
    ) -> Relay:
        data = copy.deepcopy(msg.data)
        changed = False
        for holder, member in _parts(msg.method, data["params"]):
            value = holder[member]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            for pending in calls:
                text = await self._filter(msg, pending, text)
            if text == value or (not isinstance(value, str) and _same_json(text, value)):
                continue
            changed = True
            holder[member] = text
            if not isinstance(value, str):
                with contextlib.suppress(ValueError):
                    holder[member] = json.loads(text)
        if ahead is not None:
            await asyncio.gather(ahead, return_exceptions=True)
        return Relay(to_client=[encode(data) if changed else msg.raw])

    async def _filter(self, msg: Message, pending: Pending, text: str) -> str:
        """``text`` once ``pending``'s ``tool_result_persist`` hooks judged it."""
        assert pending.values is not None
        result = {"content": [{"type": "text", "text": text}]}
        event = result_event(pending, pending.request_id, result)
        engine = self.session.gateway.engine
        try:
            verdict = await engine.adispatch("tool_result_persist", event, values=pending.values)
        except Exception as exc:  # never the text unjudged: the client reads that they failed
            _log.error(
                "tool_result_persist hooks failed on a notification",
                method=msg.method,
                tool=event.apiName,
                error=str(exc),
            )
            return f"otelhooks: hooks failed: {exc}"
        if verdict.matched:
            attrs = {**persist_event(verdict), sc.MCP_METHOD_NAME: msg.method or ""}
            pending.span.add_event(sc.EVENT_TOOL_RESULT_PERSIST, attrs)
        if verdict.blocked:
            return verdict.reason or "blocked by a hook"
        payload = verdict.payload
        new = payload.result if isinstance(payload, ToolResultPersistEvent) else None
        if not verdict.rewritten_by or new == result:
            return text
        if isinstance(new, str):
            return new
        content = new.get("content") if isinstance(new, dict) else None
        if not isinstance(content, list):
            return str(new)
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )


def _parts(method: str | None, params: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where the text of a server's message ``method`` is in its ``params``: each as the
    object holding it and its member's name (none: nothing to judge)."""
    if method in JUDGED:
        return [(params, JUDGED[method])] if JUDGED[method] in params else []
    if method == "elicitation/create":  # what the client shows its user: the form, the URL
        return [(params, member) for member in _ASKED if member in params]
    if method != "sampling/createMessage":
        return []
    parts = [(params, "systemPrompt")] if "systemPrompt" in params else []
    messages = params.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            parts.extend(_content_parts(message.get("content")))
    return parts


def _content_parts(content: Any) -> list[tuple[dict[str, Any], str]]:
    """Where the model reads text in a sampling message's ``content`` (a block or a list of
    them): a block's ``text``, an earlier tool call's ``input`` and a tool result's
    ``structuredContent`` (judged as their JSON text), an embedded resource's ``text``, and
    the same inside a ``tool_result`` block's own ``content``."""
    parts: list[tuple[dict[str, Any], str]] = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, dict):
            continue
        parts.extend((block, member) for member in _READ if member in block)
        resource = block.get("resource")
        if isinstance(resource, dict) and "text" in resource:
            parts.append((resource, "text"))
        if isinstance(block.get("content"), list | dict):
            parts.extend(_content_parts(block["content"]))
    return parts


def _progress_token(pending: Pending) -> Any:
    params = pending.msg.params if pending.msg is not None else {}
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return None
    return request_key(meta["progressToken"])


def _digest(msg: Message) -> bytes:
    """What tells a notification sent again (not its bytes: an event store may encode it
    again otherwise)."""
    text = json.dumps([msg.method, msg.params], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).digest()


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
