"""An exception is recorded once, on the span it left first, however many scopes it passes
through, and otelhooks adds nothing to the exception object (it is the caller's): which
exception a scope inside already recorded is the scopes' own state."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from otelhooks.testing import TestPipeline, pipeline


class ToolBroke(Exception):
    """An exception with instance attributes of its own, which must stay exactly as raised."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.detail = "disk full"


def _events(pipe: TestPipeline) -> dict[str, list[str]]:
    return {s.name: [e.name for e in s.events] for s in pipe.spans()}


def _check(pipe: TestPipeline, caught: BaseException) -> None:
    assert vars(caught) == {"detail": "disk full"}  # nothing of ours added
    for span in pipe.spans():  # every span it left failed, with its type
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert (span.attributes or {})["error.type"].endswith("ToolBroke"), span.name
    assert _events(pipe) == {
        "execute_tool write": ["exception"],
        "step 0": [],
        "invoke_agent planner": [],
    }


def _agent(pipe: TestPipeline, error: BaseException) -> None:
    with pipe.oh.operation("planner") as op, op.step() as step, step.tool_call("fs", "write", {}):
        raise error


async def _async_agent(pipe: TestPipeline, error: BaseException) -> None:
    async with (
        pipe.oh.operation("planner") as op,
        op.step() as step,
        step.tool_call("fs", "write", {}),
    ):
        raise error


async def _agent_with_a_task_per_tool(pipe: TestPipeline, error: BaseException) -> None:
    # The tool's scope exits in a child task, the step's in the parent: no shared context.
    async def call(step: Any) -> None:
        async with step.tool_call("fs", "write", {}):
            raise error

    async with pipe.oh.operation("planner") as op, op.step() as step:
        await asyncio.gather(asyncio.create_task(call(step)))


def test_a_tool_exception_through_a_step_and_an_operation_is_recorded_once() -> None:
    error = ToolBroke("no space left")
    with pipeline() as pipe:
        with pytest.raises(ToolBroke) as caught:
            _agent(pipe, error)
        assert caught.value is error
        _check(pipe, error)


@pytest.mark.parametrize("agent", [_async_agent, _agent_with_a_task_per_tool])
def test_the_same_in_async_code(agent: Any) -> None:
    error = ToolBroke("no space left")
    with pipeline() as pipe:
        with pytest.raises(ToolBroke):
            asyncio.run(agent(pipe, error))
        _check(pipe, error)


def _catch_and_raise(pipe: TestPipeline, error: BaseException, then: BaseException) -> None:
    with pipe.oh.operation("planner") as op, op.step() as step:
        try:
            with step.tool_call("fs", "write", {}):
                raise error
        except ToolBroke:
            pass
        raise then


def test_an_exception_raised_again_later_is_recorded_where_it_first_failed() -> None:
    error = ToolBroke("no space left")
    with pipeline() as pipe:
        with pytest.raises(ToolBroke):
            _catch_and_raise(pipe, error, then=error)
        _check(pipe, error)


def test_a_new_exception_in_the_step_is_recorded_on_the_step() -> None:
    with pipeline() as pipe:
        with pytest.raises(RuntimeError):
            _catch_and_raise(pipe, ToolBroke("no space left"), then=RuntimeError("gave up"))
        assert _events(pipe) == {
            "execute_tool write": ["exception"],
            "step 0": ["exception"],
            "invoke_agent planner": [],
        }
