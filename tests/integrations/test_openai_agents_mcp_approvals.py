"""OpenAI Agents SDK: an MCP server's tool call a person approves (the server's
``require_approval``) or its ``tool_input_guardrails`` judged runs with the arguments judged,
whatever a ``before_tool_call`` hook rewrites them into (the real SDK, a real MCP server over
stdio that logs every call reaching it, a scripted model, no network)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import (
    Agent,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    set_trace_processors,
    tool_input_guardrail,
)
from agents.testing import assistant_message, function_call
from opentelemetry.trace import StatusCode

from otelhooks import ToolCallEvent
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel
from tests.integrations.test_openai_agents_mcp import notes_server, reached


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def _into_rewritten(event: ToolCallEvent) -> ToolCallEvent:
    return event.model_copy(update={"args": {"text": "rewritten"}})


def _approved_note(pipe: TestPipeline, log: Path, **server_options: Any) -> tuple[Any, list[str]]:
    """The model writes the note ``approved``; a person approves every call they are asked
    about. Returns the model and the arguments they were shown."""
    model = ScriptedModel(
        "m",
        [
            [function_call("write_note", {"text": "approved"}, call_id="m1")],
            [assistant_message("done")],
        ],
    )
    asked: list[str] = []

    async def main() -> None:
        async with notes_server(log, **server_options) as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            runner = HookedRunner(pipe.tracer)
            state = (await runner.run(agent, "go")).to_state()
            for item in state.get_interruptions():
                asked.append(str(item.arguments))
                state.approve(item)
            if asked:
                await runner.run(agent, state)

    asyncio.run(main())
    pipe.flush()
    return model, asked


def _always(ctx: RunContextWrapper[Any], agent: Any, tool: Any) -> bool:
    return True


@pytest.mark.parametrize("require_approval", ["always", _always], ids=["always", "policy"])
def test_a_hook_may_not_change_the_mcp_call_a_person_approved(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder, require_approval: Any
) -> None:
    # a person approved write_note("approved"); a hook rewrote it, and the server wrote
    # "rewritten", which nobody approved
    pipe.register(
        hook("rewrite", "before_tool_call", _into_rewritten, matcher="notes/write_note"),
        hook("denied", "on_tool_call_denied", recorder),
        hook("error", "on_tool_call_error", recorder),
    )
    log = tmp_path / "log"
    model, asked = _approved_note(pipe, log, require_approval=require_approval)

    assert asked == ['{"text":"approved"}']
    assert reached(log) == []
    assert "approval" in model.tool_outputs()["m1"]
    assert recorder.of("on_tool_call_error") == []  # a deny, never also an error
    (denied,) = recorder.of("on_tool_call_denied")
    assert (denied.args, denied.decidedBy, denied.toolCallId) == (  # type: ignore[attr-defined]
        {"text": "rewritten"},
        "needs_approval",
        "m1",
    )
    span = pipe.span("execute_tool write_note")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["otelhooks.hook.decision"] == "deny"


def _never(ctx: RunContextWrapper[Any], agent: Any, tool: Any) -> bool:
    return False


@pytest.mark.parametrize("require_approval", ["never", _never], ids=["never", "policy"])
def test_a_rewrite_of_an_mcp_call_nobody_is_asked_about_runs(
    pipe: TestPipeline, tmp_path: Path, require_approval: Any
) -> None:
    pipe.register(hook("rewrite", "before_tool_call", _into_rewritten, matcher="write_note"))
    log = tmp_path / "log"
    model, asked = _approved_note(pipe, log, require_approval=require_approval)

    assert asked == []
    assert [(c["tool"], c["args"]) for c in reached(log)] == [("write_note", {"text": "rewritten"})]
    assert "noted: rewritten" in model.tool_outputs()["m1"]


@tool_input_guardrail
def _no_rewritten_text(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "rewritten" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("no rewritten notes")
    return ToolGuardrailFunctionOutput.allow()


def test_the_server_s_guardrails_judge_a_rewritten_mcp_call_again(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    # the guardrail judged {"text": "approved"} before the hooks ran; the hook's rewrite, which
    # it rejects, reached the server unjudged
    pipe.register(
        hook("rewrite", "before_tool_call", _into_rewritten, matcher="write_note"),
        hook("denied", "on_tool_call_denied", recorder),
    )
    log = tmp_path / "log"
    model, _ = _approved_note(pipe, log, tool_input_guardrails=[_no_rewritten_text])

    assert reached(log) == []
    assert "no rewritten notes" in model.tool_outputs()["m1"]
    (denied,) = recorder.of("on_tool_call_denied")
    assert denied.decidedBy == "guardrail:_no_rewritten_text"  # type: ignore[attr-defined]


@tool_input_guardrail
def _no_secrets(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "secret" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("no secrets")
    return ToolGuardrailFunctionOutput.allow()


def test_a_call_the_server_s_guardrail_rejects_is_recorded_as_a_deny(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    # the SDK runs the server's guardrails before the hooks: a rejected call never reached them
    # and left no record at all (a function tool's rejection was already told)
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="notes/write_note"))
    log = tmp_path / "log"
    model = ScriptedModel(
        "m",
        [
            [function_call("write_note", {"text": "a secret"}, call_id="m1")],
            [assistant_message("done")],
        ],
    )

    async def main() -> None:
        async with notes_server(log, tool_input_guardrails=[_no_secrets]) as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            await HookedRunner(pipe.tracer).run(agent, "go")

    asyncio.run(main())
    pipe.flush()

    assert reached(log) == []
    assert model.tool_outputs()["m1"] == "no secrets"
    told = [
        (e.identifier, e.apiName, e.toolCallId, e.args, e.decidedBy, e.reason)  # type: ignore[attr-defined]
        for e in recorder.of("on_tool_call_denied")
    ]
    assert told == [
        ("notes", "write_note", "m1", {"text": "a secret"}, "guardrail:_no_secrets", "no secrets")
    ]
    (step,) = [
        s for s in pipe.spans() if any(e.name == "otelhooks.tool_guardrail" for e in s.events)
    ]
    assert step.name.startswith("step ")


def test_an_mcp_call_a_person_rejected_is_told_as_a_deny_of_its_server(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="notes/write_note"))
    log = tmp_path / "log"
    model = ScriptedModel(
        "m",
        [
            [function_call("write_note", {"text": "x"}, call_id="m1")],
            [assistant_message("done")],
        ],
    )

    async def main() -> None:
        async with notes_server(log, require_approval="always") as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            runner = HookedRunner(pipe.tracer)
            state = (await runner.run(agent, "go")).to_state()
            for item in state.get_interruptions():
                state.reject(item)
            await runner.run(agent, state)

    asyncio.run(main())
    pipe.flush()

    assert reached(log) == []
    told = [
        (e.identifier, e.apiName, e.toolCallId, e.args, e.decidedBy)  # type: ignore[attr-defined]
        for e in recorder.of("on_tool_call_denied")
    ]
    assert told == [("notes", "write_note", "m1", {"text": "x"}, "needs_approval")]
    # the pause and the rejection are on the steps, under the server's matcher value
    held = [
        (e.attributes or {}).get("otelhooks.approval.decision")
        for s in pipe.spans()
        for e in s.events
        if e.name == "otelhooks.tool_approval"
        and (e.attributes or {}).get("otelhooks.tool.matcher_value") == "notes/write_note"
    ]
    assert sorted(held) == ["deny", "pending"]
