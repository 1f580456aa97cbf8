"""One read (and one encoded answer) for all the long-polls of a cursor woken together.

A write wakes every long-poll at once. Each used to read the log itself (a thread hop, and on
PostgreSQL a round trip, through a pool of a few connections) and encode its own copy of the
same answer: a thousand waiters on one cursor were answered one pool slot after another, the
last seconds after the write. Now the waiters of one ``(log, since, limit)`` that ask in the
same turn of the event loop share one read, started on the next turn, and one encoded body.

A waiter joins only a read that has not started yet: it armed its
:class:`~otelhooks._eventlog._signal.AppendSignal` before asking, so the read it gets began
after it armed, and a record appended in between is either in that read or wakes it again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from otelhooks._eventlog._model import EventBatch

__all__ = ["SharedBatch", "SharedReads"]


class SharedBatch:
    """A read's batch and, once asked for, its answer encoded (the same for every waiter that
    shares the read: they asked the same query)."""

    __slots__ = ("_encoded", "batch")

    def __init__(self, batch: EventBatch) -> None:
        self.batch = batch
        self._encoded: bytes | None = None

    def encoded(self, body: Callable[[EventBatch], dict[str, Any]]) -> bytes:
        """``body(batch)`` as JSON, encoded by the first waiter that answers."""
        if self._encoded is None:
            self._encoded = json.dumps(body(self.batch)).encode()
        return self._encoded


Key = tuple[str, int, int]


class SharedReads:
    """Reads in flight by ``(log, since, limit)``, on one event loop."""

    __slots__ = ("_pending", "_running")

    def __init__(self) -> None:
        self._pending: dict[Key, asyncio.Future[SharedBatch]] = {}
        self._running: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    @property
    def pending(self) -> int:
        """Reads asked for that have not started yet."""
        return len(self._pending)

    async def read(self, key: Key, read: Callable[[], Awaitable[EventBatch]]) -> SharedBatch:
        """The batch of a read of ``key`` that starts after this call (``read`` makes it
        unless another waiter's call of this turn already asked for it).

        Raises:
            Whatever ``read`` raises (every waiter sharing it gets the error).
        """
        future = self._pending.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieve)
            self._pending[key] = future
            # a task's first step runs on the next turn: the waiters woken with this one join
            task = asyncio.ensure_future(self._run(key, future, read))
            self._running.add(task)
            task.add_done_callback(lambda task: self._finished(key, future, task))
        # shielded: one waiter going away (its client, a shutdown) ends nobody else's read
        return await asyncio.shield(future)

    def _finished(
        self, key: Key, future: asyncio.Future[SharedBatch], task: asyncio.Task[None]
    ) -> None:
        self._running.discard(task)
        if self._pending.get(key) is future:  # cancelled before it began
            del self._pending[key]
        if not future.done():
            future.cancel()

    async def _run(
        self,
        key: Key,
        future: asyncio.Future[SharedBatch],
        read: Callable[[], Awaitable[EventBatch]],
    ) -> None:
        if self._pending.get(key) is future:
            del self._pending[key]  # from now on a waiter asking starts the next read
        try:
            batch = await read()
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(SharedBatch(batch))


def _retrieve(future: asyncio.Future[SharedBatch]) -> None:
    # every waiter may have gone before the read failed: the error is theirs, not the loop's
    if not future.cancelled():
        future.exception()
