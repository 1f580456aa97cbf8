"""The intercept chain's rules attacked by real Python handlers through a real pipeline: a
handler's answer that comes in an odd shape, or too late, fails closed or is said in the log;
never a silent allow."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from typing import Any

import pytest
from structlog.testing import capture_logs

from otelhooks import Block, HookEvent, HooksEngine, ToolCallEvent, ToolResult
from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline, pipeline


@pytest.fixture
def pipe() -> Generator[TestPipeline, None, None]:
    with pipeline() as fresh:
        yield fresh


def _guard(hook_id: str, handler: Any, **options: Any) -> dict[str, Any]:
    return {"id": hook_id, "type": "beforeToolCall", "handler": handler, **options}


def _call(pipe: TestPipeline, ran: list[dict[str, Any]]) -> ToolResult:
    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("shell", "exec", {"cmd": {"argv": ["rm", "-rf", "build"]}}, tool)


def _waits_for(condition: Any, seconds: float = 10.0) -> bool:
    until = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > until:
            return False
        time.sleep(0.01)
    return True


class _Refusal:
    """An awaitable that is no coroutine (a hand-written ``__await__``), refusing the call."""

    def __await__(self) -> Generator[Any, None, Block]:
        yield from asyncio.sleep(0).__await__()
        return Block("no rm, awaited")


def test_a_sync_handler_returning_an_awaitable_that_is_no_coroutine_has_its_block_count(
    pipe: TestPipeline,
) -> None:
    # Before: asyncio.run refused it ("a coroutine was expected"), the hook failed, and under
    # on_error: continue the rm ran; the async chain awaited the same object and refused.
    pipe.register(_guard("awaits", lambda event: _Refusal()))
    ran: list[dict[str, Any]] = []
    result = _call(pipe, ran)
    assert ran == []
    assert result.content == "no rm, awaited"


class _Widened(ToolCallEvent):
    note: str = ""


def _subclass(event: HookEvent) -> ToolCallEvent:
    return _Widened(**event.model_dump(by_alias=True), note="rewritten")


def _extra_on_copy(event: HookEvent) -> HookEvent:
    return event.model_copy(update={"cmd": {"argv": ["ls"]}})


@pytest.mark.parametrize(
    ("handler", "field"), [(_subclass, "note"), (_extra_on_copy, "cmd")], ids=["subclass", "extra"]
)
def test_a_returned_model_with_a_field_the_payload_has_not_is_a_failure_not_a_rewrite(
    pipe: TestPipeline, handler: Any, field: str
) -> None:
    # Before: the model validated, its own field kept as an extra the runtime never reads, and
    # the step said "rewritten" while the call ran unchanged; a dict with that key already failed.
    pipe.register(_guard("widens", handler, on_error="block"))
    ran: list[dict[str, Any]] = []
    with capture_logs() as logs:
        result = _call(pipe, ran)
    assert ran == []
    assert result.state is not None
    assert result.state["decidedBy"] == "widens"
    errors = pipe.span("execute_tool exec").attributes[sc.HOOK_ERRORS]  # type: ignore[index]
    assert f"widens: rewrote {field}, which before_tool_call has no field for" in list(errors)
    assert [e["hook_id"] for e in logs if e["event"] == "hook failed"] == ["widens"]


def test_an_interceptor_past_its_deadline_is_said_in_the_log(pipe: TestPipeline) -> None:
    # docs/stack.md promised a `hook failed` line for a timeout; before, an intercept hook's
    # timeout let the call go on (on_error: continue) with no line at all.
    release = threading.Event()
    pipe.register(_guard("slow", lambda event: release.wait(30), timeout=0.1))
    ran: list[dict[str, Any]] = []
    try:
        with capture_logs() as logs:
            _call(pipe, ran)
    finally:
        release.set()
    assert len(ran) == 1
    (line,) = [e for e in logs if e["event"] == "hook failed"]
    assert line["hook_id"] == "slow"
    assert line["error"] == "timed out after 0.1s"


def test_a_block_returned_after_the_deadline_is_said_in_the_log(pipe: TestPipeline) -> None:
    # The late block does not count (the call went on at the deadline), but before nothing
    # said a guard had refused: it looked like a slow allow.
    release = threading.Event()

    def late_refusal(event: HookEvent) -> Block:
        release.wait(30)
        return Block("no rm, but too late")

    pipe.register(_guard("late", late_refusal, timeout=0.1))
    ran: list[dict[str, Any]] = []
    with capture_logs() as logs:
        _call(pipe, ran)
        assert len(ran) == 1  # went on at the deadline
        release.set()
        assert _waits_for(lambda: any("deadline" in e["event"] for e in logs))
    (late,) = [e for e in logs if "deadline" in e["event"]]
    assert late["event"] == "hook answered after its deadline: not applied"
    assert (late["hook_id"], late["decision"], late["reason"]) == (
        "late",
        "deny",
        "no rm, but too late",
    )


def test_an_async_block_returned_after_the_deadline_is_said_in_the_log(pipe: TestPipeline) -> None:
    # An async hook that catches its cancellation at the deadline and refuses afterwards.
    async def stubborn(event: HookEvent) -> Block:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
        return Block("no rm, but too late")

    pipe.register(_guard("stubborn", stubborn, timeout=0.1))
    ran: list[dict[str, Any]] = []

    async def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        await asyncio.sleep(0.5)  # the loop keeps running: the late answer comes meanwhile
        return "ran"

    async def main() -> None:
        async with pipe.tracer.operation("agent") as op, op.step() as step:
            await step.arun_tool("shell", "exec", {"cmd": "rm -rf build"}, tool)

    with capture_logs() as logs:
        asyncio.run(main())
    assert len(ran) == 1
    (late,) = [e for e in logs if "deadline" in e["event"]]
    assert (late["hook_id"], late["reason"]) == ("stubborn", "no rm, but too late")


def test_a_block_returned_late_to_an_inline_dry_run_is_said_in_the_log() -> None:
    # A dry run (replay) calls sync hooks on its own thread and judges the deadline on return:
    # the late block is a timeout there too, and said, as on the pool.
    def slow_refusal(event: HookEvent) -> Block:
        time.sleep(0.3)
        return Block("no rm, but too late")

    engine = HooksEngine([_guard("slow", slow_refusal, timeout=0.1)])
    event = ToolCallEvent(toolCallId="c1", identifier="shell", apiName="exec", args={})
    with capture_logs() as logs:
        verdict = engine.dry_run("before_tool_call", event, inline=True)
    assert not verdict.blocked
    assert verdict.errors == ["slow: timed out after 0.1s"]
    (late,) = [e for e in logs if "deadline" in e["event"]]
    assert (late["hook_id"], late["reason"]) == ("slow", "no rm, but too late")


def test_a_hook_changing_the_registrations_mid_chain_leaves_the_call_it_judges_as_matched(
    pipe: TestPipeline,
) -> None:
    # A guard removed by an earlier hook still judges the call in flight (fails closed); one
    # registered then judges from the next call on; a second registration of an id is refused.
    refused: list[str] = []

    def reshuffles(event: HookEvent) -> None:
        if pipe.oh.engine.registry.remove("no-rm"):
            pipe.register(_guard("later", lambda e: Block("no rm, later")))
        try:
            pipe.register(_guard("later", lambda e: None))
        except Exception as exc:
            refused.append(type(exc).__name__)

    pipe.register(_guard("reshuffles", reshuffles))
    pipe.register(_guard("no-rm", lambda event: Block("no rm")))
    ran: list[dict[str, Any]] = []
    assert _call(pipe, ran).content == "no rm"
    assert _call(pipe, ran).content == "no rm, later"
    assert ran == []
    assert refused == ["ConfigError", "ConfigError"]
