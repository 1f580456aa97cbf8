"""``event.deny(reason)``: what ``ToolCallEvent``'s docstring promises handlers, in sync and
async runtimes (#27: a handler that called it raised, and with the default fail-open the tool
ran)."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import hook

from otelhooks import ToolCallEvent
from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline


def _ran(ran: list[str]) -> Any:
    def tool(**kwargs: Any) -> str:
        ran.append("tool")
        return "ran"

    return tool


def run_one_tool(pipe: TestPipeline, ran: list[str]) -> str:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("shell", "rm", {"path": "/"}, _ran(ran)).content


def span_attrs(pipe: TestPipeline) -> dict[str, Any]:
    return dict(pipe.span("execute_tool rm").attributes or {})


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_deny_keeps_the_tool_from_running_and_gives_its_reason(pipe: TestPipeline) -> None:
    ran: list[str] = []
    pipe.register(hook("no-rm", "beforeToolCall", lambda e: e.deny("rm is not allowed")))
    assert run_one_tool(pipe, ran) == "rm is not allowed"
    assert ran == []
    attrs = span_attrs(pipe)
    assert (attrs[sc.HOOK_DECISION], attrs[sc.HOOK_DECIDED_BY]) == ("deny", "no-rm")


def test_deny_without_a_reason_gives_lobehubs_default(pipe: TestPipeline) -> None:
    pipe.register(hook("no-rm", "beforeToolCall", lambda e: e.deny()))
    assert run_one_tool(pipe, []) == "Blocked by beforeToolCall hook."


def test_deny_in_an_async_handler_in_an_async_runtime(pipe: TestPipeline) -> None:
    ran: list[str] = []

    async def guard(event: ToolCallEvent) -> None:
        await asyncio.sleep(0)
        event.deny("async no")

    pipe.register(hook("no-rm", "beforeToolCall", guard))

    async def main() -> str:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            result = await step.arun_tool("shell", "rm", {"path": "/"}, _ran(ran))
        return result.content

    assert asyncio.run(main()) == "async no"
    assert ran == []


def test_deny_wins_over_what_the_handler_returns_and_over_its_mock(pipe: TestPipeline) -> None:
    def guard(event: ToolCallEvent) -> dict[str, Any]:
        event.deny("no")
        event.mock("fake")  # refused: the call is denied
        return {"args": {"path": "/tmp"}}

    pipe.register(hook("no-rm", "beforeToolCall", guard))
    ran: list[str] = []
    assert run_one_tool(pipe, ran) == "no"
    assert ran == []
    assert span_attrs(pipe)[sc.HOOK_MOCKED] is False


def test_deny_made_before_the_handler_raised_stands(pipe: TestPipeline) -> None:
    def guard(event: ToolCallEvent) -> None:
        event.deny("no")
        raise RuntimeError("then it broke")

    pipe.register(hook("no-rm", "beforeToolCall", guard))
    ran: list[str] = []
    assert run_one_tool(pipe, ran) == "no"
    assert ran == []


def test_deny_ends_the_chain(pipe: TestPipeline) -> None:
    later: list[str] = []
    pipe.register(
        hook("no-rm", "beforeToolCall", lambda e: e.deny("no")),
        hook("later", "beforeToolCall", lambda e: later.append("ran")),
    )
    run_one_tool(pipe, [])
    assert later == []


def test_deny_from_a_timed_out_handler_comes_too_late(
    pipe: TestPipeline, release: threading.Event
) -> None:
    answered: list[bool] = []
    done = threading.Event()

    def slow(event: ToolCallEvent) -> None:
        release.wait(5)
        answered.append(event.deny("late"))
        done.set()

    def next_hook(event: ToolCallEvent) -> None:
        release.set()  # the abandoned hook wakes up now, while this one runs
        done.wait(5)

    pipe.register(
        hook("slow", "beforeToolCall", slow, timeout=0.2),
        hook("next", "beforeToolCall", next_hook),
    )
    ran: list[str] = []
    assert run_one_tool(pipe, ran) == "ran"
    assert answered == [False]


def test_deny_returns_true_and_is_seen_on_the_event() -> None:
    event = ToolCallEvent(toolCallId="c", identifier="shell", apiName="rm")
    assert event.deny("no") is True
    assert event.denied
    assert event.mock("fake") is None


def test_what_hooks_marked_stays_out_of_the_payloads_data() -> None:
    # The marks are the chain's bookkeeping, not event data: never dumped, not compared, kept
    # by a pickled copy, fresh on a payload validated again from its dump.
    fields = {"toolCallId": "c", "identifier": "shell", "apiName": "rm", "eventId": "e"}
    denied, plain = ToolCallEvent(**fields, timestamp=1), ToolCallEvent(**fields, timestamp=1)
    assert denied.deny("no") is True
    assert denied.model_dump() == plain.model_dump()
    assert "_marks" not in denied.model_dump_json()
    assert denied == plain
    assert pickle.loads(pickle.dumps(denied)).denied
    assert not ToolCallEvent.model_validate(denied.model_dump()).denied
    assert not plain.denied
