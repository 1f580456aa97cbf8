"""The test server of ``mcp_server_app.py`` with the SDK's resumability on: every event it sends
on a stream is kept (in memory) and sent again after a client's ``Last-Event-ID``, as a server
behind a shared event store does. ``poll`` closes its own stream before it answers (the
specification's polling: the client resumes with ``GET`` and ``Last-Event-ID``).

``python resumable_server.py http PORT``.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from mcp.server.mcpserver import Context
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import JSONRPCMessage
from mcp_server_app import _record, app


class MemoryEventStore(EventStore):
    """Every event of every stream, in order: the SDK's interface, kept in a list."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(next(self._ids))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        ids = [event_id for event_id, _, _ in self.events]
        if last_event_id not in ids:
            return None
        at = ids.index(last_event_id)
        stream = self.events[at][1]
        for event_id, stream_id, message in self.events[at + 1 :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


@app.tool(structured_output=False)
async def poll(tag: str, ctx: Context) -> str:
    """Close this call's stream, then answer ``tag`` (the client reads it on a resumed one)."""
    _record("poll", tag=tag)
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    return f"polled {tag}"


if __name__ == "__main__":
    app.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[2]),
        event_store=MemoryEventStore(),
        retry_interval=100,
    )
