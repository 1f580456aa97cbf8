"""``FairRunner``: blocking hook calls on a bounded pool, fair across sessions, with deadlines.

A deciding hook event (``PreToolUse``...) may wait for a command or a control webhook, so it runs
on a thread. With one shared pool, one session's slow calls take every thread and another
session's ``rm -rf`` waits behind them, past the timeout Claude Code gives the hook, which then
fails open. Here:

- at most ``per_key`` calls of one key (a session) run at once; the rest of that key wait in
  its own queue, so they delay only that key;
- free threads take the next call from the keys in turn (round robin), never from one key's
  backlog first;
- at most ``busy`` threads run calls at once while the calls are quick: hook calls are mostly
  Python holding the GIL, and every thread more that runs at once costs CPU in hand-offs and
  buys no speed. A call that has waited ``grow_after_s`` for a thread while a running call has
  run that long (a thread held by a slow call: a command, a webhook, a person) wakes or starts
  one more, up to ``workers``; its waiter checks, so no thread watches;
- every call has a deadline, kept by the waiting side (:meth:`FairRunner.run` on the event
  loop, :meth:`FairRunner.call` on the caller's thread): a call not answered by then is given up
  on and ``run`` raises :class:`Late`, so the caller answers the fail-closed or fail-open answer
  *before* the client's own timeout, whatever the call does;
- a call given up on while it runs has its thread replaced at once (up to ``max_stuck`` such
  threads at once) and still holds its key's slot for as long again as its deadline (a slow
  call finishing late holds back only its own key); past that it no longer counts against its
  key. So a call that never returns (a hung Python hook run on the thread itself) costs one
  thread, never the key or the pool. When it returns its result is discarded and the thread
  serves again, or ends if the pool is full;
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
from typing import Any, TypeVar

__all__ = ["FairRunner", "Late"]

T = TypeVar("T")


class Late(Exception):
    """A call was not answered by its deadline, or was refused because too many wait.

    ``ran_s``: how long the call ran before it was given up on (``0.0``: it never started:
    refused, or it waited for a thread all along, behind its key's other calls or a starved
    process); ``None`` when not known.
    """

    def __init__(self, reason: str, message: str, ran_s: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.ran_s = ran_s

    def had_s(self, waited_s: float) -> float:
        """The time the call's hooks had of the ``waited_s`` it was waited for: only the time
        it ran counts (a guard that never started never had its time, and its answer is
        missing, not late)."""
        return waited_s if self.ran_s is None else min(waited_s, self.ran_s)


_QUEUED, _RUNNING, _GIVEN_UP, _STUCK, _DONE = range(5)


class _Job:
    """One call: ``answer(ok, value)`` hands its outcome to its waiter; ``future`` (a
    ``submit``-ed call's) may be cancelled before it starts."""

    __slots__ = ("answer", "fn", "future", "key", "started_at", "state", "stuck_at")

    def __init__(
        self,
        key: str,
        fn: Callable[[], Any],
        answer: Callable[[bool, Any], None],
        future: concurrent.futures.Future[Any] | None = None,
    ) -> None:
        self.key = key
        self.fn = fn
        self.answer = answer
        self.future = future  # a submitted call's: nobody waits to watch it for a stall
        self.state = _QUEUED
        self.started_at = 0.0
        self.stuck_at = 0.0


def _settle(waiter: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if not waiter.done():  # not given up on meanwhile
        if ok:
            waiter.set_result(value)
        else:
            waiter.set_exception(value)


def _to_future(future: concurrent.futures.Future[Any]) -> Callable[[bool, Any], None]:
    def answer(ok: bool, value: Any) -> None:
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    return answer


class _Expired(Exception):
    """The waiter's deadline passed (set on its future by the loop's timer)."""


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(_Expired())


def _deadline_late(timeout_s: float, ran_s: float | None) -> Late:
    """The :class:`Late` of a call not answered in ``timeout_s``, saying how much of it ran."""
    message = f"no answer within {timeout_s:g} s"
    if ran_s == 0.0:
        message += " (its hooks never ran: the call waited all along for a thread, behind its "
        message += "session's other calls or in a process starved of CPU)"
    elif ran_s is not None and ran_s < timeout_s - 0.05:
        message += f" (its hooks ran {ran_s:.1f} s of it: the call waited for a thread first)"
    return Late("deadline", message, ran_s)


class FairRunner:
    """Runs blocking calls on ``workers`` threads, fairly across keys (see the module doc).

    Args:
        workers: threads at most (started on first use, daemon threads), not counting those
            held by calls given up on.
        per_key: calls of one key running at once at most.
        max_queued: calls waiting for a thread at most (all keys).
        max_queued_per_key: calls of one key waiting at most.
        max_stuck: calls given up on while running whose thread is replaced, at most (past it
            the pool shrinks until they return); ``workers`` when omitted.
        busy: threads running calls at once while no running call is slow.
        grow_after_s: how long a call waits for a thread, while a running call has run as
            long, before one more thread takes it.
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
        max_stuck: int | None = None,
        busy: int = 2,
        grow_after_s: float = 0.005,
        on_drop: Callable[[int, str], None] | None = None,
    ) -> None:
        self.workers = workers
        self.busy = busy
        self.grow_after_s = grow_after_s
        self.per_key = per_key
        self.max_queued = max_queued
        self.max_queued_per_key = max_queued_per_key
        self.max_stuck = workers if max_stuck is None else max_stuck
        self.late = 0
        self._on_drop = on_drop
        self._cond = threading.Condition()
        self._queues: OrderedDict[str, deque[_Job]] = OrderedDict()
        self._running: dict[str, int] = {}
        self._queued = 0
        self._serving = 0  # threads not held by a call given up on
        self._idle = 0  # of them, waiting for a call
        self._stuck = 0  # threads held by one (each replaced, within max_stuck)
        self._given_up: list[_Job] = []  # running calls given up on, not stuck yet
        self._running_jobs: set[_Job] = set()  # calls running, not given up on
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def queued(self) -> int:
        """Calls waiting for a thread."""
        with self._cond:
            return self._queued

    @property
    def stuck(self) -> int:
        """Calls given up on that still hold their thread (replaced while within
        ``max_stuck``)."""
        with self._cond:
            return self._stuck

    def _count_drop(self, reason: str) -> None:
        with self._cond:
            self.late += 1
        if self._on_drop is not None:
            self._on_drop(1, reason)

    def submit(self, key: str, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` under ``key``; its future (cancel it to give up before it starts).

        Raises:
            Late: too many calls wait (``reason`` ``queue_full``), or the runner is closed
                (``closed``).
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue(_Job(key, fn, _to_future(future), future))
        return future

    async def run(self, key: str, fn: Callable[[], T], *, timeout_s: float) -> T:
        """``fn()`` on a thread, answered within ``timeout_s``.

        Raises:
            Late: no answer within ``timeout_s`` (``reason`` ``deadline``), too many wait, or
                the runner is closed (``closed``).
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()

        def answer(ok: bool, value: Any) -> None:
            loop.call_soon_threadsafe(_settle, waiter, ok, value)

        job = _Job(key, fn, answer)
        self._queue(job)
        deadline = loop.time() + timeout_s
        # one timer at a time: the stall check, then the deadline (a quick call, most of them,
        # is answered before the first fires and leaves no far timer in the loop's heap)
        timer: list[asyncio.TimerHandle] = []

        def stalled() -> None:
            if not waiter.done():
                self._stalled(job)
                timer[0] = loop.call_at(deadline, _expire, waiter)

        timer.append(loop.call_later(min(self.grow_after_s, timeout_s), stalled))

        try:
            return await waiter
        except _Expired:
            ran_s = self._give_up(job, timeout_s)
            raise _deadline_late(timeout_s, ran_s) from None
        except asyncio.CancelledError:
            self._give_up(job, timeout_s, count=False)  # nobody waits for it any more
            raise
        finally:
            timer[0].cancel()

    def call(self, key: str, fn: Callable[[], T], *, timeout_s: float) -> T:
        """The blocking form of :meth:`run` (for a caller on a thread of its own)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        job = _Job(key, fn, _to_future(future))
        self._queue(job)
        started = time.monotonic()
        try:
            try:
                return future.result(min(self.grow_after_s, timeout_s))
            except concurrent.futures.TimeoutError:
                if future.done():
                    raise
            self._stalled(job)
            return future.result(max(0.0, timeout_s - (time.monotonic() - started)))
        except concurrent.futures.TimeoutError:
            if future.done():
                raise  # fn itself raised TimeoutError
            ran_s = self._give_up(job, timeout_s)
            raise _deadline_late(timeout_s, ran_s) from None

    def _queue(self, job: _Job) -> None:
        with self._cond:
            if self._closed:
                # a call that arrives while its server or hooks_for closes gets its caller's
                # failure answer, like a late one: an exception there may be no answer at all
                # (the Claude Agent SDK runs the tool when a callback raises)
                raise Late("closed", "the runner is closed")
            self._reap()
            queue = self._queues.get(job.key)
            waiting = len(queue) if queue is not None else 0
            full = self._queued >= self.max_queued or waiting >= self.max_queued_per_key
            if not full:
                if queue is None:
                    queue = self._queues[job.key] = deque()
                queue.append(job)
                self._queued += 1
                if self._serving - self._idle < self.busy or job.future is not None:
                    self._start_one()
        if full:
            self._count_drop("queue_full")
            raise Late("queue_full", f"more than {self.max_queued_per_key} calls wait")

    def _start_one(self) -> None:
        """Wake an idle thread or start one for a queued call. Call with the lock held."""
        if not self._wake() and not self._grow():
            self._cond.notify()  # every thread runs: the first one free takes it

    def _stalled(self, job: _Job) -> None:
        """``job`` waited ``grow_after_s``: if it still waits while it could run and a running
        call has run that long (its thread held by something slow), one more thread takes it."""
        with self._cond:
            if job.state != _QUEUED or self._running.get(job.key, 0) >= self.per_key:
                return
            since = time.monotonic() - self.grow_after_s
            if any(running.started_at <= since for running in self._running_jobs):
                self._start_one()

    def _wake(self) -> bool:
        """Wake one idle thread, if one waits (not woken yet). Call with the lock held."""
        if self._idle <= 0:
            return False
        self._idle -= 1
        self._cond.notify()
        return True

    def _grow(self) -> bool:
        """Start a thread when fewer than ``workers`` serve and the threads held by calls given
        up on are within ``max_stuck``. Call with the lock held."""
        if self._serving >= self.workers or self._stuck > self.max_stuck:
            return False
        thread = threading.Thread(target=self._work, name="otelhooks-hook-call", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        self._serving += 1
        thread.start()
        return True

    def _give_up(self, job: _Job, grace_s: float, *, count: bool = True) -> float | None:
        """The waiter of ``job`` stopped waiting: queued, it never runs; running, its thread is
        replaced now and it keeps its key's slot for ``grace_s`` more (:meth:`_reap`). Returns
        how long it ran (``0.0``: never started; ``None``: it had just finished)."""
        ran_s: float | None = None
        with self._cond:
            if job.state == _QUEUED:
                job.state = _GIVEN_UP  # skipped when its turn comes
                ran_s = 0.0
            elif job.state == _RUNNING:
                ran_s = time.monotonic() - job.started_at
                job.state = _GIVEN_UP
                self._running_jobs.discard(job)
                job.stuck_at = time.monotonic() + grace_s
                self._given_up.append(job)
                self._serving -= 1
                self._stuck += 1
                if not self._grow():  # the new thread, idle, also ends the grace (_work)
                    self._wake()
        if count:
            self._count_drop("deadline")
        return ran_s

    def _reap(self) -> None:
        """Running calls given up on whose grace passed no longer count against their key.
        Call with the lock held."""
        if not self._given_up:
            return
        now = time.monotonic()
        for job in [j for j in self._given_up if j.stuck_at <= now]:
            self._given_up.remove(job)
            job.state = _STUCK
            self._release(job.key)
            self._wake()  # a call of its key may run now

    def _release(self, key: str) -> None:
        left = self._running[key] - 1
        if left:
            self._running[key] = left
        else:
            del self._running[key]

    def _next(self) -> _Job | None:
        """The first job of the first key (in turn) below its limit; the key goes last."""
        self._reap()
        found = True
        while found:
            found = False
            for key, queue in self._queues.items():
                if self._running.get(key, 0) < self.per_key:
                    job = queue.popleft()
                    self._queued -= 1
                    if queue:
                        self._queues.move_to_end(key)
                    else:
                        del self._queues[key]
                    if job.state == _GIVEN_UP or (
                        job.future is not None and not job.future.set_running_or_notify_cancel()
                    ):
                        found = True  # its waiter left before it started: never run
                        break
                    job.state = _RUNNING
                    job.started_at = time.monotonic()
                    self._running_jobs.add(job)
                    self._running[key] = self._running.get(key, 0) + 1
                    return job
        return None

    def _wait_s(self) -> float | None:
        """How long an idle thread may sleep: until the next grace ends, if one runs."""
        if not self._given_up:
            return None
        return max(0.0, min(j.stuck_at for j in self._given_up) - time.monotonic()) + 0.001

    def _work(self) -> None:
        while True:
            with self._cond:
                job = self._next()
                while job is None:
                    if self._closed:
                        self._serving -= 1
                        return
                    self._idle += 1
                    if not self._cond.wait(self._wait_s()):
                        self._idle = max(0, self._idle - 1)  # woken by its timeout
                    job = self._next()
            try:
                ok, value = True, job.fn()
            except BaseException as exc:  # handed to the caller, as an executor does
                ok, value = False, exc
            with self._cond:
                state, job.state = job.state, _DONE
                self._running_jobs.discard(job)
                if state != _STUCK:  # a stuck call's slot was freed when its grace ended
                    self._release(job.key)
                if state != _RUNNING:  # given up on: this thread was replaced meanwhile
                    if state == _GIVEN_UP:
                        self._given_up.remove(job)
                    self._stuck -= 1
                    if self._serving >= self.workers or self._closed:
                        if self._queued:
                            self._wake()  # what this thread leaves is another's
                        return  # the pool is full without this thread
                    self._serving += 1
                # no notify: this thread takes the next call itself
            if state == _RUNNING:
                job.answer(ok, value)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the threads once the queued calls ran (waits up to ``timeout_s``)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
