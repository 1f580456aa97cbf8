"""What the MCP gateway knows of the server's tools, per session, and how it asks for it.

A ``tools/call`` is matched by the annotation kinds and judged by the ``inputSchema`` of the
list its own session was given: a server may list differently per session. This module's one
job is to keep those lists, bounded, and to read them again when the gateway holds none for a
tool (the gateway's own ``tools/list``, each page bounded in time). It is apart from
:mod:`._gateway`, which routes frames, because tables that a client fills (with sessions, with
tools) need bounds of their own that the routing does not; reading one list answer is
:func:`._filter.listed_tools`'.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Final, Protocol

from otelhooks.mcp._calls import request_key
from otelhooks.mcp._filter import Listed, listed_tools
from otelhooks.mcp._jsonrpc import Message, encode

__all__ = [
    "LIST_TIMEOUT_S",
    "MAX_LISTED",
    "MAX_LIST_PAGES",
    "MAX_SESSIONS_LISTED",
    "SessionTools",
    "SharedTools",
]

# the gateway remembers this many tools' kinds and schemas at most in one table (the server
# chooses how many), and this many in all sessions' own tables together (the client chooses
# how many sessions)
MAX_LISTED: Final = 10_000
MAX_SESSIONS_LISTED: Final = 4 * MAX_LISTED
# The gateway's own tools/list (a guarded call of a tool it has no listing of): how long it
# waits for each page, and how many pages it reads before it gives up (the call is refused).
LIST_TIMEOUT_S: Final = 10.0
MAX_LIST_PAGES: Final = 100


class SharedTools(Protocol):
    """What every session of one gateway shares (:class:`~._gateway.McpGateway` has it)."""

    # the table of the sessions that never listed; emptied by notifications/tools/list_changed
    tools: dict[str, Listed]
    # how many tools the sessions' own tables keep together, at most MAX_SESSIONS_LISTED
    session_listed: int


class SessionTools:
    """One session's view of the server's tools: its own table once it listed, else the
    gateway's (``shared``), and the gateway's own ``tools/list`` requests still waiting."""

    def __init__(self, shared: SharedTools) -> None:
        self.shared = shared
        # What this session's own tools/list answers named (None until it lists): the server
        # may give each session its own list, and a call is judged by its session's.
        self.own: dict[str, Listed] | None = None
        # the gateway's own requests waiting for their answer (which comes through from_server)
        self._asked: dict[Hashable, asyncio.Future[Message]] = {}

    def listing(self, tool: str) -> Listed | None:
        """The annotation kinds and inputSchema ``tool`` is judged by: from this session's own
        lists once it listed, else from the gateway's table; ``None`` when that holds none."""
        return (self.own if self.own is not None else self.shared.tools).get(tool)

    def client_listed(self, msg: Message) -> None:
        """The server answered the client's ``tools/list``: from now on this session is
        judged by its own lists."""
        if self.own is None:
            self.own = {}
        self.keep(msg)

    def keep(self, msg: Message) -> dict[str, Listed]:
        """Keep the annotation kinds and input schemas of the listed tools where
        :meth:`listing` reads them (a later list, or page, adds to them; past
        :data:`MAX_LISTED` tools in a table, or :data:`MAX_SESSIONS_LISTED` in all sessions'
        tables, the rest are not kept, and a guarded call of one lists again). Returns what it
        read."""
        own = self.own
        tools = own if own is not None else self.shared.tools
        listed = listed_tools(msg)
        for name, one in listed.items():
            if name in tools:
                tools[name] = one
            elif len(tools) < MAX_LISTED and (
                own is None or self.shared.session_listed < MAX_SESSIONS_LISTED
            ):
                tools[name] = one
                if own is not None:
                    self.shared.session_listed += 1
        return listed

    def changed(self) -> None:
        """The server's ``notifications/tools/list_changed``: a listed schema may no longer be
        the server's, so the next guarded call of each tool lists again before it is judged."""
        self.forget()
        self.shared.tools.clear()

    def forget(self) -> None:
        """Empty this session's own table (it still judges by its own lists, listing again)."""
        if self.own:
            self.shared.session_listed -= len(self.own)
            self.own = {}

    def answered(self, msg: Message) -> bool:
        """Whether ``msg`` answers one of the gateway's own requests (then it is taken here:
        the client asked nothing of it)."""
        asked = self._asked.pop(request_key(msg.id), None)
        if asked is None:
            return False
        if not asked.done():
            asked.set_result(msg)
        return True

    async def list_tools(
        self, send: Callable[[bytes], Awaitable[None]] | None, tool: str
    ) -> Listed | None:
        """Every page of the server's ``tools/list``, asked by the gateway itself through
        ``send`` (kept as a client's list is): what it says of ``tool``, ``None`` when it does
        not name it. Raises when the transport cannot ask, the server does not answer in time,
        or answers an error."""
        if send is None:
            raise RuntimeError("this transport cannot send the gateway's own requests")

        async def ask(frame: bytes, asked: asyncio.Future[Message]) -> Message:
            # over HTTP the sending is the whole POST, whose event stream may stay open after
            # the answer: the answer ends the wait, a failure of the sending raises
            sending = asyncio.ensure_future(send(frame))
            waiting: set[asyncio.Future[Any]] = {sending, asked}
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if not asked.done():
                    sending.result()
                return await asked
            finally:
                sending.cancel()

        cursor: Any = None
        found: Listed | None = None
        for _ in range(MAX_LIST_PAGES):
            request_id = f"otelhooks-{uuid.uuid4().hex}"
            key = request_key(request_id)
            asked = self._asked[key] = asyncio.get_running_loop().create_future()
            params = {} if cursor is None else {"cursor": cursor}
            frame = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}
            try:
                answer = await asyncio.wait_for(ask(encode(frame), asked), LIST_TIMEOUT_S)
            except TimeoutError:
                raise RuntimeError(f"no tools/list answer in {LIST_TIMEOUT_S:g} s") from None
            finally:
                self._asked.pop(key, None)
            data = answer.data if isinstance(answer.data, dict) else {}
            result = data.get("result")
            if not isinstance(result, dict):
                raise RuntimeError(f"the server answered tools/list with {data.get('error')}")
            found = self.keep(answer).get(tool, found)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return found
        raise RuntimeError(f"the server's tool list has more than {MAX_LIST_PAGES} pages")
