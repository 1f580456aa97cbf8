"""Sync observers run inline on the observer worker, under a watchdog.

The worker calls a sync handler itself (no thread hand-off per call); a watchdog abandons a call
past its deadline (outcome ``timeout``) and a new worker thread goes on with the next hook. The
abandoned thread, when it returns, records nothing more and runs no further hook; stuck calls
count against their hook's cap (``MAX_ABANDONED``) like stuck pool calls do.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import hook

from otelhooks import semconv as sc
from otelhooks._dispatch import _calls, _observers
from otelhooks.testing import TestPipeline

INVOCATIONS = "otelhooks.hook.invocations"


def invocations(pipe: TestPipeline, hook_id: str, outcome: str) -> float:
    return pipe.metric_total(INVOCATIONS, {sc.ATTR_HOOK_ID: hook_id, sc.ATTR_OUTCOME: outcome})


def _ok(**kwargs: Any) -> str:
    return "ran"


def run_tools(pipe: TestPipeline, *names: str) -> None:
    with pipe.tracer.operation("a") as op, op.step() as step:
        for name in names:
            step.run_tool("fs", name, {}, _ok)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_sync_observer_runs_on_the_observer_worker_thread(pipe: TestPipeline) -> None:
    threads: list[str] = []
    pipe.register(
        hook("w", "afterToolCall", lambda e: threads.append(threading.current_thread().name))
    )
    run_tools(pipe, "one", "two")
    pipe.flush()
    assert threads == ["otelhooks-observers", "otelhooks-observers"]
    assert invocations(pipe, "w", "ok") == 2


def test_a_stuck_inline_observer_times_out_and_the_next_observers_run(
    pipe: TestPipeline, release: threading.Event
) -> None:
    ran: list[tuple[str, str, int]] = []
    stuck_thread: list[int] = []

    def stuck(event: Any) -> None:
        if event.apiName == "two":
            stuck_thread.append(threading.get_ident())
            release.wait(10)
        ran.append(("stuck", event.apiName, threading.get_ident()))

    def after(event: Any) -> None:
        ran.append(("after", event.apiName, threading.get_ident()))

    pipe.register(
        hook("stuck", "afterToolCall", stuck, timeout=0.2),
        hook("after", "afterToolCall", after),
    )
    started = time.perf_counter()
    run_tools(pipe, "one", "two", "three")
    pipe.flush()
    assert time.perf_counter() - started < 3  # the 10 s hang cost its deadline, not 10 s
    assert [(h, n) for h, n, _ in ran] == [
        ("stuck", "one"),
        ("after", "one"),
        ("after", "two"),  # the same event's next observer
        ("stuck", "three"),
        ("after", "three"),
    ]
    assert invocations(pipe, "stuck", "timeout") == 1
    assert invocations(pipe, "stuck", "ok") == 2
    assert invocations(pipe, "after", "ok") == 3
    # The rest of the batch ran on a replacement thread.
    assert all(ident != stuck_thread[0] for h, n, ident in ran if n == "three")

    release.set()  # the abandoned call returns now: nothing more is recorded or run on it
    time.sleep(0.2)
    assert invocations(pipe, "stuck", "timeout") == 1
    assert invocations(pipe, "stuck", "ok") == 2
    assert [(h, n) for h, n, _ in ran][-1] == ("stuck", "two")  # it finished its own call only
    assert invocations(pipe, "after", "ok") == 3

    run_tools(pipe, "four")  # the replacement serves later events
    pipe.flush()
    assert invocations(pipe, "stuck", "ok") == 3
    assert invocations(pipe, "after", "ok") == 4


def test_an_abandoned_thread_that_returns_leaves_the_queue_to_its_replacement(
    pipe: TestPipeline, release: threading.Event
) -> None:
    threads: set[int] = set()
    first = threading.Event()

    def observer(event: Any) -> None:
        threads.add(threading.get_ident())
        if not first.is_set():
            first.set()
            release.wait(10)

    pipe.register(hook("o", "afterToolCall", observer, timeout=0.1))
    run_tools(pipe, "one")
    pipe.flush()
    assert invocations(pipe, "o", "timeout") == 1
    release.set()
    time.sleep(0.1)
    run_tools(pipe, *[f"t{i}" for i in range(20)])
    pipe.flush()
    assert invocations(pipe, "o", "ok") == 20
    assert invocations(pipe, "o", "timeout") == 1
    assert len(threads) == 2  # the stuck thread, then its replacement only


def test_stuck_inline_calls_count_against_the_hook_cap(
    pipe: TestPipeline, release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_calls, "MAX_ABANDONED", 2)
    others: list[str] = []
    pipe.register(
        hook("hangs", "afterToolCall", lambda e: release.wait(10), timeout=0.05),
        hook("other", "afterToolCall", lambda e: others.append(e.apiName)),
    )
    run_tools(pipe, "one", "two", "three", "four")
    pipe.flush()
    assert invocations(pipe, "hangs", "timeout") == 2
    assert invocations(pipe, "hangs", "error") == 2  # HookCapacityError: fails fast
    assert others == ["one", "two", "three", "four"]  # no other hook notices

    release.set()  # the stuck calls return: the hook runs again
    stuck = list(pipe.oh.engine._dispatcher._calls.abandoned)
    assert len(stuck) == 2
    # the next call's capacity check forgets them once they are done (the dict itself is
    # pruned only then: waiting for it to empty would wait the whole deadline)
    deadline = time.monotonic() + 30
    while not all(f.done() for f in stuck) and time.monotonic() < deadline:
        time.sleep(0.01)
    run_tools(pipe, "five")
    pipe.flush()
    assert invocations(pipe, "hangs", "ok") == 1


_var: contextvars.ContextVar[str] = contextvars.ContextVar("observer_test", default="unset")


def test_each_observer_call_has_its_own_context(pipe: TestPipeline) -> None:
    seen: list[str] = []

    def sets(event: Any) -> None:
        seen.append(_var.get())
        _var.set(event.apiName)

    pipe.register(
        hook("sets", "afterToolCall", sets),
        hook("reads", "afterToolCall", lambda e: seen.append(_var.get())),
    )
    run_tools(pipe, "one", "two")
    pipe.flush()
    assert seen == ["unset", "unset", "unset", "unset"]


def test_a_late_return_within_the_watchdog_poll_is_a_timeout(pipe: TestPipeline) -> None:
    # Judged on return as well: a call past its deadline is a timeout even if it returns
    # before the watchdog looks.
    pipe.register(hook("late", "afterToolCall", lambda e: time.sleep(0.03), timeout=0.01))
    run_tools(pipe, "one")
    pipe.flush()
    assert invocations(pipe, "late", "timeout") == 1
    assert invocations(pipe, "late", "ok") == 0


def test_the_idle_watchdog_ends_and_comes_back(
    pipe: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_observers, "_WATCH_IDLE_S", 0.05)
    pipe.register(hook("w", "afterToolCall", lambda e: None))
    runner = pipe.oh.engine._dispatcher._observers
    run_tools(pipe, "one")
    pipe.flush()
    deadline = time.monotonic() + 30
    while runner._watchdog is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner._watchdog is None
    run_tools(pipe, "two")
    pipe.flush()
    assert invocations(pipe, "w", "ok") == 2


def test_metric_attributes_are_built_once_per_hook_and_outcome(pipe: TestPipeline) -> None:
    pipe.register(hook("w", "afterToolCall", lambda e: None))
    run_tools(pipe, "one", "two", "three")
    pipe.flush()
    dispatcher = pipe.oh.engine._dispatcher
    assert list(dispatcher._attrs.values()) == [
        {
            sc.ATTR_HOOK_ID: "w",
            sc.ATTR_HOOK_EVENT: "after_tool_call",
            sc.ATTR_HOOK_KIND: "handler",
            sc.ATTR_OUTCOME: "ok",
        }
    ]


def test_what_the_worker_calls_inline_for_each_kind_of_hook() -> None:
    from otelhooks import Hook
    from otelhooks._actions import build_hook
    from otelhooks._actions._handler import HandlerAction

    def fn(event: Any) -> None:
        return None

    async def afn(event: Any) -> None:
        return None

    class Wrapped(HandlerAction):
        def __call__(self, payload: Any) -> Any:
            return ("wrapped", self.fn(payload))

    plain = build_hook(Hook(id="p", type="afterToolCall", handler=fn))
    assert plain.inline is fn  # the function itself: no wrapper frame
    assert build_hook(Hook(id="a", type="afterToolCall", handler=afn)).inline is None
    command = build_hook(Hook(id="c", type="afterToolCall", command=["true"]))
    assert command.inline is None  # concurrent: started beside its siblings
    wrapped = Hook(id="w", type="afterToolCall", handler=fn)
    wrapped.bind(Wrapped(fn))
    assert wrapped.inline is wrapped.action  # a subclass that calls something else


def test_a_wrapped_handler_runs_as_its_action_says(pipe: TestPipeline) -> None:
    from otelhooks import Hook
    from otelhooks._actions._handler import HandlerAction

    calls: list[str] = []

    class Counting(HandlerAction):
        def __call__(self, payload: Any) -> Any:
            calls.append("action")
            return self.fn(payload)

    hooked = Hook(id="c", type="afterToolCall", handler=lambda e: calls.append("fn"))
    hooked.bind(Counting(hooked.handler))  # type: ignore[arg-type]
    pipe.register(hooked)
    run_tools(pipe, "one")
    pipe.flush()
    assert calls == ["action", "fn"]
