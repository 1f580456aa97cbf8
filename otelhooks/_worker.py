"""A bounded, fork-safe background worker that hands items to a callback in batches.

This is the one mechanism that moves work off the agent's hot path: span export and observer
hooks both submit items here and return immediately. The rules, each covered by a test:

* Constructing a worker starts no thread; a daemon thread starts on the first ``submit``.
* ``submit`` never blocks on the handler and never raises. A full queue drops the *new* item
  (what was queued first is kept) and reports it to ``on_drop(1, "queue_full")``; after
  ``shutdown`` every submit is dropped with reason ``"shutdown"``.
* Items reach ``handle_batch`` in submission order, at most ``max_batch_size`` per call. The
  worker wakes when a full batch is waiting, after ``schedule_delay_s``, or on ``flush``.
* ``handle_batch`` runs with OpenTelemetry instrumentation suppressed, so a delivery never
  produces spans that would fire hooks again. An exception out of it is logged and its batch
  reported to ``on_drop(count, "handler_error")``: a batch that failed is a drop, counted where
  alerts see it, not only a log line.
* In a forked child the queue is emptied and the lock, events and thread are replaced; the
  thread starts again lazily.
* A handler stuck inside ``handle_batch`` can be replaced (``replace_thread``, from another
  thread): a new thread finishes that batch and serves the queue; the stuck one, when it
  returns, counts nothing and takes no further item.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Generic, Literal, TypeAlias, TypeVar

import structlog
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

__all__ = ["BoundedWorker", "DropReason", "at_fork", "at_multiprocessing_child_exit"]

T = TypeVar("T")

DropReason: TypeAlias = Literal["queue_full", "shutdown", "handler_error"]
"""Why items were dropped: the queue was full, the worker was shut down, or ``handle_batch``
raised on their batch."""

_logger = structlog.get_logger("otelhooks")


def at_fork(
    *,
    before: Callable[[], object] | None = None,
    after_in_child: Callable[[], object] | None = None,
) -> None:
    """``os.register_at_fork`` for bound methods, held weakly: fork hooks can never be
    unregistered and must not keep a discarded object alive."""
    if not hasattr(os, "register_at_fork"):
        return
    hooks = {}
    for when, method in (("before", before), ("after_in_child", after_in_child)):
        if method is not None:
            hooks[when] = _weakly(weakref.WeakMethod(method))
    os.register_at_fork(**hooks)


def at_multiprocessing_child_exit(
    obj: T, end: Callable[[T], object], *, exitpriority: int = 0
) -> None:
    """Call ``end(obj)`` as each child of multiprocessing forked from now on ends: it ends with
    ``os._exit``, which runs no ``atexit`` handler, but its exit finalizers run (higher
    ``exitpriority`` first). Never imports multiprocessing: whatever starts a child imported it
    (call this again from a fork hook when it may be imported later). The registry holds
    ``obj`` weakly, and multiprocessing runs it in its children only."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(obj, partial(_finalize_at_exit, end=end, priority=exitpriority))


def _finalize_at_exit(obj: T, *, end: Callable[[T], object], priority: int) -> None:
    util = sys.modules["multiprocessing.util"]
    util.Finalize(obj, end, args=(obj,), exitpriority=priority)


def _weakly(method: weakref.WeakMethod[Callable[[], object]]) -> Callable[[], None]:
    def call() -> None:
        bound = method()
        if bound is not None:
            bound()

    return call


