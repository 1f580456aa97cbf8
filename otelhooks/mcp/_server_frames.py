"""The server → client direction of an MCP session through the gateway.

Each server frame is read as it crosses: an answer ends the client's request it answers (its span,
its observers) after the ``tool_result_persist`` hooks filtered a tool's result (:mod:`._persist`)
and the ``tools/list`` filter dropped what the guards deny (:mod:`._filter`); an answer to no
request still waiting is what :mod:`._answered` says; a request of the server starts its span (and,
like a progress or log notification, has its text judged by a running call's hooks:
:mod:`._notes`); ``notifications/tools/list_changed`` makes every session's lists stale. A frame
that cannot be read is dropped and the request it answers failed. A batch is read item by item,
each as if it came alone: it passes as it came unless one of its items was changed.

When the gateway itself fails on a server frame (:meth:`ServerFrames.failed`), nothing it should
have judged passes unjudged: each answer in it to a request of the client becomes a JSON-RPC
internal error to that request (its span ended with ``error.type=gateway_error``, the error
recorded as what the client was given, logged), an answer to no request of the session is
dropped; the server's own requests and notifications pass, since no hook judges them, except
one whose text a call's hooks were to judge (:mod:`._notes`): such a notification is dropped,
and such a request (a running call's ``sampling/createMessage`` or ``elicitation/create``) is
answered to the server with a JSON-RPC internal error naming the cause, never sent to the
client: the server would otherwise wait for its answer forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

import structlog

from otelhooks import _semconv as sc
from otelhooks.mcp._calls import Pending, request_key
from otelhooks.mcp._filter import filter_tools
from otelhooks.mcp._jsonrpc import (
    INTERNAL_ERROR,
    Message,
    encode,
    error_response,
    parse,
    recover_id,
)
from otelhooks.mcp._notes import Notes
from otelhooks.mcp._persist import filters, persist
from otelhooks.mcp._relay import Relay
from otelhooks.mcp._session_facts import server_facts
from otelhooks.mcp._spans import set_attributes

if TYPE_CHECKING:
    from otelhooks.mcp._gateway import McpSession

__all__ = ["DEFAULT_SERVER_NAME", "HANDSHAKES", "ServerFrames"]

_log = structlog.get_logger("otelhooks.mcp")

DEFAULT_SERVER_NAME: Final = "mcp"
# The requests that open a session and whose answer names the server: the handshake of
# protocols up to 2025-11-25, and the discovery of the stateless 2026-07-28 protocol.
HANDSHAKES: Final = frozenset({"initialize", "server/discover"})


class ServerFrames:
    """What the server's frames do to ``session`` (:meth:`McpSession.from_server`)."""

    def __init__(self, session: McpSession) -> None:
        self.session = session
        self.notes = Notes(session)  # what the server says of a call while it runs

    def garbage(self, raw: bytes, problem: str) -> Relay:
        """An unreadable server frame (``problem``): dropped, the request it answers failed."""
        _log.error("the MCP server sent a frame that cannot be read; dropped", problem=problem)
        key = request_key(recover_id(raw))
        answer = self.session.requests.fail_one(
            key,
            f"the MCP server sent an answer that cannot be read: {problem}",
            error_type="invalid_response",
        )
        return Relay(to_client=[answer] if answer is not None else [])

    def failed(self, raw: bytes, exc: Exception) -> Relay:
        """What the client gets for the server frame ``raw`` the gateway failed on (``exc``):
        never an answer the hooks did not see through (see the module doc)."""
        _log.error(
            "the gateway failed on a server frame; its answers are sent as errors",
            error=str(exc),
        )
        try:
            items = parse(raw).items()
        except Exception:  # as unreadable: only the id its first bytes show
            items = [Message(raw, None, "unreadable")]
        out: list[bytes] = []
        back: list[bytes] = []  # errors to the server's own requests
        for item in items:
            if item.kind in ("request", "notification") and not self.notes.judges(item):
                out.append(item.raw)
            elif item.kind == "request":
                back.append(self._unjudged(item, exc))
            elif item.kind in ("response", "unreadable"):
                request_id = item.id if item.kind == "response" else recover_id(item.raw)
                answer = self._failed_answer(request_id, exc)
                if answer is not None:
                    out.append(answer)
        return Relay(to_server=back, to_client=out)

    def _unjudged(self, msg: Message, exc: Exception) -> bytes:
        """The server's answer to its request ``msg``, whose text a running call's hooks were
        to judge and could not (``exc``): a JSON-RPC error naming the cause; the client is
        never asked."""
        _log.error(
            "a request of the server could not be judged; the server was answered with an "
            "error and the client never got it",
            method=msg.method,
            error=str(exc),
        )
        answer = error_response(
            msg.id,
            INTERNAL_ERROR,
            f"otelhooks: the client was not asked: this {msg.method} of a running tool call "
            f"could not be judged by its hooks: {exc}",
        )
        try:
            self.session.requests.finish(msg.id, parse(answer), from_server=True)
        except Exception as again:  # its span's end failed too: the server still gets it
            _log.error("the request's span could not be ended", error=str(again))
        return answer

    def _failed_answer(self, request_id: Any, exc: Exception) -> bytes | None:
        answer = error_response(
            request_id, INTERNAL_ERROR, f"otelhooks: gateway failed on the server's answer: {exc}"
        )
        return answer if self.session.requests.gateway_failed(request_id, answer) else None

    async def guarded(self, raw: bytes, later: Awaitable[Relay]) -> Relay:
        """``later``, the decision still running for the server frame ``raw``, or what
        :meth:`failed` says when the gateway fails in it."""
        try:
            return await later
        except Exception as exc:
            return self.failed(raw, exc)

    def frame(self, raw: bytes) -> Relay:
        """What to send on for the server frame ``raw``."""
        msg = parse(raw)
        if msg.kind == "unreadable":
            return self.garbage(raw, msg.problem or "not JSON")
        if msg.kind == "response":
            return self._response(msg)
        session = self.session
        if msg.kind == "request":
            if not session.requests.server_asked(msg):  # answered already: a replay
                return Relay()
            asked = self.notes.judge(msg)  # a sampling or elicitation text of a running call
            if asked is not None:
                return asked
        elif msg.kind == "notification":
            if msg.method == "notifications/tools/list_changed":
                session.listings.changed()
                session.gateway.list_changes += 1
            session.requests.notification(msg, from_server=True)
            judged = self.notes.judge(msg)
            if judged is not None:
                return judged
        elif msg.kind == "batch":
            return self._batch(msg)
        return Relay(to_client=[raw])

    def _response(self, msg: Message) -> Relay:
        session = self.session
        requests = session.requests
        if session.listings.answered(msg):  # the gateway's own request: the client's none
            return Relay()
        pending = requests.from_client.get(request_key(msg.id))
        if pending is None:
            if msg.id is None:  # an error the server could tie to no request: passed on
                return Relay(to_client=[msg.raw])
            again = requests.answered.again(msg)  # answered already, or never asked
            return Relay(to_client=[again] if again is not None else [])
        if filters(session.gateway.engine, pending, msg):
            if pending.persisted is not None:  # the hooks run on this answer already
                return Relay(later=self._persisted_again(msg, pending, pending.persisted))
            pending.persisted = asyncio.Event()
            # sent after what the server said of the call before it (its progress, its logs)
            ahead = self.notes.last
            return Relay(later=self._persisted(msg, pending, pending.persisted, ahead))
        if pending.method in HANDSHAKES:
            self._on_initialized(msg)
        if pending.method == "tools/list":
            session.listings.client_listed(msg)
            if session.gateway.filter_tools and not pending.cancelled:
                requests.from_client.pop(request_key(msg.id), None)
                return Relay(later=self._filtered(msg, pending))
        requests.finish(msg.id, msg)
        return Relay(to_client=[msg.raw])

    def _batch(self, msg: Message) -> Relay:
        """A batch of the server (the answer to a client's batch, protocol 2025-03-26): each
        item as if it came alone; as it came unless an item's answer was changed."""
        items = msg.items()
        relays = [self.frame(item.raw) for item in items]
        if all(
            r.later is None and r.to_client == [i.raw] and not r.to_server
            for r, i in zip(relays, items, strict=True)
        ):
            return Relay(to_client=[msg.raw])

        async def decided() -> Relay:
            done = [await r.later if r.later is not None else r for r in relays]
            out = [parse(f).data for r in done for f in r.to_client]
            back = [f for r in done for f in r.to_server]  # errors to requests not judged
            return Relay(to_server=back, to_client=[encode(out)] if out else [])

        return Relay(later=decided())

    async def _persisted_again(self, msg: Message, pending: Pending, ran: asyncio.Event) -> Relay:
        """The answer ``msg`` again (another stream) while the hooks run on its first copy:
        what the client was given for it once they are done, the hooks not run twice (run
        here when the first copy's decision was dropped, its stream gone)."""
        await ran.wait()
        if self.session.requests.from_client.get(request_key(msg.id)) is pending:
            pending.persisted = ran = asyncio.Event()
            return await self._persisted(msg, pending, ran, None)
        again = self.session.requests.answered.again(msg)
        return Relay(to_client=[again] if again is not None else [])

    async def _persisted(
        self, msg: Message, pending: Pending, ran: asyncio.Event, ahead: Awaitable[Any] | None
    ) -> Relay:
        # What the server said of the call before its answer (its progress, its logs) is judged
        # first: its hooks' records go on the call's span, which the answer ends.
        try:
            if ahead is not None:
                await asyncio.gather(ahead, return_exceptions=True)
            return await self._persist(msg, pending)
        finally:
            ran.set()

    async def _persist(self, msg: Message, pending: Pending) -> Relay:
        requests = self.session.requests
        try:
            out, blocked = await persist(self.session.gateway.engine, msg, pending)
        except Exception as exc:  # never the result unfiltered: the client gets an error
            _log.error("the gateway failed filtering a tool result", error=str(exc))
            out = error_response(msg.id, INTERNAL_ERROR, f"otelhooks: gateway failed: {exc}")
            blocked = False
        if request_key(msg.id) not in requests.from_client:
            # answered while the hooks ran (the same answer on another stream: what the client
            # got there), cancelled, or the session ended
            again = requests.answered.again(msg)
            return Relay(to_client=[again] if again is not None else [])
        requests.finish(msg.id, parse(out), denied=blocked)
        return Relay(to_client=[out])

    async def _filtered(self, msg: Message, pending: Pending) -> Relay:
        session = self.session
        try:
            out = await filter_tools(session.gateway.engine, msg, session.server_name)
        except Exception as exc:  # the filter failed: the list passes unfiltered, and we say so
            _log.error("tools/list filter failed; the list passes unfiltered", error=str(exc))
            out = msg.raw
        session.requests.answered.record(msg.id, out)
        session.requests.end(pending, msg)
        return Relay(to_client=[out])

    def _on_initialized(self, msg: Message) -> None:
        """The server's handshake answer: its protocol version and name (see ``server_name``)."""
        facts = server_facts(msg)
        if facts is None:
            return
        session, gateway = self.session, self.session.gateway
        version, name = facts
        session.protocol_version = version or session.protocol_version
        if name:
            gateway.server_name = name
        elif gateway.server_name is None:  # a server without a name: known as the default
            gateway.server_name = DEFAULT_SERVER_NAME
        pending = session.requests.from_client.get(request_key(msg.id))
        if pending is not None:
            set_attributes(pending.span, {sc.MCP_SERVER_NAME: session.server_name})
            if session.protocol_version:
                set_attributes(pending.span, {sc.MCP_PROTOCOL_VERSION: session.protocol_version})
