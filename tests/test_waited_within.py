"""Hook calls under ``waited_within`` (serve's deciding thread, whose waiter keeps the deadline):
which hooks run on the caller's thread, and what a call stuck there costs its hook. Real engines
and real handlers; the blocking handlers wait on events the test sets."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from otelhooks import Block, HooksEngine
from otelhooks._dispatch import _calls
from otelhooks._dispatch._calls import waited_within
from otelhooks.events import ToolCallEvent

CALL = ToolCallEvent(toolCallId="c1", identifier="", apiName="rm", args={})


def _engine(handler: Callable[..., Any], **fields: Any) -> HooksEngine:
    return HooksEngine([{"id": "guard", "type": "beforeToolCall", "handler": handler, **fields}])


def _thread_of(engine: HooksEngine, within: float | None) -> str:
    """The name of the thread the guard ran on (it blocks with it)."""
    if within is None:
        verdict = engine.dispatch("before_tool_call", CALL)
    else:
        with waited_within(within):
            verdict = engine.dispatch("before_tool_call", CALL)
    assert verdict.blocked, verdict.errors
    return str(verdict.reason)


def _dispatch_within(engine: HooksEngine, within: float) -> None:
    with waited_within(within):
        engine.dispatch("before_tool_call", CALL)


def _named(event: Any) -> Block:
    return Block(threading.current_thread().name)


def test_a_sync_python_hook_runs_on_the_callers_thread_under_its_waiter() -> None:
    engine = _engine(_named)
    try:
        assert _thread_of(engine, 8.0) == threading.current_thread().name
    finally:
        engine.shutdown()


def test_without_a_waiter_a_hook_keeps_its_pooled_deadline() -> None:
    engine = _engine(_named)
    try:
        assert _thread_of(engine, None).startswith("otelhooks-hook")
    finally:
        engine.shutdown()


def test_a_hook_whose_deadline_may_come_first_keeps_the_pool() -> None:
    engine = _engine(_named, timeout=2.0)
    try:
        assert _thread_of(engine, 8.0).startswith("otelhooks-hook")
    finally:
        engine.shutdown()


def test_an_async_hook_keeps_its_own_road() -> None:
    async def named(event: Any) -> Block:
        return Block(threading.current_thread().name)

    engine = _engine(named)
    try:
        assert _thread_of(engine, 8.0) != threading.current_thread().name
    finally:
        engine.shutdown()


def test_a_late_return_is_judged_as_the_pool_judges_it() -> None:
    def slow(event: Any) -> None:
        time.sleep(0.3)

    engine = _engine(slow, timeout=0.1, on_error="block")
    try:
        with waited_within(0.05):  # a waiter giving up first: the hook may run here
            verdict = engine.dispatch("before_tool_call", CALL)
        assert verdict.blocked
        assert "timed out after 0.1s" in str(verdict.reason)
    finally:
        engine.shutdown()


def test_a_call_stuck_past_its_waiter_sends_the_hooks_next_calls_to_the_pool() -> None:
    release = threading.Event()
    names: list[str] = []

    def guard(event: Any) -> Block:
        names.append(threading.current_thread().name)
        if len(names) == 1:
            release.wait(30)  # the first call hangs
        return Block("no")

    engine = _engine(guard)
    stuck = threading.Thread(target=_dispatch_within, args=(engine, 0.2), name="deciding-1")
    try:
        stuck.start()
        time.sleep(0.4)  # past its waiter's deadline: the call counts as stuck
        _thread_of(engine, 0.2)
        assert names[0] == "deciding-1"
        assert names[1].startswith("otelhooks-hook")  # not this thread: it could hang here too
        release.set()
        stuck.join(10)
        _thread_of(engine, 0.2)
        assert names[2] == threading.current_thread().name  # returned: on this thread again
    finally:
        release.set()
        engine.shutdown()


def test_stuck_calls_on_callers_threads_count_against_the_hooks_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_calls, "MAX_ABANDONED", 2)
    release = threading.Event()
    engine = _engine(lambda event: release.wait(30) and None)
    deciding = [threading.Thread(target=_dispatch_within, args=(engine, 0.1)) for _ in range(2)]
    try:
        for thread in deciding:
            thread.start()
        time.sleep(0.3)  # both past their waiters' deadline: two stuck calls, the cap
        with waited_within(0.1):
            verdict = engine.dispatch("before_tool_call", CALL)
        assert not verdict.blocked
        assert any("stuck past their deadline" in e for e in verdict.errors)  # fails fast
    finally:
        release.set()
        for thread in deciding:
            thread.join(10)
        engine.shutdown()


def test_only_the_named_hooks_run_on_the_callers_thread() -> None:
    engine = HooksEngine(
        [
            {"id": "named", "type": "beforeToolCall", "handler": _noted},
            {"id": "other", "type": "beforeToolCall", "handler": _noted},
        ]
    )
    try:
        named = next(h for h in engine.registry.hooks() if h.id == "named")
        _RAN_ON.clear()
        with waited_within(8.0, only=frozenset({id(named)})):
            verdict = engine.dispatch("before_tool_call", CALL)
        assert not verdict.errors
        here = threading.current_thread().name
        assert _RAN_ON[0] == here  # the named hook, on this thread
        assert _RAN_ON[1].startswith("otelhooks-hook")  # the other keeps its pooled deadline
    finally:
        engine.shutdown()


_RAN_ON: list[str] = []


def _noted(event: Any) -> None:
    _RAN_ON.append(threading.current_thread().name)
