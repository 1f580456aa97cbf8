"""The sessions the Streamable HTTP gateway keeps, by the upstream's ``Mcp-Session-Id``.

A session is kept only once the upstream named it (a client-chosen id alone keeps nothing), at
most ``max_sessions`` (the least recently used one is dropped), each dropped after
``session_idle_s`` without a request; a drop is logged and counted in ``otelhooks.dropped``
(source ``mcp_sessions``). Each session's streams' event ids are kept too: a client resumes only
after an event its own session was sent.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict

import structlog

from otelhooks.mcp._gateway import McpGateway, McpSession
from otelhooks.mcp._sse import EventIds

__all__ = ["KeptSessions"]

_log = structlog.get_logger("otelhooks.mcp")


class KeptSessions:
    """The sessions of one HTTP gateway, least recently used first."""

    def __init__(self, gateway: McpGateway, max_sessions: int, session_idle_s: float) -> None:
        self.gateway = gateway
        self.max_sessions = max_sessions
        self.session_idle_s = session_idle_s
        # By the upstream's session id: (session, last request).
        self.sessions: OrderedDict[str | None, tuple[McpSession, float]] = OrderedDict()
        self.dropped = 0
        self._count_drop = gateway.engine.metrics.drop_counter("mcp_sessions")
        # the event ids each session's streams carried: what its client may resume after
        self._event_ids: weakref.WeakKeyDictionary[McpSession, EventIds] = (
            weakref.WeakKeyDictionary()
        )

    def __len__(self) -> int:
        return len(self.sessions)

    def session(self, session_id: str | None) -> McpSession:
        """The kept session ``session_id``, or a new one that is kept only if the upstream
        names it in its answer (:meth:`keep`)."""
        self._expire()
        kept = self.sessions.get(session_id)
        if kept is not None and not kept[0].closed:
            self.sessions[session_id] = (kept[0], time.monotonic())
            self.sessions.move_to_end(session_id)
            return kept[0]
        return self.gateway.session(session_id)

    def kept(self, session: McpSession) -> bool:
        """Whether ``session`` is kept (else it ends with the request it serves)."""
        return any(s is session for s, _ in self.sessions.values())

    def named(self, session_id: str | None, session: McpSession) -> bool:
        """Whether the upstream's ``session_id`` is ``session``'s already."""
        kept = self.sessions.get(session_id)
        return kept is not None and kept[0] is session

    def keep(self, session_id: str | None, session: McpSession) -> None:
        """The upstream named (or accepted) ``session`` as ``session_id``."""
        self.sessions[session_id] = (session, time.monotonic())
        self.sessions.move_to_end(session_id)
        while len(self.sessions) > self.max_sessions:
            _, (oldest, _) = self.sessions.popitem(last=False)
            self._drop(oldest, "the gateway keeps at most max_sessions sessions")

    def end(self, session_id: str | None) -> None:
        """The upstream ended ``session_id`` (a ``DELETE`` it accepted)."""
        self.sessions.pop(session_id, None)

    def close(self) -> None:
        """End every kept session."""
        for session, _ in self.sessions.values():
            session.close()
        self.sessions.clear()

    def sent_event(self, session: McpSession, event_id: bytes) -> None:
        """``session``'s client was sent an event with ``event_id``."""
        self._event_ids.setdefault(session, EventIds()).add(event_id)

    def resumable(self, session: McpSession, last_event_id: str) -> bool:
        """Whether ``session``'s streams carried the event ``last_event_id`` to its client: a
        server with one event store for all sessions sends any session's events after any id,
        answers included, to whoever names it."""
        ids = self._event_ids.get(session)
        return ids is not None and last_event_id.encode("latin-1") in ids

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.session_idle_s
        while self.sessions:
            session_id, (session, seen) = next(iter(self.sessions.items()))
            if seen > cutoff:
                return
            del self.sessions[session_id]
            self._drop(session, "idle")

    def _drop(self, session: McpSession, why: str) -> None:
        self.dropped += 1
        _log.warning("an MCP session was dropped", why=why, dropped=self.dropped)
        self._count_drop(1, why)
        session.close()
