"""Running hooks: interceptors inline (sync, or awaited in async runtimes), observers off the path.

Interceptors decide before the action, so the runtime waits for them, but never longer than each
hook's ``timeout``: a sync handler runs on a small thread pool and is abandoned at its deadline
(Python cannot kill a thread; the late result is ignored). Observers never make the runtime wait:
the event and the matched hooks go into a bounded queue; a full queue drops and counts.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
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
    HookError,
    HookPoolExhaustedError,
    HookTimeoutError,
)
from otelhooks._events import HookEvent
from otelhooks._hooks import Hook, enqueues
from otelhooks._live import HookStep, LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics
from otelhooks._redact import scrub
from otelhooks._worker import BoundedWorker

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = ["MAX_ABANDONED", "Dispatcher", "HookPoolExhaustedError"]

MAX_ABANDONED = 64


_log = structlog.get_logger("otelhooks")


def _run_coroutine(fn: Callable[..., Any], payload: HookEvent) -> Any:
    return asyncio.run(fn(payload))


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
        self._abandoned: dict[Future[Any], ThreadPoolExecutor] = {}
        self._closed = False
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
        self, live: LiveEvent, *, dry_run: bool = False, call_webhooks: bool = True
    ) -> Verdict:
        """Run the interceptors of ``live`` now, on this thread, each under its deadline.

        ``dry_run``: what these hooks would decide, with no side effect beyond the hooks
        themselves: notification webhooks are not enqueued and nothing is counted in metrics.
        ``call_webhooks=False``: control webhooks are listed in ``Verdict.would_call`` instead
        of called.
        """
        chain = self._begin_chain(live, dry_run, call_webhooks)
        if chain is None:
            return self._end_chain(live, None)
        for hook in chain.hooks:
            if self._skips(chain, hook):
                continue
            payload, started = chain.before_call(hook), time.perf_counter()
            try:
                result = self._call_with_deadline(hook, payload)
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
            live.payload()  # built now: the runtime may change its inputs after this returns
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
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _run_observer_batch(self, batch: list[tuple[LiveEvent, list[Hook]]]) -> None:
        for index, (live, hooks) in enumerate(batch):
            if self._closed:
                # Past the shutdown deadline the pool is gone: count what is left, once.
                self.metrics.dropped.add(
                    len(batch) - index,
                    {sc.ATTR_DROP_SOURCE: "observer_queue", sc.ATTR_DROP_REASON: "shutdown"},
                )
                return
            payload = live.payload()
            # Actions marked ``concurrent`` (commands) start together and run beside the others,
            # which keep registration order; every hook of the event settles, each under its own
            # deadline, before the next event (the workspace engine's Promise.allSettled).
            parallel: dict[int, tuple[float, Any]] = {}
            for hook in hooks:
                if hook.action.concurrent:
                    parallel[id(hook)] = (time.perf_counter(), self._try_start(hook, payload))
            for hook in hooks:
                if not hook.action.concurrent:
                    start = time.perf_counter()
                    self._observe_one(live, hook, start, self._call_with_deadline, hook, payload)
            for hook in hooks:
                if hook.action.concurrent:
                    start, started = parallel[id(hook)]
                    left = max(0.0, hook.deadline_s - (time.perf_counter() - start))
                    self._observe_one(live, hook, start, self._finish, hook, started, left)

    def _observe_one(
        self, live: LiveEvent, hook: Hook, start: float, call: Callable[..., Any], *args: Any
    ) -> None:
        outcome = "ok"
        try:
            call(*args)
        except (DeadlinePassed, HookTimeoutError):
            outcome = "timeout"
            _log.warning("observer hook timed out", hook_id=hook.id, lifecycle_event=live.name)
        except Exception as exc:
            outcome = "error"
            _log.warning(
                "observer hook failed",
                hook_id=hook.id,
                lifecycle_event=live.name,
                error=scrub(str(exc)),
            )
        self._record(hook, outcome, time.perf_counter() - start)

    # -- calling a handler under a deadline ------------------------------------------------------

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            # Threads abandoned at their deadline still occupy the pool: when they could starve
            # the next handler, later calls go to a fresh pool (the stuck threads end on their
            # own). Past MAX_ABANDONED stuck handlers, calls fail fast instead of leaking more.
            self._abandoned = {f: p for f, p in self._abandoned.items() if not f.done()}
            if len(self._abandoned) >= MAX_ABANDONED:
                raise HookPoolExhaustedError(
                    f"{len(self._abandoned)} hook handlers are stuck past their deadline"
                )
            stuck_here = sum(1 for p in self._abandoned.values() if p is self._pool)
            if self._pool is None or stuck_here >= self._pool_size - 1:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(
                    self._pool_size, thread_name_prefix="otelhooks-hook"
                )
            return self._pool

    def _submit(self, fn: Callable[..., Any], *args: Any) -> tuple[Future[Any], ThreadPoolExecutor]:
        pool = self._executor()
        return pool.submit(contextvars.copy_context().run, fn, *args), pool

    def _wait(self, submitted: tuple[Future[Any], ThreadPoolExecutor], timeout: float) -> Any:
        future, pool = submitted
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            if future.done():
                raise  # the handler itself raised TimeoutError: an error, not our deadline
            if future.cancel():
                raise DeadlinePassed from None  # still queued: it will never start late
            with self._pool_lock:
                self._abandoned[future] = pool
            raise DeadlinePassed from None

    def _start(self, hook: Hook, payload: HookEvent) -> tuple[Future[Any], ThreadPoolExecutor]:
        action = hook.action
        if action.is_async:
            return self._submit(_run_coroutine, action, payload)
        return self._submit(action, payload)

    def _try_start(self, hook: Hook, payload: HookEvent) -> Any:
        """:meth:`_start`, with a failure to start kept for :meth:`_finish` to raise."""
        try:
            return self._start(hook, payload)
        except Exception as exc:
            return exc

    def _finish(self, hook: Hook, started: Any, timeout: float) -> Any:
        if isinstance(started, Exception):
            raise started
        result = self._wait(started, timeout)
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            return self._wait(self._submit(asyncio.run, result), hook.deadline_s)
        return result

    def _call_with_deadline(self, hook: Hook, payload: HookEvent) -> Any:
        return self._finish(hook, self._start(hook, payload), hook.deadline_s)

    async def _acall_with_deadline(self, hook: Hook, payload: HookEvent) -> Any:
        action = hook.action
        if action.is_async:
            result = await _within(action(payload), hook.deadline_s)
        else:
            result = await _within(asyncio.to_thread(action, payload), hook.deadline_s)
        if inspect.isawaitable(result):
            return await _within(result, hook.deadline_s)
        return result

    def _record(self, hook: Hook, outcome: str, duration_s: float | None) -> None:
        """Count one invocation; its run time too, unless it never ran (``None``: dropped or
        refused at the queue, which would otherwise pile zeros into the duration histogram)."""
        attrs = {
            sc.ATTR_HOOK_ID: hook.id,
            sc.ATTR_HOOK_EVENT: hook.event,
            sc.ATTR_HOOK_KIND: hook.action.kind,
            sc.ATTR_OUTCOME: outcome,
        }
        self.metrics.hook_invocations.add(1, attrs)
        if duration_s is not None:
            self.metrics.hook_duration.record(duration_s, attrs)
