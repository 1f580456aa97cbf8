"""Running hooks: interceptors inline (sync, or awaited in async runtimes), observers off the path.

Interceptors decide before the action, so the runtime waits for them, but never longer than each
hook's ``timeout``: a sync handler runs on a small thread pool of ours (never the application's
``asyncio.to_thread`` executor) and is abandoned at its deadline (Python cannot kill a thread; the
late result is ignored). Capacity is per hook: past :data:`MAX_ABANDONED` calls of one hook stuck
past their deadline, that hook fails fast (:class:`~otelhooks.HookCapacityError`, which follows
its ``on_error``) while every other hook keeps running. An action that ends itself at its own
deadline without holding a thread (``self_bounded``: control webhooks, whose requests run on the
webhook I/O loop) is called directly, and awaited through its ``acall`` in async runtimes.

Observers never make the runtime wait: the event and the matched hooks go into a bounded queue;
a full queue drops and counts. The observer worker calls sync handlers itself, inline (a thread
hand-off per call would cost more than most handlers), watched by a watchdog thread that polls
only while a batch runs: a call past its deadline is abandoned (outcome ``timeout``, counted
against its hook's :data:`MAX_ABANDONED`) and a new worker thread goes on with the next hook;
the stuck thread, when it returns at last, records nothing and runs nothing more.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import threading
import time
import typing
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import structlog

from otelhooks import _semconv as sc
from otelhooks._dispatch._chain import InterceptChain
from otelhooks._dispatch._registry import HookRegistry
from otelhooks._errors import (
    CriticalHookDeliveryError,
    DeadlinePassed,
    HookCapacityError,
    HookError,
    HookTimeoutError,
)
from otelhooks._events import HookEvent
from otelhooks._hooks import Hook, enqueues
from otelhooks._live import HookStep, LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics, MetricAttributes
from otelhooks._redact import scrub
from otelhooks._worker import BoundedWorker

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = [
    "MAX_ABANDONED",
    "Dispatcher",
    "HookCapacityError",
    "HookPoolExhaustedError",
]

MAX_ABANDONED = 64  # per hook
HookPoolExhaustedError = HookCapacityError  # the name of earlier releases

# How often the watchdog looks at the inline observer call while a batch runs (at the call's
# deadline, if that comes sooner): how late past its deadline a stuck observer is abandoned.
_WATCH_POLL_S = 0.05
# The watchdog goes on polling this long after the last batch (batches come every
# schedule_delay_s under load: waking it for each would cost more than the polls), then sleeps
# until the next batch; asleep this long, its thread ends.
_WATCH_LINGER_S = 0.5
_WATCH_IDLE_S = 5.0
_ATTRS_LIMIT = 1024


_log = structlog.get_logger("otelhooks")


def _run_coroutine(fn: Callable[..., Any], payload: HookEvent) -> Any:
    return asyncio.run(fn(payload))


class _ObserverRun:
    """The observer batch being run, where it is, and the inline call in flight.

    Shared by the worker thread that runs it, the watchdog, and the thread that replaces a stuck
    worker; ``gen`` says which thread owns it (a stuck thread's ``gen`` is stale). ``index`` and
    ``step`` point at the next event and the next of its hooks (``order``): a replacement thread
    goes on from there. ``inflight`` is ``(hook, deadline, gen, live, started)`` during an inline
    call; ``stuck`` holds, per abandoned ``gen``, the future counted in ``_abandoned``, done when
    its call returns.
    """

    __slots__ = (
        "batch",
        "gen",
        "index",
        "inflight",
        "order",
        "parallel",
        "payload",
        "step",
        "stuck",
    )

    def __init__(self, batch: list[tuple[LiveEvent, list[Hook]]]) -> None:
        self.batch = batch
        self.gen = 0
        self.index = 0
        self.step = 0
        self.order: list[Hook] | None = None
        self.parallel: dict[int, tuple[float, Any]] | None = None
        self.payload: HookEvent | None = None
        self.inflight: tuple[Hook, float, int, LiveEvent, float] | None = None
        self.stuck: dict[int, Future[None]] = {}


class _Bounded:
    """A call of a ``self_bounded`` action, made on the caller's thread when it is finished."""

    __slots__ = ("action", "payload")

    def __init__(self, action: Any, payload: HookEvent) -> None:
        self.action = action
        self.payload = payload


async def _within(awaitable: Any, timeout: float) -> Any:
    async def guarded() -> tuple[bool, Any]:
        try:
            return True, await awaitable
        except Exception as exc:
            return False, exc

    try:
        ok, value = await asyncio.wait_for(guarded(), timeout)
    except TimeoutError:
        raise DeadlinePassed from None
    if not ok:
        raise value
    return value


class Dispatcher:
    """Matches hooks to events and runs them by the rules of :mod:`._chain`.

    Args:
        registry: where hooks are registered.
        metrics: records every invocation as ``otelhooks.hook.invocations{hook, event, outcome}``.
        max_queue_size: bound of the observer queue.
        pool_size: threads that run sync handlers under a deadline.
    """

    def __init__(
        self,
        registry: HookRegistry | None = None,
        *,
        metrics: AgentMetrics | None = None,
        max_queue_size: int = 65_536,
        pool_size: int = 8,
    ) -> None:
        self.registry = registry if registry is not None else HookRegistry()
        self.metrics = metrics or AgentMetrics()
        # Where this pipeline's notification webhooks deliver (configure() sets its own, so two
        # pipelines in one process keep their queues and metrics apart); None: the default.
        self.deliverer: WebhookDeliverer | None = None
        # Called for a deliverer when a notification is queued and none was set (the engine
        # creates its own on first use, so pipelines without webhooks start no event loop).
        self.deliverer_factory: Callable[[], WebhookDeliverer] | None = None
        self._pool_size = pool_size
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # Calls abandoned at their deadline and still running: their pool (None: an inline
        # observer call, on an abandoned worker thread) and their hook.
        self._abandoned: dict[Future[Any], tuple[ThreadPoolExecutor | None, str]] = {}
        self._closed = False
        # Metric attributes per (hook, outcome), built once: never mutated.
        self._attrs: dict[tuple[str, str, str, str], MetricAttributes] = {}
        self._watchdog: threading.Thread | None = None
        self._current: _ObserverRun | None = None  # the observer batch running
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
        self._observers: BoundedWorker[tuple[LiveEvent, list[Hook]]] = BoundedWorker(
            "otelhooks-observers",
            self._run_observer_batch,
            max_queue_size=max_queue_size,
            max_batch_size=256,
            schedule_delay_s=0.05,
            on_drop=self.metrics.drop_counter("observer_queue"),
        )

    # -- matching -------------------------------------------------------------------------------

    def match(self, live: LiveEvent) -> list[Hook]:
        return self.registry.match(live.name, live.values, operation_id=live.operation_id)

    # -- intercept: sync and async, the same rules -----------------------------------------------

    def intercept(
        self,
        live: LiveEvent,
        *,
        dry_run: bool = False,
        call_webhooks: bool = True,
        inline: bool = False,
    ) -> Verdict:
        """Run the interceptors of ``live`` now, on this thread, each under its deadline.

        ``dry_run``: what these hooks would decide, with no side effect beyond the hooks
        themselves: notification webhooks are not enqueued and nothing is counted in metrics.
        ``call_webhooks=False``: control webhooks are listed in ``Verdict.would_call`` instead
        of called.
        ``inline``: call sync hooks on this thread (see :meth:`_call_inline`).
        """
        chain = self._begin_chain(live, dry_run, call_webhooks)
        if chain is None:
            return self._end_chain(live, None)
        call = self._call_inline if inline else self._call_with_deadline
        for hook in chain.hooks:
            if self._skips(chain, hook):
                continue
            payload, started = chain.before_call(hook), time.perf_counter()
            try:
                result = call(hook, payload)
            except Exception as exc:
                stop = self._hook_failed(chain, hook, live, exc, started)
            else:
                stop = self._hook_returned(chain, hook, result, started)
            if stop:
                break
        return self._end_chain(live, chain)

    async def intercept_async(
        self, live: LiveEvent, *, dry_run: bool = False, call_webhooks: bool = True
    ) -> Verdict:
        """As :meth:`intercept`, without blocking the event loop while hooks run."""
        chain = self._begin_chain(live, dry_run, call_webhooks)
        if chain is None:
            return self._end_chain(live, None)
        for hook in chain.hooks:
            if self._skips(chain, hook):
                continue
            payload, started = chain.before_call(hook), time.perf_counter()
            try:
                result = await self._acall_with_deadline(hook, payload)
            except Exception as exc:
                stop = self._hook_failed(chain, hook, live, exc, started)
            else:
                stop = self._hook_returned(chain, hook, result, started)
            if stop:
                break
        return self._end_chain(live, chain)

    # The two loops above differ only in how a hook is called; the rules live here and in
    # InterceptChain.

    def _begin_chain(
        self, live: LiveEvent, dry_run: bool = False, call_webhooks: bool = True
    ) -> InterceptChain | None:
        matched = self.match(live)
        notified: list[HookStep] = []
        if dry_run:
            # Notifications observe; a dry run decides only.
            hooks = [h for h in matched if not enqueues(h.action)]
        else:
            hooks, live.critical = self._enqueue_notifications(live, matched, notified)
        if not hooks:
            live.verdict = Verdict(matched=[h.id for h in matched], steps=notified)
            return None
        chain = InterceptChain(live.name, live.payload(), hooks)
        chain.verdict.steps.extend(notified)
        chain.dry_run = dry_run
        chain.call_webhooks = call_webhooks
        return chain

    @staticmethod
    def _skips(chain: InterceptChain, hook: Hook) -> bool:
        if chain.skips(hook):
            return True
        if not chain.call_webhooks and hook.action.kind == "webhook":
            chain.verdict.would_call.append(hook.id)  # a control webhook: reported, not called
            return True
        return False

    @staticmethod
    def _end_chain(live: LiveEvent, chain: InterceptChain | None) -> Verdict:
        if chain is not None:
            live.verdict = chain.verdict
        elif live.verdict is None:
            live.verdict = Verdict()
        return live.verdict

    def _hook_returned(
        self, chain: InterceptChain, hook: Hook, result: Any, started: float
    ) -> bool:
        stop, outcome = chain.apply(hook, result)
        chain.verdict.steps.append(HookStep(hook.id, hook.action.kind, outcome))
        if not chain.dry_run:
            self._record(hook, outcome, time.perf_counter() - started)
        return stop

    def _hook_failed(
        self, chain: InterceptChain, hook: Hook, live: LiveEvent, exc: Exception, started: float
    ) -> bool:
        if isinstance(exc, DeadlinePassed):
            problem, outcome = f"timed out after {hook.deadline_s:g}s", "timeout"
        elif isinstance(exc, HookTimeoutError):  # the action enforced its own timeout (a command)
            problem, outcome = str(exc), "timeout"
        else:
            problem, outcome = f"{type(exc).__name__}: {exc}", "error"
        stop, outcome = chain.fail(hook, problem, outcome)
        chain.verdict.steps.append(HookStep(hook.id, hook.action.kind, outcome, scrub(problem)))
        if outcome == "error":
            _log.warning(
                "hook failed", hook_id=hook.id, lifecycle_event=live.name, error=scrub(str(exc))
            )
        if not chain.dry_run:
            self._record(hook, outcome, time.perf_counter() - started)
        return stop

    # -- observe: queued, never awaited by the runtime -------------------------------------------

    def observe(self, live: LiveEvent) -> list[Hook]:
        """Queue ``live`` for its matching observers. Builds the payload only if one matches.

        Raises:
            CriticalHookDeliveryError: a ``fallback: none`` hook could not be queued durably
                (after every sibling hook was queued).
        """
        matched = self.match(live)
        if matched:
            # Fixed now (the runtime may change its inputs after this returns), built by the
            # worker when the event allows it: the agent pays for a copy, not a validation.
            live.freeze()
            rest, critical = self._enqueue_notifications(live, matched)
            if rest:
                self._observers.submit((live, rest))
            if critical is not None:
                raise critical
        return matched

    def _enqueue_notifications(
        self, live: LiveEvent, hooks: list[Hook], steps: list[HookStep] | None = None
    ) -> tuple[list[Hook], CriticalHookDeliveryError | None]:
        """Hand hooks that deliver by themselves (notification webhooks) their event; return
        the others, and the critical failure to raise once they have run. Observation never
        gates execution, also on intercept events. ``steps`` collects what became of each."""
        if not any(enqueues(h.action) for h in hooks):
            return hooks, None
        rest: list[Hook] = []
        failures: list[HookError] = []
        payload = live.payload()
        deliverer = self.deliverer
        if deliverer is None:
            if self.deliverer_factory is not None:
                deliverer = self.deliverer_factory()
            else:
                from otelhooks._actions._webhook_delivery import WebhookDeliverer

                deliverer = WebhookDeliverer(metrics=self.metrics)
            self.deliverer = deliverer
        for hook in hooks:
            action = hook.action
            if not enqueues(action):
                rest.append(hook)
                continue
            outcome, problem = "queued", None
            try:
                if not action.enqueue(payload, deliverer):
                    outcome = "dropped"
                    self._record(hook, "dropped", None)
            except Exception as exc:
                outcome, problem = "error", scrub(str(exc))
                self._record(hook, "error", None)
                _log.warning("hook delivery failed", hook_id=hook.id, error=problem)
                failures.append(HookError(str(exc), hook_id=hook.id, event=live.name))
            if steps is not None:
                steps.append(HookStep(hook.id, hook.action.kind, outcome, problem))
        return rest, CriticalHookDeliveryError(failures, event=live.name) if failures else None

    @property
    def observer_room(self) -> int:
        """Observer events that can be queued now before one is dropped (a receiver waits for
        room instead of acknowledging events it would drop)."""
        return self._observers.room

    @property
    def observers_dropped(self) -> int:
        """Observer events dropped so far (queue full or shut down)."""
        return self._observers.dropped

    def observe_now(self, live: LiveEvent) -> Verdict:
        """Run the observers of ``live`` on this thread, each under its deadline, and say what
        each did (``otelhooks hooks test``); notification webhooks are queued as usual."""
        matched = self.match(live)
        steps: list[HookStep] = []
        rest, critical = self._enqueue_notifications(live, matched, steps)
        payload = live.payload()
        for hook in rest:
            started = time.perf_counter()
            outcome, problem = "ok", None
            try:
                self._call_with_deadline(hook, payload)
            except (DeadlinePassed, HookTimeoutError) as exc:
                outcome = "timeout"
                problem = (
                    f"timed out after {hook.deadline_s:g}s"
                    if isinstance(exc, DeadlinePassed)
                    else scrub(str(exc))
                )
            except Exception as exc:
                outcome, problem = "error", scrub(f"{type(exc).__name__}: {exc}")
            self._record(hook, outcome, time.perf_counter() - started)
            steps.append(HookStep(hook.id, hook.action.kind, outcome, problem))
        live.critical = critical
        return Verdict(payload=payload, matched=[h.id for h in matched], steps=steps)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued observer event has been handled (or the deadline passes)."""
        return self._observers.flush(timeout_s)

    def shutdown(self, timeout_s: float = 30.0) -> None:
        self._observers.shutdown(timeout_s)  # flushes within the deadline first
        self._closed = True
        self._watch_wake.set()  # an idle watchdog ends
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _run_observer_batch(self, batch: list[tuple[LiveEvent, list[Hook]]]) -> None:
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

    def _advance(self, run: _ObserverRun, gen: int) -> None:
        batch = run.batch
        while run.index < len(batch):
            live, hooks = batch[run.index]
            order, payload = run.order, run.payload
            if order is None:
                if self._closed:
                    # Past the shutdown deadline the pool is gone: count what is left, once.
                    self.metrics.dropped.add(
                        len(batch) - run.index,
                        {sc.ATTR_DROP_SOURCE: "observer_queue", sc.ATTR_DROP_REASON: "shutdown"},
                    )
                    break
                payload = run.payload = live.payload()
                order = run.order = self._plan_event(run, hooks)
            assert payload is not None
            while run.step < len(order):
                hook = order[run.step]
                run.step += 1  # first: a replacement thread goes on after this hook
                action = hook.action
                if action.concurrent:
                    start, started = typing.cast("dict[int, tuple[float, Any]]", run.parallel)[
                        id(hook)
                    ]
                    left = max(0.0, hook.deadline_s - (time.perf_counter() - start))
                    self._observe_one(live, hook, start, self._finish, hook, started, left)
                elif action.is_async or getattr(action, "self_bounded", False):
                    start = time.perf_counter()
                    self._observe_one(live, hook, start, self._call_with_deadline, hook, payload)
                elif not self._observe_inline(run, gen, live, hook, payload):
                    return  # abandoned at the deadline: the replacement thread goes on
            run.index += 1
            run.step, run.order, run.parallel, run.payload = 0, None, None, None

    def _plan_event(self, run: _ObserverRun, hooks: list[Hook]) -> list[Hook]:
        """The order the hooks of one event run in; starts the ``concurrent`` ones.

        Actions marked ``concurrent`` (commands) start together and run beside the others, which
        keep registration order; every hook of the event settles, each under its own deadline,
        before the next event (the workspace engine's Promise.allSettled).
        """
        concurrent = [hook for hook in hooks if hook.action.concurrent]
        if not concurrent:
            return hooks
        payload = typing.cast("HookEvent", run.payload)
        run.parallel = {
            id(hook): (time.perf_counter(), self._try_start(hook, payload)) for hook in concurrent
        }
        return [hook for hook in hooks if not hook.action.concurrent] + concurrent

    def _observe_inline(
        self, run: _ObserverRun, gen: int, live: LiveEvent, hook: Hook, payload: HookEvent
    ) -> bool:
        """Call a sync observer on this thread under the watchdog; False when this thread was
        abandoned meanwhile (its outcome is recorded, by the watchdog, and the batch goes on on
        another thread)."""
        start = time.perf_counter()
        error: Exception | None = None
        result: Any = None
        if self._abandoned:  # only then can a hook be at its cap of stuck calls
            try:
                with self._pool_lock:
                    self._check_capacity(hook, live.name)
            except HookCapacityError as exc:
                self._observed(live, hook, start, exc)
                return True
        run.inflight = (hook, start + hook.deadline_s, gen, live, start)
        mine = False
        try:
            # In a copy of the context, as in the pool: a hook's context variables stay its own.
            result = contextvars.copy_context().run(hook.action, payload)
        except Exception as exc:
            error = exc
        finally:
            with self._watch_lock:
                mine = run.gen == gen
                if mine:
                    run.inflight = None
            if not mine:
                # The watchdog recorded the timeout; let the hook's count of stuck calls drop.
                stuck = run.stuck.pop(gen, None)
                if stuck is not None:
                    stuck.set_result(None)
        if not mine:
            return False
        if error is None:
            try:
                if result is not None and inspect.isawaitable(
                    result
                ):  # a sync callable's coroutine
                    self._wait(self._submit(hook, hook.event, asyncio.run, result), hook.deadline_s)
                elif time.perf_counter() - start > hook.deadline_s:
                    raise DeadlinePassed  # returned, but late: as the pool judges it
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
            _log.warning("observer hook timed out", hook_id=hook.id, lifecycle_event=live.name)
        elif error is not None:
            outcome = "error"
            _log.warning(
                "observer hook failed",
                hook_id=hook.id,
                lifecycle_event=live.name,
                error=scrub(str(error)),
            )
        self._record(hook, outcome, time.perf_counter() - start)

    # -- the watchdog of inline observer calls ---------------------------------------------------

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
                    now = time.perf_counter()
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
                now = time.perf_counter()
                if slot is None:
                    time.sleep(_WATCH_POLL_S)
                elif now < slot[1]:
                    time.sleep(min(_WATCH_POLL_S, slot[1] - now))
                else:
                    self._abandon_inline(run, slot)

    def _abandon_inline(
        self, run: _ObserverRun, slot: tuple[Hook, float, int, LiveEvent, float]
    ) -> None:
        hook, _, gen, live, start = slot
        with self._watch_lock:
            if run.inflight is not slot or run.gen != gen:
                return  # it returned meanwhile
            run.inflight = None
            run.gen = gen + 1
            stuck: Future[None] = Future()
            run.stuck[gen] = stuck
            with self._pool_lock:
                self._abandoned[stuck] = (None, hook.id)
            # Recorded before the batch goes on (a flush that returns sees it), and with the
            # lock held, so the stuck thread cannot return and carry on before it is replaced.
            self._observed(live, hook, start, DeadlinePassed())
            new_gen = run.gen
            self._observers.replace_thread(lambda: self._continue(run, new_gen))

    # -- calling a handler under a deadline ------------------------------------------------------

    def _check_capacity(self, hook: Hook, event: str) -> None:
        """Past MAX_ABANDONED stuck calls of one hook, that hook fails fast instead of leaking
        more threads; other hooks are not counted against it. Call with _pool_lock held."""
        self._abandoned = {f: v for f, v in self._abandoned.items() if not f.done()}
        mine = sum(1 for _, hook_id in self._abandoned.values() if hook_id == hook.id)
        if mine >= MAX_ABANDONED:
            raise HookCapacityError(
                f"{mine} calls of this hook are stuck past their deadline",
                hook_id=hook.id,
                event=event,
            )

    def _executor(self, hook: Hook, event: str) -> ThreadPoolExecutor:
        with self._pool_lock:
            # Threads abandoned at their deadline still occupy the pool: when they could starve
            # the next handler, later calls go to a fresh pool (the stuck threads end on their
            # own).
            self._check_capacity(hook, event)
            stuck_here = sum(1 for p, _ in self._abandoned.values() if p is self._pool)
            if self._pool is None or stuck_here >= self._pool_size - 1:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(
                    self._pool_size, thread_name_prefix="otelhooks-hook"
                )
            return self._pool

    def _submit(
        self, hook: Hook, event: str, fn: Callable[..., Any], *args: Any
    ) -> tuple[Future[Any], ThreadPoolExecutor, Hook]:
        pool = self._executor(hook, event)
        return pool.submit(contextvars.copy_context().run, fn, *args), pool, hook

    def _abandon(self, submitted: tuple[Future[Any], ThreadPoolExecutor, Hook]) -> None:
        """Count a call past its deadline against its hook, unless it never started."""
        future, pool, hook = submitted
        if future.done() or future.cancel():
            return  # finished in time after all, or still queued: it will never start late
        with self._pool_lock:
            self._abandoned[future] = (pool, hook.id)

    def _wait(self, submitted: tuple[Future[Any], ThreadPoolExecutor, Hook], timeout: float) -> Any:
        future = submitted[0]
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            if future.done():
                raise  # the handler itself raised TimeoutError: an error, not our deadline
            self._abandon(submitted)
            raise DeadlinePassed from None

    def _start(self, hook: Hook, payload: HookEvent) -> Any:
        action = hook.action
        if getattr(action, "self_bounded", False):
            return _Bounded(action, payload)  # called in _finish, on the caller's thread
        if action.is_async:
            return self._submit(hook, payload.event, _run_coroutine, action, payload)
        return self._submit(hook, payload.event, action, payload)

    def _try_start(self, hook: Hook, payload: HookEvent) -> Any:
        """:meth:`_start`, with a failure to start kept for :meth:`_finish` to raise."""
        try:
            return self._start(hook, payload)
        except Exception as exc:
            return exc

    def _finish(self, hook: Hook, started: Any, timeout: float) -> Any:
        if isinstance(started, Exception):
            raise started
        if isinstance(started, _Bounded):
            return started.action(started.payload)
        result = self._wait(started, timeout)
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            return self._wait(self._submit(hook, hook.event, asyncio.run, result), hook.deadline_s)
        return result

    def _call_with_deadline(self, hook: Hook, payload: HookEvent) -> Any:
        return self._finish(hook, self._start(hook, payload), hook.deadline_s)

    def _call_inline(self, hook: Hook, payload: HookEvent) -> Any:
        """Call a sync hook on this thread and judge its deadline after it returns.

        The verdict is the one the pooled call gives for every hook that returns (one past its
        deadline is a timeout, and what it did late does not count), without two thread
        hand-offs per hook, which cost more than most handlers (replay runs whole recordings).
        A hook that never returns blocks the caller: only for callers that accept that.
        Commands and webhooks enforce their own timeouts either way.
        """
        action = hook.action
        if action.is_async:
            return self._call_with_deadline(hook, payload)
        started = time.perf_counter()
        # In a copy of the context, as in the pool: a hook's context variables stay its own.
        result = contextvars.copy_context().run(action, payload)
        if result is not None and inspect.isawaitable(result):  # a sync callable's coroutine
            return self._wait(self._submit(hook, hook.event, asyncio.run, result), hook.deadline_s)
        if time.perf_counter() - started > hook.deadline_s:
            raise DeadlinePassed
        return result

    async def _acall_with_deadline(self, hook: Hook, payload: HookEvent) -> Any:
        action = hook.action
        acall = getattr(action, "acall", None)
        if acall is not None:  # holds no thread: awaited on this loop
            result = await _within(acall(payload), hook.deadline_s)
        elif action.is_async:
            result = await _within(action(payload), hook.deadline_s)
        else:
            # Our pool, never the application's default executor (asyncio.to_thread): a hook
            # stuck past its deadline must not take the application's threads.
            submitted = self._submit(hook, payload.event, action, payload)
            try:
                result = await _within(asyncio.wrap_future(submitted[0]), hook.deadline_s)
            except DeadlinePassed:
                self._abandon(submitted)
                raise
        if inspect.isawaitable(result):
            return await _within(result, hook.deadline_s)
        return result

    def _record(self, hook: Hook, outcome: str, duration_s: float | None) -> None:
        """Count one invocation; its run time too, unless it never ran (``None``: dropped or
        refused at the queue, which would otherwise pile zeros into the duration histogram)."""
        kind = hook.action.kind
        key = (hook.id, hook.event, kind, outcome)
        attrs = self._attrs.get(key)
        if attrs is None:
            if len(self._attrs) >= _ATTRS_LIMIT:
                self._attrs.clear()
            attrs = self._attrs[key] = MetricAttributes(
                {
                    sc.ATTR_HOOK_ID: hook.id,
                    sc.ATTR_HOOK_EVENT: hook.event,
                    sc.ATTR_HOOK_KIND: kind,
                    sc.ATTR_OUTCOME: outcome,
                }
            )
        if duration_s is None:
            self.metrics.hook_invocations.add(1, attrs)
        else:
            self.metrics.hook_run.record(duration_s, attrs)
