"""OpenAI Agents: the failure message the SDK makes of a function tool's exception (its
default, your ``tool_error_formatter``, the tool's own ``failure_error_function``) goes through
``tool_result_persist`` before the model reads it, as a result does (a scripted model)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, ToolErrorFormatterArgs, function_tool
from agents.testing import assistant_message, function_call

from otelhooks import HookEvent
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel

SECRET = "S-42-SECRET"


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace(SECRET, "[REDACTED]")


def _own_message(ctx: Any, error: Exception) -> str:
    return f"login broke: {error}"


def _formatter(args: ToolErrorFormatterArgs[Any]) -> str:
    return f"formatted: {args.error}"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("handler", ["run-formatter", "tool-own"])
def test_a_tool_failure_message_goes_through_tool_result_persist(
    pipe: TestPipeline, handler: str, streamed: bool
) -> None:
    # the model read "... Error: bad token S-42-SECRET": the redaction ran on results only
    def login() -> str:
        """Log in."""
        raise ValueError(f"bad token {SECRET}")

    # (the SDK's default message names no exception text: nothing of it to filter)
    own = _own_message if handler == "tool-own" else None
    tool = function_tool(login, failure_error_function=own) if own else function_tool(login)
    formatter = _formatter if handler == "run-formatter" else None
    config = RunConfig(tracing_disabled=True, tool_error_formatter=formatter)
    model = ScriptedModel(
        "m", [[function_call("login", {}, call_id="f1")], [assistant_message("gave up")]]
    )
    pipe.register(hook("redact", "tool_result_persist", _redact))
    agent = Agent(name="bot", model=model, tools=[tool])
    runner = HookedRunner(pipe.tracer)

    async def main() -> None:
        if not streamed:
            await runner.run(agent, "go", run_config=config)
            return
        result = await runner.run_streamed(agent, "go", run_config=config)
        async for _ in result.stream_events():
            pass

    asyncio.run(main())

    told = model.tool_outputs()["f1"]
    assert SECRET not in told
    assert told == ("formatted: " if formatter else "login broke: ") + "bad token [REDACTED]"
    assert config.tool_error_formatter is formatter  # yours, unchanged
    pipe.flush()
    span = pipe.span("execute_tool login")
    assert (span.attributes or {})["error.type"] == "ValueError"
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "error"
