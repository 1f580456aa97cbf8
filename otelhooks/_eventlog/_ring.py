"""The in-memory log: a preallocated ring of ``capacity`` records (the seed's ``agent_events``).

Record ``seq`` lives in slot ``(seq - 1) % capacity``, so an append is one lock, one counter
increment and one list store, whatever the size; when the ring is full the new record takes
the oldest record's slot. A read copies slot references under the lock and builds the records
after releasing it.
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref

from otelhooks._eventlog._model import (
    EventBatch,
    EventEntry,
    EventLog,
    EventRecord,
    LogStats,
    batch_from_rows,
)
from otelhooks._eventlog._signal import AppendSignal

__all__ = ["RingEventLog"]


class RingEventLog(EventLog):
    """The newest ``capacity`` records in memory; lost on restart (each instance has a new epoch).

    Args:
        capacity: records kept; older ones are evicted and reported as ``dropped_window``.
        name: the ``agent_events`` hook the log belongs to.

    Example:
        >>> log = RingEventLog(capacity=2)
        >>> entry = EventEntry(0, "bot", None, None, "t", "after_tool_result", False, True,
        ...                    "", "ok", None, None)
        >>> for _ in range(3):
        ...     _ = log.append(entry)
        >>> batch = log.read(0, 10)
        >>> [r.seq for r in batch.records], batch.dropped_window
        ([2, 3], 1)
    """

    durable = False

    def __init__(self, capacity: int = 5000, *, name: str = "agent_events") -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.name = name
        self.capacity = capacity
        self.signal = AppendSignal()
        self._epoch = uuid.uuid4().hex[:16]
        self._lock = threading.Lock()
        self._slots: list[EventEntry | None] = [None] * capacity
        self._head = 0
        if hasattr(os, "register_at_fork"):
            # In a forked child the lock may be held by a thread that does not exist there, and
            # the armed event loops are the parent's: replace both (weakly, as the worker does).
            after_fork = weakref.WeakMethod(self._after_fork)

            def _reinit() -> None:
                method = after_fork()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=_reinit)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self.signal = AppendSignal()

    @property
    def epoch(self) -> str:
        return self._epoch

    def append(self, entry: EventEntry) -> bool:
        """Store ``entry`` as the next ``seq``. O(1); never fails."""
        with self._lock:
            self._slots[self._head % self.capacity] = entry
            self._head += 1
        self.signal.notify()
        return True

    def read(self, since: int, limit: int, *, newest: bool = False) -> EventBatch:
        cap = self.capacity
        with self._lock:
            head = self._head
            oldest = max(1, head - cap + 1) if head else 0
            lo = max(since + 1, oldest, 1)
            hi = head if newest else min(head, lo + limit - 1)
            if newest:
                lo = max(lo, hi - limit + 1)
            slots = self._slots
            entries = [slots[(seq - 1) % cap] for seq in range(lo, hi + 1)]
        rows = [EventRecord(lo + i, *e) for i, e in enumerate(entries) if e is not None]
        return batch_from_rows(
            rows, since=since, head=head, oldest=oldest, epoch=self._epoch, newest=newest
        )

    def stats(self) -> LogStats:
        with self._lock:
            head = self._head
        oldest = max(1, head - self.capacity + 1) if head else 0
        return LogStats(head=head, oldest=oldest, appended=head, dropped=0)
