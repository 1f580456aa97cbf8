"""Calling one hook under its deadline, and the cap on calls stuck past it.

A sync handler runs on a small thread pool of ours (never the application's ``asyncio.to_thread``
executor) and is abandoned at its deadline: Python cannot kill a thread, so the late result is
ignored and the thread counted as stuck until it returns. Capacity is per hook: past
:data:`MAX_ABANDONED` stuck calls of one hook, that hook fails fast
(:class:`~otelhooks.HookCapacityError`, which follows its ``on_error``) while every other hook
keeps running. An action that ends itself at its own deadline without holding a thread
(``self_bounded``: control webhooks, whose requests run on the webhook I/O loop) is called
directly, and awaited through its ``acall`` in async runtimes.

A caller whose own waiter answers by a deadline whatever the hooks do (``serve``'s deciding
route: its event loop waits for the deciding thread at most that long, then answers the
fail-closed or fail-open answer) says so with :func:`waited_within`. Under it, a sync Python hook
whose own deadline is no shorter runs on the caller's thread: that deadline cannot pass before the
waiter has answered, so the verdict is the pooled call's, without two thread hand-offs. A call
still running when the waiter gave up counts as stuck against its hook, exactly as an abandoned
pooled call (the same :data:`MAX_ABANDONED` cap), and the hook's next calls take the pool until
it returns. Commands, webhooks, async hooks and hooks with a shorter deadline keep their own road.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any

from otelhooks._actions._handler import HandlerAction
from otelhooks._dispatch._failures import hooks_failure
from otelhooks._dispatch._late import late_answer, late_pooled, late_task
from otelhooks._errors import DeadlinePassed, HookCapacityError
from otelhooks._events import HookEvent
from otelhooks._hooks import Hook

__all__ = [
    "MAX_ABANDONED",
    "HookCalls",
    "waited_within",
]

MAX_ABANDONED = 64  # per hook

# A submitted pool call: its future, the pool it runs on, its hook.
_Submitted = tuple["Future[Any]", ThreadPoolExecutor, Hook]


# Seconds within which the waiter of this thread's work answers whatever the hooks do (None: no
# such waiter, every hook call keeps its own deadline on the pool).
# (deadline, the ids of the only hooks that may run here, or None for any)
_WAITED: contextvars.ContextVar[tuple[float, frozenset[int] | None] | None] = (
    contextvars.ContextVar("otelhooks_waited_within", default=None)
)


@contextmanager
def waited_within(deadline_s: float, *, only: frozenset[int] | None = None) -> Iterator[None]:
    """Hook calls made inside run sync Python hooks on this thread (see the module doc).

    Only for work whose waiter gives up on it (and answers) ``deadline_s`` after it was
    submitted or earlier: a hook that never returns holds this thread, not the answer.
    ``only`` (``id()`` of hook objects) narrows it to those hooks, for a caller that knows
    they never wait (serve's event-log observers, on its event loop); any other hook keeps
    its own road.
    """
    token = _WAITED.set((deadline_s, only))
    try:
        yield
    finally:
        _WAITED.reset(token)


def _hook_code(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, a hook's code: what it raises is an ``Exception`` (:func:`hooks_failure`)."""
    try:
        return fn(*args)
    except Exception:
        raise
    except BaseException as exc:
        failure = hooks_failure(exc)
        if failure is None:
            raise
        raise failure from exc


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _run_coroutine(fn: Callable[..., Any], payload: HookEvent) -> Any:
    return asyncio.run(fn(payload))


class _Bounded:
    """A call of a ``self_bounded`` action, made on the caller's thread when it is finished."""

    __slots__ = ("action", "payload")

    def __init__(self, action: Any, payload: HookEvent) -> None:
        self.action = action
        self.payload = payload


async def _guarded(awaitable: Any) -> tuple[bool, Any]:
    """``(True, result)`` or ``(False, the hook's failure)``; a cancellation of this task
    (its deadline, or its caller's) goes on up."""
    try:
        return True, await awaitable
    except Exception as exc:
        return False, exc
    except BaseException as exc:
        task = asyncio.current_task()
        if isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling():
            raise
        failure = hooks_failure(exc)
        if failure is None:
            raise
        return False, failure


class HookCalls:
    """Calls hooks under their deadlines (``hook.deadline_s``); raises
    :class:`~otelhooks._errors.DeadlinePassed` for a call past it.

    Two-phase for hooks that run side by side: :meth:`try_start` starts one, :meth:`finish`
    waits for it with the time it has left.
    """

    def __init__(self, pool_size: int = 8) -> None:
        self._pool_size = pool_size
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        # Calls abandoned at their deadline that may still run: their pool (None: an inline
        # observer call, on an abandoned worker thread) and their hook's id. Non-empty: a hook
        # may be at its cap of stuck calls. Read without the lock, as a truth value, on every
        # observer call; changed only with the lock held.
        self.abandoned: dict[
            Future[Any] | asyncio.Future[Any], tuple[ThreadPoolExecutor | None, str]
        ] = {}
        # Calls running on their caller's thread under waited_within: their hook's id and when
        # their waiter gives up on them (past it, the call counts as stuck). Keyed by the call.
        self._here: dict[object, tuple[str, float]] = {}

    def check_capacity(self, hook: Hook, event: str) -> None:
        """Raise :class:`~otelhooks.HookCapacityError` when ``hook`` is at its cap of stuck
        calls."""
        with self._lock:
            self._check_capacity(hook, event)

    def count_stuck(self, done_when_returned: Future[None], hook: Hook) -> None:
        """Count a call abandoned elsewhere (an inline observer's thread) against ``hook`` until
        ``done_when_returned`` is done."""
        with self._lock:
            self.abandoned[done_when_returned] = (None, hook.id)

    def call(self, hook: Hook, payload: HookEvent) -> Any:
        """Call ``hook`` and wait for it, at most until its deadline."""
        waited = _WAITED.get()
        if waited is not None:
            within, only = waited
            if (only is None or id(hook) in only) and self._may_run_here(hook, within):
                return self._run_here(hook, payload, within)
        return self.finish(hook, self._start(hook, payload), hook.deadline_s)

    def _may_run_here(self, hook: Hook, within: float) -> bool:
        """Whether ``hook`` runs on this thread under a waiter answering within ``within``: a
        sync Python hook whose deadline cannot pass first, with no call stuck past its own."""
        action = hook.action
        if not isinstance(action, HandlerAction) or action.is_async:
            return False
        if hook.deadline_s < within:
            return False  # its own deadline may come first: the pool keeps it
        if self.abandoned or self._here:
            with self._lock:
                return self._stuck(hook.id) == 0
        return True

    def _run_here(self, hook: Hook, payload: HookEvent, within: float) -> Any:
        """Call a sync Python hook on this thread (its waiter keeps the deadline)."""
        call = object()
        started = time.perf_counter()
        with self._lock:
            self._here[call] = (hook.id, time.monotonic() + within)
        try:
            # In a copy of the context, as in the pool: a hook's context variables stay its own.
            result = contextvars.copy_context().run(_hook_code, hook.action, payload)
        finally:
            with self._lock:
                del self._here[call]
        if result is not None and inspect.isawaitable(result):  # a sync callable's coroutine
            return self.run_coroutine(hook, result)
        if time.perf_counter() - started > hook.deadline_s:
            late_answer(hook, result)
            raise DeadlinePassed  # late, as the pool would have judged it
        return result

    def _stuck(self, hook_id: str) -> int:
        """Calls of ``hook_id`` stuck past their deadline, pooled or on a caller's thread whose
        waiter gave up. Call with the lock held."""
        self.abandoned = {f: v for f, v in self.abandoned.items() if not f.done()}
        mine = sum(1 for _, owner in self.abandoned.values() if owner == hook_id)
        if self._here:
            now = time.monotonic()
            mine += sum(
                1 for owner, until in self._here.values() if owner == hook_id and until < now
            )
        return mine

    async def acall(self, hook: Hook, payload: HookEvent) -> Any:
        """As :meth:`call`, without blocking the event loop."""
        action = hook.action
        acall = getattr(action, "acall", None)
        if acall is not None or action.is_async:  # holds no thread: awaited on this loop
            if self.abandoned:  # only then can a hook be at its cap of stuck calls
                self.check_capacity(hook, payload.event)
            result = await self._within(hook, (acall or action)(payload))
        else:
            # Our pool, never the application's default executor (asyncio.to_thread): a hook
            # stuck past its deadline must not take the application's threads.
            submitted = self._submit(hook, payload.event, action, payload)
            try:
                result = await self._within(hook, asyncio.wrap_future(submitted[0]), task=False)
            except DeadlinePassed:
                self._abandon(submitted)
                raise
        if inspect.isawaitable(result):
            return await self._within(hook, result)
        return result

    async def _within(self, hook: Hook, awaitable: Any, *, task: bool = True) -> Any:
        """``awaitable``'s result, or DeadlinePassed at ``hook``'s deadline, at once (or when
        it returns, past it, having blocked the loop).

        The hook is cancelled then but not waited for: ``asyncio.wait_for`` waits until the
        task it cancelled ends and returns what it returns, so a hook that caught its
        cancellation and went on (a retry loop with a bare ``except``) held the call past its
        deadline, and its late allow stood over ``on_error: block``. Left running, as a pooled
        call past its deadline is, it counts as stuck against its hook (``task``: it is the
        hook's own; a pool call is counted as such by its caller) until it ends. The wait is
        ``wait_for``'s own, by hand: ``asyncio.wait`` cost 11 % more a guarded call
        (benchmarks/README.md).
        """
        waiting = asyncio.ensure_future(_guarded(awaitable))
        loop = waiting.get_loop()
        woken = loop.create_future()

        def wake(_: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        timer = loop.call_later(hook.deadline_s, wake)
        waiting.add_done_callback(wake)
        until = loop.time() + hook.deadline_s
        try:
            await woken
        except asyncio.CancelledError:
            waiting.cancel()  # the caller was cancelled: so is the hook
            raise
        finally:
            timer.cancel()
        if not waiting.done():
            waiting.remove_done_callback(wake)
            waiting.cancel()
            waiting.add_done_callback(late_task(hook))  # one that caught the cancellation
            if task:
                with self._lock:
                    self.abandoned[waiting] = (None, hook.id)
            raise DeadlinePassed
        if loop.time() > until:
            # It returned, but late: it blocked the loop (``time.sleep`` in async code), so no
            # timer could end the wait. Late, as the pool judges a sync hook.
            raise DeadlinePassed
        ok, value = waiting.result()
        if not ok:
            raise value
        return value

    def run_coroutine(self, hook: Hook, coroutine: Any) -> Any:
        """Run the coroutine (or any awaitable) a sync handler returned, on the pool, under the
        hook's deadline."""
        if not inspect.iscoroutine(coroutine):
            # An awaitable that is no coroutine (an object with ``__await__``): ``asyncio.run``
            # takes only a coroutine, and its refusal was the hook's error, so its deny was lost
            # under ``on_error: continue``; the async chain awaits it.
            coroutine = _awaited(coroutine)
        return self._wait(self._submit(hook, hook.event, asyncio.run, coroutine), hook.deadline_s)

    def try_start(self, hook: Hook, payload: HookEvent) -> Any:
        """Start ``hook``; a failure to start is kept for :meth:`finish` to raise."""
        try:
            return self._start(hook, payload)
        except Exception as exc:
            return exc

    def finish(self, hook: Hook, started: Any, timeout: float) -> Any:
        """Wait up to ``timeout`` for a call :meth:`try_start` started; its result."""
        if isinstance(started, Exception):
            raise started
        if isinstance(started, _Bounded):
            return started.action(started.payload)
        result = self._wait(started, timeout)
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            return self.run_coroutine(hook, result)
        return result

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _check_capacity(self, hook: Hook, event: str) -> None:
        """Past MAX_ABANDONED stuck calls of one hook, that hook fails fast instead of leaking
        more threads; other hooks are not counted against it. Call with the lock held."""
        mine = self._stuck(hook.id)
        if mine >= MAX_ABANDONED:
            raise HookCapacityError(
                f"{mine} calls of this hook are stuck past their deadline",
                hook_id=hook.id,
                event=event,
            )

    def _executor(self, hook: Hook, event: str) -> ThreadPoolExecutor:
        with self._lock:
            # Threads abandoned at their deadline still occupy the pool: when they could starve
            # the next handler, later calls go to a fresh pool (the stuck threads end on their
            # own).
            self._check_capacity(hook, event)
            stuck_here = sum(1 for p, _ in self.abandoned.values() if p is self._pool)
            if self._pool is None or stuck_here >= self._pool_size - 1:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(
                    self._pool_size, thread_name_prefix="otelhooks-hook"
                )
            return self._pool

    def _submit(self, hook: Hook, event: str, fn: Callable[..., Any], *args: Any) -> _Submitted:
        pool = self._executor(hook, event)
        return pool.submit(contextvars.copy_context().run, _hook_code, fn, *args), pool, hook

    def _abandon(self, submitted: _Submitted) -> None:
        """Count a call past its deadline against its hook, unless it never started."""
        future, pool, hook = submitted
        if future.done() or future.cancel():
            return  # finished in time after all, or still queued: it will never start late
        with self._lock:
            self.abandoned[future] = (pool, hook.id)
        future.add_done_callback(late_pooled(hook))

    def _wait(self, submitted: _Submitted, timeout: float) -> Any:
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
            return _Bounded(action, payload)  # called in finish, on the caller's thread
        if action.is_async:
            return self._submit(hook, payload.event, _run_coroutine, action, payload)
        return self._submit(hook, payload.event, action, payload)
