"""Observers, off the agent's path: a bounded queue, one worker thread, and a watchdog.

The runtime never waits for an observer: the event and its matched hooks go into a bounded queue
(:class:`~otelhooks._worker.BoundedWorker`); a full queue drops and counts. The worker calls sync
handlers itself, inline (a thread hand-off per call would cost more than most handlers), watched
by a watchdog thread that polls only while a batch runs: a call past its deadline is abandoned
(outcome ``timeout``, counted against its hook's cap of stuck calls) and a new worker thread
goes on with the next hook; the stuck thread, when it returns at last, records nothing and runs
nothing more. Async handlers, self-bounded actions and ``concurrent`` ones (commands, started
together) go through :class:`~._calls.HookCalls`.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextvars import copy_context as _copy_context
from typing import Any

import structlog

from otelhooks import _semconv as sc
from otelhooks._dispatch._calls import HookCalls
from otelhooks._dispatch._failures import hooks_failure
from otelhooks._errors import DeadlinePassed, HookCapacityError, HookTimeoutError
from otelhooks._events import HookEvent
from otelhooks._hooks import Hook
from otelhooks._live import LiveEvent
from otelhooks._metrics import AgentMetrics
from otelhooks._redact import scrub
from otelhooks._worker import BoundedWorker

__all__ = ["ObserverRunner", "Record"]

# How often the watchdog looks at the inline observer call while a batch runs (at the call's
# deadline, if that comes sooner): how late past its deadline a stuck observer is abandoned.
_WATCH_POLL_S = 0.05
# The watchdog goes on polling this long after the last batch (batches come every
# schedule_delay_s under load: waking it for each would cost more than the polls), then sleeps
# until the next batch; asleep this long, its thread ends.
_WATCH_LINGER_S = 0.5
_WATCH_IDLE_S = 5.0

_log = structlog.get_logger("otelhooks")
_clock = time.perf_counter
_NO_HOOKS: Sequence[Hook] = ()

Record = Callable[[Hook, str, "float | None"], None]
"""Counts one invocation of a hook: ``(hook, outcome, seconds or None)``."""
RecordMany = Callable[[Hook, str, list[float]], None]
"""Counts invocations of a hook with one outcome: ``(hook, outcome, seconds of each)``."""

# An inline call in flight: (hook, deadline, gen, live, started, claim). Whoever pops ``claim``
# first owns the call's outcome: the worker when it returns, the watchdog when it abandons it.
# list.pop is atomic, so a returned call costs no lock (the watchdog pops with its lock held).
_Inflight = tuple[Hook, float, int, LiveEvent, float, list[bool]]


class _ObserverRun:
    """The observer batch being run, where it is, and the inline call in flight.

    Shared by the worker thread that runs it, the watchdog, and the thread that replaces a stuck
    worker; ``gen`` says which thread owns it (a stuck thread's ``gen`` is stale). ``index`` and
    ``step`` point at the next event and the next of its hooks (``order``): a replacement thread
    goes on from there. ``inflight`` is ``(hook, deadline, gen, live, started, claim)`` during
    an inline call; ``stuck`` holds, per abandoned ``gen``, the future counted against its hook,
    done when its call returns.
    """

    __slots__ = (
        "batch",
        "gen",
        "index",
        "inflight",
        "order",
        "parallel",
        "payload",
        "ran",
        "step",
        "stuck",
    )

    def __init__(self, batch: list[LiveEvent]) -> None:
        # Each event's slot is set to None once its hooks ran (so Any: no cast on the way).
        self.batch: list[Any] = batch
        self.gen = 0
        self.index = 0
        self.step = 0
        self.order: Sequence[Hook] | None = None
        self.parallel: dict[int, tuple[float, Any]] | None = None
        self.payload: HookEvent | None = None
        self.inflight: _Inflight | None = None
        self.stuck: dict[int, Future[None]] = {}
        # By hook (id: a Hook hashes its fields), the run times of its inline calls that
        # returned in time: counted when the batch ends, a series look-up per hook rather than
        # per call (and no tuple per call for the young generation to carry).
        self.ran: dict[int, tuple[Hook, list[float]]] = {}


class ObserverRunner:
    """Queues observer events and runs their hooks on the observer worker.

    Args:
        calls: calls hooks that do not run inline, and counts stuck calls against their hook.
        record: counts each invocation (outcome and run time).
        record_many: counts the inline calls of a batch that returned in time, per hook.
        metrics: counts what is dropped.
        max_queue_size: bound of the queue.
    """

    def __init__(
        self,
        calls: HookCalls,
        record: Record,
        record_many: RecordMany,
        metrics: AgentMetrics,
        *,
        max_queue_size: int = 65_536,
    ) -> None:
        self._calls = calls
        self._record = record
        self._record_many = record_many
        self._metrics = metrics
        self._closed = False
        self._watchdog: threading.Thread | None = None
        self._current: _ObserverRun | None = None  # the batch running
        self._watching = False  # the watchdog polls (a batch runs); guarded by _watch_lock
        self._batches = 0  # batches started, for the watchdog to tell it is idle
        self._init_watch()
        if hasattr(os, "register_at_fork"):
            # The watchdog thread does not exist in a forked child and its lock may be held.
            reinit = weakref.WeakMethod(self._init_watch)

            def _after_in_child() -> None:
                method = reinit()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=_after_in_child)
        self.queue: BoundedWorker[LiveEvent] = BoundedWorker(
            "otelhooks-observers",
            self._run_batch,
            max_queue_size=max_queue_size,
            max_batch_size=256,
            schedule_delay_s=0.05,
            on_drop=metrics.drop_counter("observer_queue"),
        )

    def submit(self, live: LiveEvent, hooks: list[Hook]) -> None:
        """Queue ``live`` for ``hooks`` (dropped and counted when the queue is full)."""
        if live.hooks is not hooks:
            live.hooks = hooks  # what the worker runs; the event itself is the queue's item
        self.queue.submit(live)

    def flush(self, timeout_s: float = 30.0) -> bool:
        return self.queue.flush(timeout_s)

    def shutdown(self, timeout_s: float = 30.0) -> None:
        self.queue.shutdown(timeout_s)  # flushes within the deadline first
        self._closed = True
        self._watch_wake.set()  # an idle watchdog ends

    # -- running a batch -------------------------------------------------------------------------

    def _run_batch(self, batch: list[LiveEvent]) -> None:
        # Each event's slot is emptied once its hooks ran (see _advance).
        run = _ObserverRun(batch)
        with self._watch_lock:
            self._current = run
            self._batches += 1
            if not self._watching:  # the watchdog was asleep
                self._watching = True
                self._wake_watchdog()
        self._continue(run, 0)

    def _continue(self, run: _ObserverRun, gen: int) -> None:
        """Run ``run`` from where it is, on the thread that owns ``gen``, until it ends or this
        thread is abandoned (another one goes on)."""
        try:
            self._advance(run, gen)
        finally:
            if run.gen == gen:  # ended (or a payload failed to build): the watchdog may rest
                self._current = None
                self._count_ran(run)

    def _count_ran(self, run: _ObserverRun) -> None:
        ran, run.ran = run.ran, {}
        for hook, durations in ran.values():
            self._record_many(hook, "ok", durations)

    def _advance(self, run: _ObserverRun, gen: int) -> None:
        batch = run.batch
        while run.index < len(batch):
            live: LiveEvent = batch[run.index]
            order, payload = run.order, run.payload
            if order is None:
                if self._closed:
                    # Past the shutdown deadline the pool is gone: count what is left, once.
                    self._metrics.dropped.add(
                        len(batch) - run.index,
                        {sc.ATTR_DROP_SOURCE: "observer_queue", sc.ATTR_DROP_REASON: "shutdown"},
                    )
                    break
                payload = run.payload = live.payload()
                order = live.hooks or _NO_HOOKS
                for hook in order:  # inline, not a call: asked for every event
                    if hook.inline is None and hook.action.concurrent:
                        order = self._plan_event(run, order)
                        break
                run.order = order
            assert payload is not None
            while run.step < len(order):
                hook = order[run.step]
                run.step += 1  # first: a replacement thread goes on after this hook
                call = hook.inline
                if call is not None:
                    if not self._observe_inline(run, gen, live, hook, call, payload):
                        return  # abandoned at the deadline: the replacement thread goes on
                elif hook.action.concurrent:
                    start, started = run.parallel[id(hook)]  # type: ignore[index]
                    left = max(0.0, hook.deadline_s - (_clock() - start))
                    self._observe_one(live, hook, start, self._calls.finish, hook, started, left)
                else:  # async, or bounding its own time
                    self._observe_one(live, hook, _clock(), self._calls.call, hook, payload)
            # Let the event and its payload go now, not with the batch: kept to its end, 256
            # payloads would outlive a collection of the young generation and be promoted, and
            # more full collections follow.
            batch[run.index] = None
            run.index += 1
            run.step, run.order, run.parallel, run.payload = 0, None, None, None

    def _plan_event(self, run: _ObserverRun, hooks: Sequence[Hook]) -> list[Hook]:
        """The order the hooks of one event run in, some of them ``concurrent``; starts those.

        Actions marked ``concurrent`` (commands) start together and run beside the others, which
        keep registration order; every hook of the event settles, each under its own deadline,
        before the next event (the workspace engine's Promise.allSettled).
        """
        concurrent = [hook for hook in hooks if hook.action.concurrent]
        payload: HookEvent = run.payload  # type: ignore[assignment]
        run.parallel = {
            id(hook): (_clock(), self._calls.try_start(hook, payload)) for hook in concurrent
        }
        return [hook for hook in hooks if not hook.action.concurrent] + concurrent

    def _observe_inline(
        self,
        run: _ObserverRun,
        gen: int,
        live: LiveEvent,
        hook: Hook,
        call: Callable[[HookEvent], Any],
        payload: HookEvent,
    ) -> bool:
        """Call a sync observer (``call``: its :attr:`~otelhooks.Hook.inline`) on this thread
        under the watchdog; False when this thread was abandoned meanwhile (its outcome is
        recorded, by the watchdog, and the batch goes on on another thread)."""
        if self._calls.abandoned:  # only then can a hook be at its cap of stuck calls
            try:
                self._calls.check_capacity(hook, live.name)
            except HookCapacityError as exc:
                self._observed(live, hook, _clock(), exc)
                return True
        claim = [True]
        start = _clock()
        run.inflight = (hook, start + hook.deadline_s, gen, live, start, claim)
        error: Exception | None = None
        result: Any = None
        mine = False
        try:
            # In a copy of the context, as in the pool: a hook's context variables stay its own.
            result = _copy_context().run(call, payload)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # a hook's SystemExit...: see hooks_failure
            error = hooks_failure(exc)
            if error is None:
                raise
        finally:
            try:
                claim.pop()
                mine = True
                run.inflight = None
            except IndexError:
                # The watchdog abandoned the call and recorded the timeout (all of it with its
                # lock held): let the hook's count of stuck calls drop.
                with self._watch_lock:
                    stuck = run.stuck.pop(gen, None)
                if stuck is not None:
                    stuck.set_result(None)
        if not mine:
            return False
        elapsed = _clock() - start
        if error is None:
            if result is None or not inspect.isawaitable(result):
                if elapsed <= hook.deadline_s:
                    ran = run.ran.get(id(hook))  # counted with the batch's others
                    if ran is None:
                        run.ran[id(hook)] = (hook, [elapsed])
                    else:
                        ran[1].append(elapsed)
                    return True
                error = DeadlinePassed()  # returned, but late: as the pool judges it
            else:
                try:
                    self._calls.run_coroutine(hook, result)  # a sync callable's coroutine
                except Exception as exc:
                    error = exc
        self._observed(live, hook, start, error)
        return True

    def _observe_one(
        self, live: LiveEvent, hook: Hook, start: float, call: Callable[..., Any], *args: Any
    ) -> None:
        try:
            call(*args)
        except Exception as exc:
            self._observed(live, hook, start, exc)
        else:
            self._observed(live, hook, start, None)

    def _observed(self, live: LiveEvent, hook: Hook, start: float, error: Exception | None) -> None:
        """Log and count how one observer call ended (``error`` None: it returned in time)."""
        outcome = "ok"
        if isinstance(error, (DeadlinePassed, HookTimeoutError)):
            outcome = "timeout"
            _log.warning(
                "observer hook timed out",
                hook_id=hook.id,
                lifecycle_event=live.name,
                **live.log_ids(),
            )
        elif error is not None:
            outcome = "error"
            _log.warning(
                "observer hook failed",
                hook_id=hook.id,
                lifecycle_event=live.name,
                error=scrub(str(error)),
                **live.log_ids(),
            )
        self._record(hook, outcome, _clock() - start)

    # -- the watchdog of inline calls ------------------------------------------------------------

    def _init_watch(self) -> None:
        # Also the fork hook: the parent's watchdog thread does not exist in the child.
        self._watch_lock = threading.Lock()
        self._watch_wake = threading.Event()
        self._watching = False
        self._watchdog = None
        self._current = None

    def _wake_watchdog(self) -> None:
        # Called with _watch_lock held.
        if self._watchdog is None or not self._watchdog.is_alive():
            self._watchdog = threading.Thread(
                target=self._watch, name="otelhooks-observer-watchdog", daemon=True
            )
            self._watchdog.start()
        self._watch_wake.set()

    def _watch(self) -> None:
        """Abandon an inline observer call past its deadline; poll only while a batch runs."""
        me = threading.current_thread()
        while not self._closed:
            if not self._watch_wake.wait(_WATCH_IDLE_S):
                with self._watch_lock:
                    if not self._watching:
                        self._watchdog = None if self._watchdog is me else self._watchdog
                        return  # long idle: the next batch starts a new watchdog
                continue
            seen, idle_since = -1, 0.0
            while not self._closed:
                run = self._current
                if run is None:
                    now = _clock()
                    if seen != self._batches:
                        seen, idle_since = self._batches, now
                    if now - idle_since < _WATCH_LINGER_S:
                        time.sleep(_WATCH_POLL_S)
                        continue
                    with self._watch_lock:
                        if self._current is None:
                            self._watching = False
                            self._watch_wake.clear()
                            break
                    continue
                slot = run.inflight
                now = _clock()
                if slot is None:
                    time.sleep(_WATCH_POLL_S)
                elif now < slot[1]:
                    time.sleep(min(_WATCH_POLL_S, slot[1] - now))
                else:
                    self._abandon_inline(run, slot)

    def _abandon_inline(self, run: _ObserverRun, slot: _Inflight) -> None:
        hook, _, gen, live, start, claim = slot
        with self._watch_lock:
            if run.inflight is not slot or run.gen != gen:
                return  # it returned meanwhile
            try:
                claim.pop()
            except IndexError:
                return  # it returns now: the worker owns its outcome
            run.inflight = None
            run.gen = gen + 1
            stuck: Future[None] = Future()
            run.stuck[gen] = stuck
            self._calls.count_stuck(stuck, hook)
            # Recorded before the batch goes on (a flush that returns sees it), and with the
            # lock held, so the stuck thread cannot return and carry on before it is replaced.
            self._observed(live, hook, start, DeadlinePassed())
            new_gen = run.gen
            self.queue.replace_thread(lambda: self._continue(run, new_gen))
