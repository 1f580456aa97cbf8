"""What the event log holds and what a read returns, and the interface both stores implement.

A record is the seed's minimum (``seq, ts, agent, session, user_id, tool, kind, mutating,
success, args_fp, detail``) plus ``trace_id`` and ``span_id``, so a record links to its trace.
Arguments and results are never stored: ``args_fp`` is their FNV-1a fingerprint (see
:mod:`otelhooks._fingerprint`) and ``detail`` a short non-content string (an outcome, an error
type, a stop reason).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from otelhooks._eventlog._signal import AppendSignal

__all__ = [
    "RECORD_FIELDS",
    "EventBatch",
    "EventEntry",
    "EventLog",
    "EventRecord",
    "LogStats",
    "batch_from_rows",
]


class EventEntry(NamedTuple):
    """One record before the log gives it a ``seq``.

    Attributes:
        ts: when the event happened, Unix epoch milliseconds.
        agent: the agent label of the ``agent_events`` hook (defaults to the hook's name).
        session: the session (``sessionKey`` / ``gen_ai.conversation.id``), when known.
        user_id: the user, when known.
        tool: ``identifier/apiName`` (or ``apiName``) for tool records, else ``None``.
        kind: the agent-OS point: ``after_tool_result``, ``after_turn``, ``after_loop``,
            ``on_terminate``, ``on_error`` or ``on_budget_threshold``.
        mutating: the tool is listed under ``mutating``.
        success: the tool call, turn or run succeeded.
        args_fp: 16 hex digits of the arguments' FNV-1a fingerprint (tool records), else
            ``None``; ``""`` when a received span did not carry one.
        detail: a short non-content string: ``ok``, ``mocked``, ``denied``, an error type, a
            completion reason.
        trace_id, span_id: the span the event belongs to (32 and 16 hex digits).
    """

    ts: int
    agent: str
    session: str | None
    user_id: str | None
    tool: str | None
    kind: str
    mutating: bool
    success: bool
    args_fp: str | None
    detail: str
    trace_id: str | None
    span_id: str | None


class EventRecord(NamedTuple):
    """One record of the log: an :class:`EventEntry` with its ``seq`` (1, 2, 3, ... per log)."""

    seq: int
    ts: int
    agent: str
    session: str | None
    user_id: str | None
    tool: str | None
    kind: str
    mutating: bool
    success: bool
    args_fp: str | None
    detail: str
    trace_id: str | None
    span_id: str | None

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object ``GET /v1/events`` returns."""
        return dict(zip(RECORD_FIELDS, self, strict=True))

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> EventRecord:
        """Parse a record object (unknown keys are ignored, for forward compatibility)."""
        values: list[Any] = [obj.get(name) for name in RECORD_FIELDS]
        return cls(*values)


RECORD_FIELDS: Final = EventRecord._fields


@dataclass(frozen=True, slots=True)
class LogStats:
    """Where a log stands.

    Attributes:
        head: the newest ``seq`` (0 while empty).
        oldest: the oldest retained ``seq`` (0 while empty).
        appended: records accepted by ``append`` since the log was opened.
        dropped: records ``append`` could not accept (the durable writer's queue was full).
    """

    head: int
    oldest: int
    appended: int
    dropped: int


@dataclass(frozen=True, slots=True)
class EventBatch:
    """The answer to one read.

    Attributes:
        records: oldest first.
        since: the cursor the read started from.
        next_since: the cursor to read from next (the last returned ``seq``, or ``since``).
        head, oldest: as in :class:`LogStats`, at the time of the read.
        has_more: records after ``since`` exist that this batch did not return.
        dropped_window: records between ``since`` and the oldest retained that are gone
            (evicted from the ring or past the durable retention).
        epoch: identifies the log instance: a new epoch means the ``seq`` numbering restarted.
        timed_out: a ``wait`` returned empty because its timeout passed.
    """

    records: list[EventRecord]
    since: int
    next_since: int
    head: int
    oldest: int
    has_more: bool
    dropped_window: int
    epoch: str
    timed_out: bool = False


def batch_from_rows(
    rows: list[EventRecord], *, since: int, head: int, oldest: int, epoch: str, newest: bool
) -> EventBatch:
    """Assemble a batch; ``rows`` are ascending, with ``seq > since`` and ``seq <= head``."""
    if rows:
        first, last = rows[0].seq, rows[-1].seq
        has_more = last < head if not newest else first > max(since + 1, oldest)
        # Measured from what was actually read, so a concurrent eviction cannot make it wrong.
        dropped = max(0, first - since - 1) if not newest else max(0, oldest - since - 1)
        return EventBatch(rows, since, last, head, oldest, has_more, dropped, epoch)
    dropped = max(0, oldest - since - 1) if oldest and since < head else 0
    return EventBatch([], since, since, head, oldest, False, dropped, epoch)


class EventLog(abc.ABC):
    """An append-only, ``seq``-numbered log of agent events, read by cursor.

    ``append`` is O(1) and never blocks on I/O, so it may run wherever an event is observed;
    reads never block appends for longer than a copy of the requested slice. Waiters (the HTTP
    long-poll) are woken through :attr:`signal`.

    Attributes:
        name: the ``agent_events`` hook the log belongs to.
        signal: fired after records become readable.
        durable: records survive a restart.
        blocking_stats: :meth:`stats` waits for a database (a shared store's round trip), so
            the HTTP route calls it on a worker thread, never on the event loop.
    """

    name: str
    signal: AppendSignal
    durable: bool = False
    blocking_stats: bool = False
    _on_lost: Callable[[int], None] | None = None

    @property
    @abc.abstractmethod
    def epoch(self) -> str:
        """An id of this log instance; it changes when the ``seq`` numbering restarts."""

    @abc.abstractmethod
    def append(self, entry: EventEntry) -> bool:
        """Add a record; returns False when it could not be accepted (and counts it)."""

    @abc.abstractmethod
    def read(self, since: int, limit: int, *, newest: bool = False) -> EventBatch:
        """Records with ``seq > since``: the oldest ``limit`` of them, or with ``newest`` the
        newest ``limit`` (still returned oldest first)."""

    @abc.abstractmethod
    def stats(self) -> LogStats:
        """Head, oldest and counters, without reading records."""

    @property
    def commit_failures(self) -> int:
        """Records a durable log accepted but could not commit (0 for in-memory logs)."""
        return 0

    def count_lost_with(self, callback: Callable[[int], None] | None) -> None:
        """Call ``callback(count)`` as records the log accepted are lost: a durable log's
        commit that failed (a full disk, a neighbour holding the file's lock past the busy
        timeout). ``None`` stops it."""
        self._on_lost = callback

    def _report_lost(self, count: int) -> None:
        callback = self._on_lost
        if callback is not None:
            callback(count)

    @property
    def lost(self) -> int:
        """Records accepted or offered but not stored: ``stats().dropped`` (a log that can
        count it without reading its store says so cheaper)."""
        return self.stats().dropped

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every accepted record is readable (immediate for in-memory logs)."""
        return True

    def close(self) -> None:  # noqa: B027 - a no-op default, like SpanProcessor's methods
        """Release the log's resources (flushing durable writes first)."""
