"""``FairRunner``: blocking hook calls on a bounded pool, fair across sessions, with deadlines.

A deciding hook event (``PreToolUse``...) may wait for a command or a control webhook, so it runs
on a thread. With one shared pool, one session's slow calls take every thread and another
session's ``rm -rf`` waits behind them, past the timeout Claude Code gives the hook, which then
fails open. Here:

- at most ``per_key`` calls of one key (a session) run at once; the rest of that key wait in
  its own queue, so they delay only that key;
- free threads take the next call from the keys in turn (round robin), never from one key's
  backlog first;
- every call has a deadline: a call not answered by then is given up on (its thread finishes
  the call, its result is discarded) and :meth:`FairRunner.run` raises :class:`Late`, so the
  caller answers the fail-closed or fail-open answer *before* the client's own timeout;
- at most ``max_queued`` calls wait in all, ``max_queued_per_key`` for one key; one more is
  refused at once (:class:`Late` too).

Each late or refused call is counted in :attr:`FairRunner.late` and ``otelhooks.dropped``
(source ``claude_code_hooks``) when given a drop counter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["FairRunner", "Late"]

T = TypeVar("T")


class Late(Exception):
    """A call was not answered by its deadline, or was refused because too many wait."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(slots=True)
class _Job(Generic[T]):
    key: str
    fn: Callable[[], T]
    future: concurrent.futures.Future[T]


class FairRunner:
    """Runs blocking calls on ``workers`` threads, fairly across keys (see the module doc).

    Args:
        workers: threads at most (started on first use, daemon threads).
        per_key: calls of one key running at once at most.
        max_queued: calls waiting for a thread at most (all keys).
        max_queued_per_key: calls of one key waiting at most.
        on_drop: ``(count, reason)`` for each late or refused call (a drop counter).

    Example:
        >>> runner = FairRunner(workers=4)
        >>> asyncio.run(runner.run("session-1", lambda: 42, timeout_s=1.0))
        42
    """

    def __init__(
        self,
        *,
        workers: int = 32,
        per_key: int = 2,
        max_queued: int = 4096,
        max_queued_per_key: int = 256,
        on_drop: Callable[[int, str], None] | None = None,
    ) -> None:
        self.workers = workers
        self.per_key = per_key
        self.max_queued = max_queued
        self.max_queued_per_key = max_queued_per_key
        self.late = 0
        self._on_drop = on_drop
        self._cond = threading.Condition()
        self._queues: OrderedDict[str, deque[_Job[Any]]] = OrderedDict()
        self._running: dict[str, int] = {}
        self._queued = 0
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def queued(self) -> int:
        """Calls waiting for a thread."""
        with self._cond:
            return self._queued

    def _count_drop(self, reason: str) -> None:
        with self._cond:
            self.late += 1
        if self._on_drop is not None:
            self._on_drop(1, reason)

    def submit(self, key: str, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` under ``key``; its future (cancel it to give up before it starts).

        Raises:
            Late: too many calls wait (``reason`` ``queue_full``).
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the runner is closed")
            queue = self._queues.get(key)
            waiting = len(queue) if queue is not None else 0
            if self._queued >= self.max_queued or waiting >= self.max_queued_per_key:
                full = True
            else:
                full = False
                if queue is None:
                    queue = self._queues[key] = deque()
                queue.append(_Job(key, fn, future))
                self._queued += 1
                if len(self._threads) < self.workers:
                    thread = threading.Thread(
                        target=self._work, name="otelhooks-hook-call", daemon=True
                    )
                    self._threads.append(thread)
                    thread.start()
                self._cond.notify()
        if full:
            self._count_drop("queue_full")
            raise Late("queue_full", f"more than {self.max_queued_per_key} calls wait")
        return future

    async def run(self, key: str, fn: Callable[[], T], *, timeout_s: float) -> T:
        """``fn()`` on a thread, answered within ``timeout_s``.

        Raises:
            Late: no answer within ``timeout_s`` (``reason`` ``deadline``), or too many wait.
        """
        future = self.submit(key, fn)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except TimeoutError:
            future.cancel()  # not started yet: it never runs; running: its result is dropped
            self._count_drop("deadline")
            raise Late("deadline", f"no answer within {timeout_s:g} s") from None

    def call(self, key: str, fn: Callable[[], T], *, timeout_s: float) -> T:
        """The blocking form of :meth:`run` (for a caller on a thread of its own)."""
        future = self.submit(key, fn)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._count_drop("deadline")
            raise Late("deadline", f"no answer within {timeout_s:g} s") from None

    def _next(self) -> _Job[Any] | None:
        """The first job of the first key (in turn) below its limit; the key goes last."""
        for key, queue in self._queues.items():
            if self._running.get(key, 0) < self.per_key:
                job = queue.popleft()
                self._queued -= 1
                if queue:
                    self._queues.move_to_end(key)
                else:
                    del self._queues[key]
                self._running[key] = self._running.get(key, 0) + 1
                return job
        return None

    def _work(self) -> None:
        while True:
            with self._cond:
                job = self._next()
                while job is None:
                    if self._closed:
                        return
                    self._cond.wait()
                    job = self._next()
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        job.future.set_result(job.fn())
                    except BaseException as exc:  # handed to the caller, as an executor does
                        job.future.set_exception(exc)
            finally:
                with self._cond:
                    left = self._running[job.key] - 1
                    if left:
                        self._running[job.key] = left
                    else:
                        del self._running[job.key]
                    self._cond.notify()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the threads once the queued calls ran (waits up to ``timeout_s``)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
