"""OpenAI Agents SDK: a guard on one namespace of a namespaced tool (``tool_namespace``: the model
calls ``delete_file`` in namespace ``fs`` or ``db``) fires for that namespace only, while a guard
on the bare name still fires for both, in ``run`` and ``run_streamed`` (the real SDK, a scripted
model, the spans otelhooks exported, replayed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, function_tool, set_trace_processors, tool_namespace
from agents.testing import assistant_message, function_call

from otelhooks import Block, HooksEngine, OtlpJsonLinesSpanExporter, ToolCallEvent
from otelhooks.integrations.openai_agents import HookedRunner, hook_tool
from otelhooks.replay import replay
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _tools(hooked_first: bool = False) -> list[Any]:
    tool = hook_tool(delete_file) if hooked_first else delete_file
    return [
        *tool_namespace(name="fs", description="the fs tools", tools=[tool]),
        *tool_namespace(name="db", description="the db tools", tools=[tool]),
    ]


def _run(pipe: TestPipeline, streamed: bool, hooked_first: bool = False) -> ScriptedModel:
    calls = [
        function_call("delete_file", {"path": "a"}, call_id="f1", namespace="fs"),
        function_call("delete_file", {"path": "b"}, call_id="b1", namespace="db"),
    ]
    model = ScriptedModel("m", [calls, [assistant_message("ok")]])

    async def go() -> None:
        runner = HookedRunner(pipe.tracer)
        agent = Agent(name="cleaner", model=model, tools=_tools(hooked_first))
        if not streamed:
            assert (await runner.run(agent, "clean")).final_output == "ok"
            return
        result = await runner.run_streamed(agent, "clean")
        async for _ in result.stream_events():
            pass
        assert result.final_output == "ok"

    asyncio.run(go())
    pipe.flush()
    return model


def _deny(event: ToolCallEvent) -> Block:
    return Block(f"no {event.toolNamespace}.{event.apiName}")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("matcher", ["db.delete_file", "cleaner/db.delete_file", "/^db\\./"])
def test_a_guard_on_one_namespace_denies_that_namespace_only(
    pipe: TestPipeline, recorder: Recorder, streamed: bool, matcher: str
) -> None:
    # the call ran as cleaner/delete_file whatever its namespace: a guard naming db.delete_file
    # never fired and db's delete_file ran
    pipe.register(hook("no-db-delete", "before_tool_call", _deny, matcher=matcher))
    pipe.register(hook("denied", "on_tool_call_denied", recorder))

    model = _run(pipe, streamed)

    assert model.tool_outputs() == {"f1": "deleted a", "b1": "no db.delete_file"}
    told = recorder.fields("apiName", "toolNamespace", "toolCallId", event="on_tool_call_denied")
    assert told == [("delete_file", "db", "b1")]
    spans = {
        (s.attributes or {})["gen_ai.tool.call.id"]: dict(s.attributes or {})
        for s in pipe.spans()
        if s.name.startswith("execute_tool")
    }
    assert spans["b1"]["gen_ai.tool.name"] == "db.delete_file"
    assert spans["b1"]["otelhooks.tool.matcher_value"] == "cleaner/db.delete_file"
    assert spans["b1"]["otelhooks.tool.namespace"] == "db"
    assert spans["b1"]["otelhooks.hook.decision"] == "deny"
    assert spans["f1"]["gen_ai.tool.name"] == "fs.delete_file"
    assert "otelhooks.hook.decision" not in spans["f1"]


@pytest.mark.parametrize("matcher", ["delete_file", "cleaner/delete_file"])
def test_a_guard_on_the_bare_name_still_denies_every_namespace(
    pipe: TestPipeline, matcher: str
) -> None:
    pipe.register(hook("no-delete", "before_tool_call", _deny, matcher=matcher))

    model = _run(pipe, streamed=False)

    assert model.tool_outputs() == {"f1": "no fs.delete_file", "b1": "no db.delete_file"}


@pytest.mark.parametrize(
    ("matcher", "denied"),
    [("db.delete_file", ["cleaner/db.delete_file"]), ("delete_file", None)],
    ids=["namespace", "bare"],
)
def test_a_recorded_namespaced_call_is_replayed_under_both_names(
    pipe: TestPipeline, tmp_path: Path, matcher: str, denied: list[str] | None
) -> None:
    # the span named the tool by its bare name only: replay could not tell fs's call from db's,
    # so a policy on db.delete_file matched neither
    _run(pipe, streamed=False)
    recording = tmp_path / "run.jsonl"
    exporter = OtlpJsonLinesSpanExporter(str(recording))
    exporter.export(pipe.spans())
    exporter.shutdown()
    policy = HooksEngine([hook("deny-it", "before_tool_call", _deny, matcher=matcher)])

    report = replay([recording], policy)

    subjects = sorted(r["subject"] for r in report.listed() if r["event"] == "before_tool_call")
    everything = ["cleaner/db.delete_file", "cleaner/fs.delete_file"]
    assert subjects == (denied if denied is not None else everything)
    assert report.changes["deny"] == len(subjects)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_tool_hooked_before_it_was_namespaced_is_matched_by_its_namespace(
    pipe: TestPipeline, recorder: Recorder, streamed: bool
) -> None:
    # tool_namespace(tools=[hook_tool(f)]): the hooked copy was made with no namespace, and a
    # guard on db.delete_file never fired for the namespaced copies of it
    pipe.register(hook("no-db-delete", "before_tool_call", _deny, matcher="db.delete_file"))
    pipe.register(hook("denied", "on_tool_call_denied", recorder))

    model = _run(pipe, streamed, hooked_first=True)

    assert model.tool_outputs() == {"f1": "deleted a", "b1": "no db.delete_file"}
    told = recorder.fields("apiName", "toolNamespace", "toolCallId", event="on_tool_call_denied")
    assert told == [("delete_file", "db", "b1")]
