"""What a server's coding-agent sessions hold, in count and bytes, and what is past a bound.

One job: the accounting behind the bounds of
:class:`~otelhooks.integrations.coding_agents._sessions.ServerSessions`. A client chooses session
ids, tool use ids and tool inputs, so what the sessions hold is counted as it is stored and the
oldest is forgotten past a bound. The accounting lives in memory, apart from the tables: it
names what to forget (:data:`Drop`) and the sessions delete it, so a store whose tables are
elsewhere (PostgreSQL) keeps the same accounting. Nothing here takes a lock: its caller holds
its memory lock around every call, and acts on what is named after releasing it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ROW_BYTES", "Bounds", "Drop", "Holdings", "Recent", "tool_bytes"]

ROW_BYTES = 128  # what a row costs beyond its strings (ids, integers, SQLite's own)

#: What to forget, and why (the ``reason`` of ``otelhooks.dropped``): a session, or one open
#: tool use ``(session_id, tool_use_id)``.
Drop = tuple[str | tuple[str, str], str]


def _session_bytes(session_id: str) -> int:
    # a session's id is stored four times: the operations and counters rows and their keys
    return 4 * len(session_id) + 2 * ROW_BYTES


def _count_bytes(session_id: str, tool_name: str) -> int:
    # a turn-count row (tool_turns): its key twice, with the operation id
    return 2 * (len(session_id) + len(tool_name)) + 32 + ROW_BYTES


def tool_bytes(session_id: str, tool_use_id: str, name: str, tool_input: int) -> int:
    """What a tool row holds: its strings (``tool_input`` the stored input's length), and its
    ``(session_id, tool_use_id)`` key again in the primary key's index."""
    return 2 * (len(session_id) + len(tool_use_id)) + len(name) + tool_input + ROW_BYTES


class Recent:
    """Keys remembered most recent last, bounded in count and bytes (oldest forgotten)."""

    def __init__(self, max_count: int, max_bytes: int, on_drop: Callable[[], None]) -> None:
        self.on_drop = on_drop
        self.items: OrderedDict[Any, int] = OrderedDict()
        self.sizes: dict[Any, int] = {}
        self.bytes = 0
        self.max_count = max_count
        self.max_bytes = max_bytes

    def put(self, key: Any, value: int, size: int) -> None:
        """Remember ``key`` (``size`` bytes) as the most recent; forget the oldest past a bound."""
        if key in self.items:
            self.bytes -= self.sizes[key]
        self.items[key] = value
        self.items.move_to_end(key)
        self.sizes[key] = size
        self.bytes += size
        while self.items and (len(self.items) > self.max_count or self.bytes > self.max_bytes):
            old, _ = self.items.popitem(last=False)
            self.bytes -= self.sizes.pop(old)
            self.on_drop()


@dataclass(slots=True)
class _Held:
    """What the store holds for one session: when it was last used and its open tools' bytes."""

    touched: float
    tools: OrderedDict[str, int] = field(default_factory=OrderedDict)
    bytes: int = 0
    # the tool names counted in the current turn (their tool_turns rows) and those rows' bytes
    names: dict[str, int] = field(default_factory=dict)


class Bounds(Protocol):
    """The bounds, read at every use (a server may change them while it runs)."""

    ttl_s: float
    max_sessions: int
    max_tools_per_session: int
    max_bytes: int


class Holdings:
    """The sessions held, oldest used first, with their bytes; checked against ``bounds``."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.sessions: OrderedDict[str, _Held] = OrderedDict()
        self.bytes = 0

    def hold(self, session_id: str, now: float, tool: tuple[str, int] | None) -> list[Drop]:
        """Account a use of ``session_id`` at ``now`` (monotonic), and an open tool
        ``(tool_use_id, size)``; what is then past a bound, no longer accounted."""
        bounds = self.bounds
        drops: list[Drop] = []
        held = self.sessions.get(session_id)
        if held is None:
            held = self.sessions[session_id] = _Held(now, bytes=_session_bytes(session_id))
            self.bytes += held.bytes
        held.touched = now
        self.sessions.move_to_end(session_id)
        if tool is not None and tool[0] not in held.tools:
            held.tools[tool[0]] = tool[1]
            held.bytes += tool[1]
            self.bytes += tool[1]
            while len(held.tools) > 1 and (
                len(held.tools) > bounds.max_tools_per_session or held.bytes > bounds.max_bytes
            ):
                old, size = held.tools.popitem(last=False)
                held.bytes -= size
                self.bytes -= size
                many = len(held.tools) >= bounds.max_tools_per_session
                why = "too_many_tools" if many else "too_many_bytes"
                drops.append(((session_id, old), why))
        while self.sessions:
            oldest, first = next(iter(self.sessions.items()))
            if now - first.touched > bounds.ttl_s:
                reason = "expired"
            elif len(self.sessions) > bounds.max_sessions:
                reason = "too_many_sessions"
            elif self.bytes > bounds.max_bytes and oldest != session_id:
                reason = "too_many_bytes"
            else:
                break
            del self.sessions[oldest]
            self.bytes -= first.bytes
            drops.append((oldest, reason))
        return drops

    def count_kept(self, tools: list[Any], sessions: list[Any], now: float) -> None:
        """Account what a durable file kept from an earlier run: its ``tools`` rows
        ``(session_id, tool_use_id, name length, input length)``, oldest first, and its
        ``sessions`` rows ``(session_id,)``, all used ``now``."""
        for session_id, *_ in [*tools, *sessions]:
            if session_id not in self.sessions:
                self.sessions[session_id] = _Held(now, bytes=_session_bytes(session_id))
                self.bytes += _session_bytes(session_id)
        for session_id, tool_use_id, name_length, input_length in tools:
            size = tool_bytes(session_id, tool_use_id, "", name_length + input_length)
            self.sessions[session_id].tools[tool_use_id] = size
            self.sessions[session_id].bytes += size
            self.bytes += size

    def release_tool(self, session_id: str, tool_use_id: str) -> None:
        """Stop accounting an open tool use (it ended)."""
        held = self.sessions.get(session_id)
        size = held.tools.pop(tool_use_id, None) if held is not None else None
        if held is not None and size is not None:
            held.bytes -= size
            self.bytes -= size

    def count_name(self, session_id: str, tool_name: str) -> bool:
        """Account the turn-count row of ``tool_name``; whether the turn's counts are then past
        a bound (its other names' rows must go: :meth:`new_turn` with ``keep``)."""
        held = self.sessions.get(session_id)
        if held is None or tool_name in held.names:
            return False
        size = held.names[tool_name] = _count_bytes(session_id, tool_name)
        held.bytes += size
        self.bytes += size
        past = len(held.names) > self.bounds.max_tools_per_session
        return past or sum(held.names.values()) > self.bounds.max_bytes

    def new_turn(self, session_id: str, keep: str | None = None) -> None:
        """Forget the accounting of a session's turn counts (their rows were deleted), but
        ``keep``'s."""
        held = self.sessions.get(session_id)
        if held is not None:
            kept = {n: b for n, b in held.names.items() if n == keep}
            size = sum(held.names.values()) - sum(kept.values())
            held.bytes -= size
            self.bytes -= size
            held.names = kept

    def release(self, session_id: str) -> None:
        """Stop accounting a session (it ended)."""
        held = self.sessions.pop(session_id, None)
        if held is not None:
            self.bytes -= held.bytes
