"""OpenAI Agents SDK: an MCP tool the SDK names ``mcp_{server}__{tool}`` for the model
(``mcp_config={"include_server_in_tool_names": True}``) is named by its server's own name in
every record, as hooks match it (the real SDK, a real MCP server over stdio, a scripted model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import (
    Agent,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    set_trace_processors,
    tool_input_guardrail,
)
from agents.testing import assistant_message, function_call

from otelhooks import Block
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline, run_cli
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel
from tests.integrations.test_openai_agents_mcp import notes_server, reached


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@tool_input_guardrail
def _no_secret(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "secret" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("no secrets")
    return ToolGuardrailFunctionOutput.allow()


def test_a_prefixed_mcp_tool_is_named_by_its_server_s_name_in_every_record(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    """A hook's deny, a guardrail's rejection and a person's rejection of calls the model made
    as ``mcp_notes__{tool}``: before, the last two were recorded as ``mcp_notes__lookup`` and
    ``notes/mcp_notes__add``, so an observer matching ``notes/lookup`` (as the hook that denied
    ``notes/write_note`` matched) never heard of them."""
    matched: list[tuple[str, str]] = []
    pipe.register(
        hook("seen", "before_tool_call", lambda e: matched.append((e.identifier, e.apiName))),
        hook(
            "no-write", "before_tool_call", lambda e: Block("no notes"), matcher="notes/write_note"
        ),
        hook("denied", "on_tool_call_denied", recorder, matcher="^notes/(write_note|lookup|add)$"),
    )
    log = tmp_path / "log"
    model = ScriptedModel(
        "m",
        [
            [
                function_call("mcp_notes__write_note", {"text": "x"}, call_id="m1"),
                function_call("mcp_notes__lookup", {"key": "secret"}, call_id="m2"),
                function_call("mcp_notes__add", {"a": 1, "b": 2}, call_id="m3"),
            ],
            [assistant_message("done")],
        ],
    )

    async def main() -> None:
        approval = {"always": {"tool_names": ["add"]}}
        options: dict[str, Any] = {"tool_input_guardrails": [_no_secret]}
        async with notes_server(log, require_approval=approval, **options) as server:
            agent = Agent(
                name="writer",
                model=model,
                mcp_servers=[server],
                mcp_config={"include_server_in_tool_names": True},
            )
            runner = HookedRunner(pipe.tracer)
            state = (await runner.run(agent, "go")).to_state()
            for item in state.get_interruptions():
                state.reject(item)
            model.turns = [[assistant_message("done")]]
            await runner.run(agent, state)

    asyncio.run(main())
    pipe.flush()

    assert reached(log) == []
    assert matched == [("notes", "write_note")]
    told = sorted(
        (e.identifier, e.apiName, e.decidedBy) for e in recorder.of("on_tool_call_denied")
    )  # type: ignore[attr-defined]
    assert told == [
        ("notes", "add", "needs_approval"),
        ("notes", "lookup", "guardrail:_no_secret"),
        ("notes", "write_note", "no-write"),
    ]
    events = [
        (
            e.name,
            (e.attributes or {}).get("otelhooks.tool.matcher_value"),
            (e.attributes or {})["gen_ai.tool.name"],
        )
        for s in pipe.spans()
        for e in s.events
        if e.name in ("otelhooks.tool_approval", "otelhooks.tool_guardrail")
    ]
    assert sorted(events) == [
        ("otelhooks.tool_approval", "notes/add", "add"),
        ("otelhooks.tool_approval", "notes/add", "add"),
        ("otelhooks.tool_guardrail", None, "lookup"),
    ]
    span = pipe.span("execute_tool write_note")
    assert (span.attributes or {})["otelhooks.tool.matcher_value"] == "notes/write_note"


def test_hooks_test_judges_the_sdk_s_prefixed_name_as_the_live_call_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``hooks test --tool notes/mcp_notes__add`` (the name the model called, in the SDK's
    trace): before, "no hook matches" while the live call of it was denied by ``notes/add``."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "hooks:\n"
        "  - id: no-add\n"
        "    type: PreToolUse\n"
        "    matcher: notes/add\n"
        "    command: \"echo 'no adding' >&2; exit 2\"\n"
    )
    code = run_cli(
        "hooks", "test", str(policy), "--event", "PreToolUse", "--tool", "notes/mcp_notes__add"
    )
    out = capsys.readouterr().out
    assert "a live call is matched as notes/add, and so is this one" in out
    assert "1 hook matches PreToolUse (before_tool_call) for notes/add" in out
    assert "- no-add [command]: blocked" in out
    assert code == 0, out
