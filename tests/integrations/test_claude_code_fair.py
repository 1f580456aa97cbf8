"""The fair runner behind serve's and the daemon's deciding hook events: per-key limits, turns,
deadlines and a bounded queue (deterministic: the blocking calls wait on events we set)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from otelhooks.integrations.coding_agents._fair import FairRunner, Late


def test_a_key_at_its_limit_waits_while_another_key_runs_at_once() -> None:
    runner = FairRunner(workers=8, per_key=2)
    release = threading.Event()
    started: list[str] = []
    lock = threading.Lock()

    def slow(name: str) -> str:
        with lock:
            started.append(name)
        release.wait(10)
        return name

    try:
        held = [runner.submit("a", lambda n=n: slow(f"a{n}")) for n in range(5)]
        other = runner.submit("b", lambda: "b")
        assert other.result(5) == "b"  # not behind a's backlog
        # a's first two calls start on their own threads, possibly after b's answer
        assert _until(lambda: len(started) == 2)
        time.sleep(0.1)  # time for a third to start, were a's limit not kept
        assert len(started) == 2  # a's limit, not 5
        release.set()
        assert sorted(f.result(5) for f in held) == [f"a{n}" for n in range(5)]
    finally:
        release.set()
        runner.close()


def test_a_call_past_its_deadline_raises_late_and_a_queued_one_never_runs() -> None:
    runner = FairRunner(workers=2, per_key=1)
    release = threading.Event()
    ran: list[str] = []

    async def scenario() -> None:
        first = asyncio.ensure_future(runner.run("a", lambda: release.wait(10), timeout_s=0.2))
        await asyncio.sleep(0.05)  # the first call is submitted and holds a's one slot
        with pytest.raises(Late) as late:
            await runner.run("a", lambda: ran.append("queued"), timeout_s=0.2)
        assert late.value.reason == "deadline"
        with pytest.raises(Late):
            await first

    try:
        asyncio.run(scenario())
        release.set()
        runner.close()
        assert ran == []  # given up on before it started: never run
        assert runner.late == 2
    finally:
        release.set()


def test_a_full_queue_refuses_at_once_and_counts_it() -> None:
    drops: list[str] = []
    runner = FairRunner(
        workers=1, per_key=1, max_queued_per_key=2, on_drop=lambda n, why: drops.append(why)
    )
    release, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    try:
        running = runner.submit("a", hold)
        assert started.wait(5)  # taken by the thread: no longer waiting
        queued = [runner.submit("a", lambda: None) for _ in range(2)]
        with pytest.raises(Late) as refused:
            runner.submit("a", lambda: None)
        assert refused.value.reason == "queue_full"
        assert drops == ["queue_full"]
        release.set()
        running.result(5)
        for future in queued:
            future.result(5)
    finally:
        release.set()
        runner.close()


def test_free_threads_take_keys_in_turn() -> None:
    runner = FairRunner(workers=1, per_key=1)
    gate = threading.Event()
    order: list[str] = []
    try:
        blocker = runner.submit("x", lambda: gate.wait(10))
        futures = [runner.submit(key, lambda key=key: order.append(key)) for key in "aaab"]
        gate.set()
        blocker.result(5)
        for future in futures:
            future.result(5)
        assert order.index("b") < 3  # b does not wait for all of a's calls
    finally:
        gate.set()
        runner.close()


def _until(condition: Any, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_call_that_never_returns_costs_its_thread_not_its_key_nor_the_pool() -> None:
    runner = FairRunner(workers=1, per_key=1)
    release = threading.Event()
    late: list[str] = []

    async def scenario() -> list[str]:
        with pytest.raises(Late):
            await runner.run("a", lambda: late.append(str(release.wait(30))), timeout_s=0.2)
        # the only thread is held: after the call's grace it is replaced, and its key is free
        return [
            await runner.run("b", lambda: "b", timeout_s=5),
            await runner.run("a", lambda: "a again", timeout_s=5),
        ]

    try:
        assert asyncio.run(scenario()) == ["b", "a again"]
        assert runner.stuck == 1
        assert runner.late == 1
        release.set()
        assert _until(lambda: runner.stuck == 0)
        assert late == ["True"]  # it ran to its end; its result went nowhere
    finally:
        release.set()
        runner.close()


def test_a_late_call_within_its_grace_holds_only_its_own_key() -> None:
    runner = FairRunner(workers=2, per_key=1)
    release = threading.Event()

    async def scenario() -> str:
        with pytest.raises(Late):
            await runner.run("a", lambda: release.wait(30), timeout_s=0.2)
        with pytest.raises(Late):  # a's slot is still held by its late call (its grace)
            await runner.run("a", lambda: "never", timeout_s=0.1)
        return await runner.run("b", lambda: "b", timeout_s=5)

    try:
        assert asyncio.run(scenario()) == "b"
    finally:
        release.set()
        runner.close()


def test_stuck_threads_are_replaced_at_most_max_stuck_times() -> None:
    runner = FairRunner(workers=1, per_key=1, max_stuck=1)
    release = threading.Event()
    threads_before = threading.active_count()

    async def scenario() -> None:
        for key in "ab":
            with pytest.raises(Late):
                await runner.run(key, lambda: release.wait(30), timeout_s=0.1)
            await asyncio.sleep(0.25)  # past its grace: stuck
        # two stuck, one more than max_stuck: no thread is left to serve, the pool shrinks
        with pytest.raises(Late):
            await runner.run("c", lambda: "c", timeout_s=0.3)

    try:
        asyncio.run(scenario())
        assert runner.stuck == 2
        assert threading.active_count() - threads_before <= 2  # workers + max_stuck
        release.set()
        assert _until(lambda: runner.stuck == 0)
        assert asyncio.run(runner.run("c", lambda: "c", timeout_s=5)) == "c"
    finally:
        release.set()
        runner.close()


def test_the_blocking_form_gives_up_at_its_deadline_and_replaces_the_thread() -> None:
    runner = FairRunner(workers=1, per_key=1)
    release = threading.Event()
    try:
        with pytest.raises(Late) as late:
            runner.call("a", lambda: release.wait(30), timeout_s=0.2)
        assert late.value.reason == "deadline"
        assert runner.stuck == 1
        assert runner.call("b", lambda: "b", timeout_s=5) == "b"  # on the thread replacing it
    finally:
        release.set()
        runner.close()


def test_a_waiter_cancelled_before_its_call_starts_leaves_it_unrun() -> None:
    runner = FairRunner(workers=1, per_key=1)
    release = threading.Event()
    ran: list[str] = []

    async def scenario() -> None:
        blocker = asyncio.ensure_future(runner.run("a", lambda: release.wait(10), timeout_s=5))
        waiting = asyncio.ensure_future(runner.run("a", lambda: ran.append("x"), timeout_s=5))
        await asyncio.sleep(0.05)
        waiting.cancel()  # the request went away while its call waited
        with pytest.raises(asyncio.CancelledError):
            await waiting
        release.set()
        assert await blocker is True

    try:
        asyncio.run(scenario())
        assert runner.call("a", lambda: "after", timeout_s=5) == "after"
        assert ran == []
        assert runner.late == 0  # nobody was answered late: nobody waited
    finally:
        release.set()
        runner.close()


def test_quick_calls_of_many_keys_run_on_at_most_busy_threads_at_once() -> None:
    # "Quick" is relative to grow_after_s: a call that has run that long is slow and rightly gets
    # one more thread. A loaded machine can hold a 0.5 ms call past the 5 ms default, so the bound
    # here is far beyond any scheduling delay: only a runner that ignores ``busy`` exceeds it.
    runner = FairRunner(workers=32, per_key=1, busy=2, grow_after_s=30)
    lock = threading.Lock()
    now = [0]
    most = [0]

    def quick() -> None:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.0005)  # quick, and long enough for calls to pile up behind it
        with lock:
            now[0] -= 1

    async def session(key: str) -> None:
        for _ in range(20):
            await runner.run(key, quick, timeout_s=5)

    async def sessions() -> None:
        await asyncio.wait_for(asyncio.gather(*(session(f"s{n}") for n in range(16))), 30)

    try:
        asyncio.run(sessions())
        assert most[0] <= 2  # 16 sessions at once, never more than busy threads running
        assert runner.late == 0
    finally:
        runner.close()


@pytest.mark.parametrize("form", ["run", "call"])
def test_a_call_behind_a_slow_one_gets_a_thread_of_its_own_soon(form: str) -> None:
    # one busy thread, held by a slow call of a: b's call must not wait for a's release
    runner = FairRunner(workers=4, per_key=1, busy=1, grow_after_s=0.005)
    release, holding = threading.Event(), threading.Event()

    def slow() -> str:
        holding.set()
        release.wait(10)
        return "a"

    async def scenario() -> float:
        first = asyncio.ensure_future(runner.run("a", slow, timeout_s=10))
        assert await asyncio.to_thread(holding.wait, 5)
        began = time.monotonic()
        if form == "run":
            assert await runner.run("b", lambda: "b", timeout_s=5) == "b"
        else:
            assert await asyncio.to_thread(runner.call, "b", lambda: "b", timeout_s=5) == "b"
        waited = time.monotonic() - began
        release.set()
        assert await first == "a"
        return waited

    try:
        assert asyncio.run(scenario()) < 2.0  # a's call holds its thread for up to 10 s
        assert runner.late == 0
    finally:
        release.set()
        runner.close()


def test_a_call_arriving_as_the_runner_closes_is_late_not_an_error() -> None:
    """hooks_for's callback checks it is open, then runs; a close() in between used to raise
    RuntimeError there, which the Claude Agent SDK takes as a failed callback and runs the
    tool: it is :class:`Late`, answered with the fail-closed answer like any late call."""
    runner = FairRunner()
    runner.close()
    with pytest.raises(Late) as caught:
        asyncio.run(runner.run("s", lambda: "ran", timeout_s=1.0))
    assert caught.value.reason == "closed"
    with pytest.raises(Late):
        runner.submit("s", lambda: "ran")


class _TimerCountingLoop(asyncio.SelectorEventLoop):
    """An event loop (the test's own) that notes every timer scheduled on it: how far ahead."""

    def __init__(self) -> None:
        super().__init__()
        self.ahead_s: list[float] = []

    def call_at(self, when: float, callback: Any, *args: Any, context: Any = None) -> Any:
        self.ahead_s.append(when - self.time())
        return super().call_at(when, callback, *args, context=context)


def test_a_quick_call_schedules_one_timer_on_the_loop_and_the_deadline_still_holds() -> None:
    """Each guarded PreToolUse under serve goes through ``run``: a call answered before
    ``grow_after_s`` schedules one timer, never its far deadline (before: a second timer at the
    deadline, 8 s ahead, left cancelled in the loop's heap by every quick call). A call still
    running at ``grow_after_s`` then gets its deadline, and one whose deadline comes first is
    given up on at its deadline."""
    runner = FairRunner(workers=4, per_key=1, grow_after_s=5.0)
    release = threading.Event()

    async def scenario(loop: _TimerCountingLoop) -> tuple[list[float], float, float]:
        before = len(loop.ahead_s)
        for n in range(20):
            assert await runner.run(f"s{n % 4}", lambda n=n: n, timeout_s=30.0) == n
        quick = loop.ahead_s[before:]
        began = time.monotonic()
        with pytest.raises(Late):  # its deadline (0.2 s) before grow_after_s (5 s)
            await runner.run("s-late", lambda: release.wait(10), timeout_s=0.2)
        short = time.monotonic() - began
        stalling = FairRunner(workers=4, per_key=1, grow_after_s=0.05)
        began = time.monotonic()
        try:
            with pytest.raises(Late):  # stalled at 0.05 s, then given up on at 0.4 s
                await stalling.run("s-slow", lambda: release.wait(10), timeout_s=0.4)
        finally:
            release.set()
            stalling.close()
        return quick, short, time.monotonic() - began

    try:
        with asyncio.Runner(loop_factory=_TimerCountingLoop) as run:
            loop = run.get_loop()
            assert isinstance(loop, _TimerCountingLoop)
            quick, short, slow = run.run(scenario(loop))
        assert len(quick) == 20  # one timer per call
        assert max(quick) <= 5.0 + 0.01  # none as far as the 30 s deadline
        assert 0.2 <= short < 3.0
        assert 0.4 <= slow < 3.0
    finally:
        release.set()
        runner.close()
