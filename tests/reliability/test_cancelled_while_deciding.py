"""A tool call, model call or run whose start a runtime cancels while its intercept hooks still
decide (the OpenAI Agents SDK's tool ``timeout``, ``asyncio.wait_for``, a task group) is ended and
exported as cancelled. Before, ``async with`` never reached ``__aexit__`` for an ``__aenter__``
that raised: the span stayed open, was never exported, and nothing recorded the call."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from opentelemetry.trace import StatusCode

from otelhooks import Block
from otelhooks.testing import pipeline


async def _slow_deny(event: Any) -> Block:
    await asyncio.sleep(5.0)
    return Block("no")


def test_a_tool_call_cancelled_while_its_guard_decides_is_exported_as_cancelled() -> None:
    ran: list[str] = []
    errors: list[str] = []
    with pipeline() as pipe:
        pipe.register({"id": "slow", "type": "beforeToolCall", "handler": _slow_deny})
        pipe.register(
            {
                "id": "err",
                "type": "onToolCallError",
                "handler": lambda e: errors.append(e.toolCallId),
            }
        )

        async def run() -> None:
            async with pipe.tracer.operation("bot") as op:
                with op.step() as step:

                    async def call() -> None:
                        async with step.tool_call("bot", "rm", {"path": "/"}, tool_call_id="c1"):
                            ran.append("rm")

                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(call(), 0.2)

        asyncio.run(run())
        pipe.flush()
        tools = [s for s in pipe.spans() if s.name == "execute_tool rm"]

    assert ran == []
    assert len(tools) == 1
    assert tools[0].end_time is not None
    assert tools[0].status.status_code is StatusCode.ERROR
    assert "CancelledError" in str(tools[0].attributes.get("error.type"))
    assert errors == ["c1"]


def test_a_run_cancelled_while_its_start_hook_decides_is_exported() -> None:
    with pipeline() as pipe:
        pipe.register({"id": "slow", "type": "before_agent_start", "handler": _slow_deny})

        async def run() -> None:
            async with pipe.tracer.operation("bot"):
                pass

        async def main() -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run(), 0.2)

        asyncio.run(main())
        pipe.flush()
        runs = [s for s in pipe.spans() if s.name == "invoke_agent bot"]

    assert len(runs) == 1
    assert runs[0].status.status_code is StatusCode.ERROR