class BoundedWorker(Generic[T]):
    """Queue items from many threads and hand them to ``handle_batch`` on one daemon thread.

    Args:
        name: The thread's name (say ``"otelhooks-observers"``), also put in log lines.
        handle_batch: Called on the worker thread with up to ``max_batch_size`` items, oldest
            first. An exception is logged and the batch reported as dropped
            (``handler_error``).
        max_queue_size: Items held at most; beyond it new items are dropped.
        max_batch_size: Items per ``handle_batch`` call at most.
        schedule_delay_s: Longest wait before a partial batch is handled.
        on_drop: Called with ``(count, reason)`` for every drop, on the submitting thread (or
            the thread calling ``shutdown``; the worker's own for ``handler_error``). Must be
            cheap; exceptions are logged and swallowed.

    Raises:
        ValueError: If a size is not positive, the batch exceeds the queue, or the delay is
            negative.
    """

    def __init__(
        self,
        name: str,
        handle_batch: Callable[[list[T]], None],
        *,
        max_queue_size: int = 65_536,
        max_batch_size: int = 512,
        schedule_delay_s: float = 0.2,
        on_drop: Callable[[int, DropReason], None] | None = None,
    ) -> None:
        if max_queue_size <= 0 or max_batch_size <= 0:
            raise ValueError("max_queue_size and max_batch_size must be positive")
        if max_batch_size > max_queue_size:
            raise ValueError("max_batch_size must not exceed max_queue_size")
        if schedule_delay_s < 0:
            raise ValueError("schedule_delay_s must not be negative")
        self._name = name
        self._handle_batch = handle_batch
        self._max_queue_size = max_queue_size
        self._max_batch_size = max_batch_size
        self._schedule_delay_s = schedule_delay_s
        self._on_drop = on_drop
        self._dropped = 0
        self._stopped = False
        self._accepting = max_queue_size  # items the queue takes: 0 once shut down
        self._shutdown_result = True
        self._init_state()
        at_fork(after_in_child=self._init_state)

    def _init_state(self) -> None:
        # Also the fork hook: the parent's lock may have been held by a thread that does not
        # exist in the child, and the parent's thread is gone, so replace rather than reuse.
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Condition(threading.Lock())
        self._queue: deque[T] = deque()
        self._thread: threading.Thread | None = None
        self._exit = False
        # Sequence numbers of accepted items: flush waits until _handled reaches _submitted.
        self._submitted = 0
        self._refused = 0  # items dropped as they were submitted
        self._handled = 0
        self._flush_target = 0
        self._delivering = 0  # items of the batch handle_batch has now

    @property
    def dropped(self) -> int:
        """Items dropped so far, for any reason."""
        return self._dropped

    @property
    def offered(self) -> int:
        """Items submitted so far, queued or dropped on arrival (since a fork, in a child)."""
        return self._submitted + self._refused

    @property
    def queued(self) -> int:
        """Items waiting to be handled (not counting a batch being handled right now)."""
        return len(self._queue)

    @property
    def room(self) -> int:
        """Items that can be queued right now before one is dropped (0 once shut down)."""
        if self._stopped:
            return 0
        return max(0, self._max_queue_size - len(self._queue))

    def submit(self, item: T) -> bool:
        """Queue ``item`` without blocking.

        Returns:
            True when queued; False when dropped (queue full or worker shut down).
        """
        with self._lock:
            queue = self._queue
            queued = len(queue)
            if queued < self._accepting:  # the queue's bound, or 0 once shut down
                queue.append(item)
                self._submitted += 1
                # Wake the idle worker on the first item (starting its thread on the very
                # first: an empty queue is where every thread's life begins) and the waiting
                # one when a batch fills; only the crossings, so the common case touches
                # no Event.
                if queued == 0:
                    if self._thread is None:
                        self._start_thread()
                    self._wake.set()
                elif queued == self._max_batch_size - 1:
                    self._wake.set()
                return True
            self._dropped += 1
            self._refused += 1
            reason: DropReason = "shutdown" if self._stopped else "queue_full"
        self._report_drop(1, reason)
        return False

    def flush(self, timeout_s: float | None = 30.0) -> bool:
        """Wait until every item submitted before this call has been handled.

        Args:
            timeout_s: Longest wait in seconds; None waits without a deadline.

        Returns:
            True when all those items were handled in time (or there were none).
        """
        with self._lock:
            target = self._submitted
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            # Nothing was ever queued, or a handler is flushing its own worker (which would
            # wait for itself forever).
            return self._handled >= target
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._done:
            if self._handled < target:
                self._flush_target = max(self._flush_target, target)
                self._wake.set()
            while self._handled < target:
                thread = self._thread or thread  # a replaced thread may end; its successor works
                if not thread.is_alive():
                    return False
                if deadline is None:
                    # Poll so a thread killed by BaseException cannot hang us forever.
                    self._done.wait(1.0)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._done.wait(remaining)
        return True

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Flush within ``timeout_s``, then stop the thread. Idempotent.

        Items still queued when the deadline passes are dropped with reason ``"shutdown"``, as
        is every later ``submit``.

        Returns:
            True when everything submitted before shutdown was handled in time.
        """
        with self._lock:
            if self._stopped:
                return self._shutdown_result
            self._stopped = True
            self._accepting = 0
            thread = self._thread
        deadline = time.monotonic() + timeout_s
        flushed = self.flush(timeout_s)
        with self._lock:
            self._exit = True
            abandoned = len(self._queue)
            self._queue.clear()
            self._dropped += abandoned
        self._wake.set()
        thread = self._thread or thread  # the successor, if a stuck thread was replaced
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
        if abandoned:
            self._report_drop(abandoned, "shutdown")
        self._shutdown_result = flushed and not abandoned
        return self._shutdown_result

    def _start_thread(self) -> None:
        # Called with self._lock held, so exactly one thread starts.
        thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread = thread
        thread.start()

    def replace_thread(self, resume: Callable[[], None]) -> None:
        """Hand the worker to a new thread because the current one is stuck in ``handle_batch``.

        Call it (from any thread) only while the worker thread is inside ``handle_batch``, and
        keep that thread from returning out of it until this returns (hold a lock it takes
        first). The new thread calls ``resume``, which finishes what the stuck call left of its
        batch (with instrumentation suppressed, its exceptions logged), counts that batch
        handled, and serves the queue. The stuck thread, once ``handle_batch`` returns, leaves
        without counting the batch or taking another item.
        """
        with self._lock:
            thread = threading.Thread(
                target=self._resume,
                args=(resume, self._delivering),
                name=self._name,
                daemon=True,
            )
            self._thread = thread
            thread.start()

    def _resume(self, resume: Callable[[], None], count: int) -> None:
        me = threading.current_thread()
        self._deliver(count, resume)
        if self._thread is not me:
            return  # stuck again and replaced in turn: the successor counts the batch
        with self._done:
            self._handled += count
            self._done.notify_all()
        self._run()

    def _report_drop(self, count: int, reason: DropReason) -> None:
        if self._on_drop is None:
            return
        try:
            self._on_drop(count, reason)
        except Exception:
            _logger.exception("on_drop callback failed", worker=self._name)

    def _flush_pending(self) -> bool:
        return self._handled < self._flush_target

    def _run(self) -> None:
        wake = self._wake
        me = threading.current_thread()
        while not self._exit and self._thread is me:
            if not self._queue:
                # Idle: sleep until the first item rather than polling every schedule_delay_s.
                wake.wait()
                wake.clear()
            timed_out = False
            if (
                len(self._queue) < self._max_batch_size
                and not self._flush_pending()
                and not self._exit
            ):
                timed_out = not wake.wait(self._schedule_delay_s)
                wake.clear()
            self._drain(me, take_partial=timed_out)

    def _drain(self, me: threading.Thread, *, take_partial: bool) -> None:
        queue = self._queue
        while True:
            with self._lock:
                if self._exit or not queue:
                    return
                # A wake-up for a full batch leaves the partial tail for the timer, so batches
                # stay full under steady load; a timeout or a flush takes everything.
                if (
                    len(queue) < self._max_batch_size
                    and not take_partial
                    and not self._flush_pending()
                ):
                    return
                count = min(len(queue), self._max_batch_size)
                batch = [queue.popleft() for _ in range(count)]
                self._delivering = count
            self._deliver(count, self._handle_batch, batch)
            if self._thread is not me:
                return  # replaced while stuck in the batch: the successor counts it
            with self._done:
                self._handled += count
                self._done.notify_all()

    def _deliver(self, count: int, handle: Callable[..., None], *args: list[T]) -> None:
        # The key instrumentations read to make no span; the API has no public setter
        # (docs/design.md, "Private names that remain"; tests/test_private_names.py).
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            handle(*args)
        except Exception:
            _logger.exception("handle_batch failed", worker=self._name, items=count)
            self._report_drop(count, "handler_error")
        finally:
            detach(token)
