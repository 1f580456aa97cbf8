"""OpenAI Agents SDK: a person's decision on a call of a namespaced tool (``tool_namespace``: the
model calls it by its name and a ``namespace``; the SDK keys the decision ``{namespace}.{name}``)
or of an agent used as a tool (``Agent.as_tool``: the SDK keeps the decision in that agent's
nested run) is recorded as that of a plain function tool's call, on the call it was made on, in
``run`` and ``run_streamed`` (the real SDK, a scripted model, the spans the SDK exported)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    AgentHooks,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    ToolSearchTool,
    UserError,
    function_tool,
    set_trace_processors,
    tool_input_guardrail,
    tool_namespace,
)
from agents.testing import assistant_message, function_call
from structlog.testing import capture_logs

from otelhooks.integrations.openai_agents import HookedRunner, ToolNotHookedError, hook_agent
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel

APPROVAL = "otelhooks.tool_approval"


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _namespaced(name: str) -> list[Any]:
    return list(tool_namespace(name=name, description=f"the {name} tools", tools=[delete_file]))


def _decide_and_resume(
    pipe: TestPipeline,
    tools: list[Any],
    calls: list[Any],
    approve: set[str],
    *,
    streamed: bool = False,
    always: bool = False,
) -> ScriptedModel:
    """Run; a person approves the calls in ``approve`` and rejects the others (``always``:
    every call of their tool); resume."""
    model = ScriptedModel("m", [calls, [assistant_message("ok")]])

    async def go() -> None:
        runner = HookedRunner(pipe.tracer)
        agent = Agent(name="cleaner", model=model, tools=tools)

        async def once(given: Any) -> Any:
            if not streamed:
                return await runner.run(agent, given)
            result = await runner.run_streamed(agent, given)
            async for _ in result.stream_events():
                pass
            return result

        state = (await once("clean")).to_state()
        for item in state.get_interruptions():
            if item.call_id in approve:
                state.approve(item)
            else:
                state.reject(item, always, rejection_message=f"not {item.call_id}")
        assert (await once(state)).final_output == "ok"

    asyncio.run(go())
    pipe.flush()
    return model


def _denies(pipe: TestPipeline) -> list[dict[str, Any]]:
    return [
        dict(e.attributes or {})
        for s in pipe.spans()
        for e in s.events
        if e.name == APPROVAL and (e.attributes or {}).get("otelhooks.approval.decision") == "deny"
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_rejected_call_of_a_namespaced_tool_is_recorded(
    pipe: TestPipeline, recorder: Recorder, streamed: bool
) -> None:
    # the rejection was looked up by the bare name, under which the SDK keeps no decision of a
    # namespaced tool: the call was answered "rejected" and nothing said so
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="cleaner/delete_file"))
    call = function_call("delete_file", {"path": "a"}, call_id="d1", namespace="fs")

    model = _decide_and_resume(pipe, _namespaced("fs"), [call], set(), streamed=streamed)

    assert model.tool_outputs() == {"d1": "not d1"}
    told = recorder.fields(
        "apiName", "toolNamespace", "toolCallId", "decidedBy", "reason", event="on_tool_call_denied"
    )
    assert told == [("delete_file", "fs", "d1", "needs_approval", "not d1")]
    assert _denies(pipe) == [
        {
            "gen_ai.tool.name": "fs.delete_file",
            "gen_ai.tool.call.id": "d1",
            "otelhooks.tool.matcher_value": "cleaner/fs.delete_file",
            "otelhooks.approval.decision": "deny",
            "otelhooks.approval.reason": "not d1",
        }
    ]
    assert pipe.spans("execute_tool fs.delete_file") == []  # the tool never ran
    pending = [
        dict(e.attributes or {})
        for s in pipe.spans()
        for e in s.events
        if e.name == APPROVAL
        and (e.attributes or {}).get("otelhooks.approval.decision") == "pending"
    ]
    assert [(p["gen_ai.tool.name"], p["otelhooks.tool.matcher_value"]) for p in pending] == [
        ("fs.delete_file", "cleaner/fs.delete_file")
    ]


@pytest.mark.parametrize("always", [False, True], ids=["this_call", "always_reject"])
def test_the_rejection_is_recorded_on_the_call_of_its_own_namespace(
    pipe: TestPipeline, recorder: Recorder, always: bool
) -> None:
    # one bare name in two namespaces, one call approved and one rejected in one state (a
    # rejection of every call of fs.delete_file is not one of db.delete_file's)
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    calls = [
        function_call("delete_file", {"path": "a"}, call_id="f1", namespace="fs"),
        function_call("delete_file", {"path": "b"}, call_id="b1", namespace="db"),
    ]

    tools = _namespaced("fs") + _namespaced("db")
    model = _decide_and_resume(pipe, tools, calls, {"b1"}, always=always)

    assert model.tool_outputs() == {"f1": "not f1", "b1": "deleted b"}
    told = recorder.fields("toolCallId", "args", "reason", event="on_tool_call_denied")
    assert told == [("f1", {"path": "a"}, "not f1")]
    assert [d["gen_ai.tool.call.id"] for d in _denies(pipe)] == ["f1"]
    (ran,) = pipe.spans("execute_tool db.delete_file")
    assert (ran.attributes or {})["gen_ai.tool.call.id"] == "b1"


@pytest.mark.parametrize("matcher", ["fs.delete_file", "cleaner/fs.delete_file"])
def test_a_rejection_is_told_to_the_hooks_of_its_namespace_only(
    pipe: TestPipeline, recorder: Recorder, matcher: str
) -> None:
    # the rejection was told as cleaner/delete_file: a hook on fs.delete_file's denials never
    # heard of it
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher=matcher))
    calls = [
        function_call("delete_file", {"path": "a"}, call_id="f1", namespace="fs"),
        function_call("delete_file", {"path": "b"}, call_id="b1", namespace="db"),
    ]

    model = _decide_and_resume(pipe, _namespaced("fs") + _namespaced("db"), calls, set())

    assert model.tool_outputs() == {"f1": "not f1", "b1": "not b1"}
    told = recorder.fields("toolNamespace", "toolCallId", event="on_tool_call_denied")
    assert told == [("fs", "f1")]


def test_a_rejected_call_of_a_tool_whose_name_has_the_namespace_separator_is_recorded(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # a top-level tool named "fs.delete_file" (the SDK's key of a namespaced fs tool's decision)
    # beside a namespaced db.delete_file: each decision on its own call
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    dotted = function_tool(
        lambda path: f"erased {path}", name_override="fs.delete_file", needs_approval=True
    )
    calls = [
        function_call("fs.delete_file", {"path": "a"}, call_id="f1"),
        function_call("delete_file", {"path": "b"}, call_id="b1", namespace="db"),
    ]

    model = _decide_and_resume(pipe, [dotted, *_namespaced("db")], calls, {"b1"})

    assert model.tool_outputs() == {"f1": "not f1", "b1": "deleted b"}
    told = recorder.fields("apiName", "toolCallId", event="on_tool_call_denied")
    assert told == [("fs.delete_file", "f1")]


@pytest.mark.filterwarnings("ignore::otelhooks.integrations.openai_agents.UnguardedToolWarning")
def test_a_rejected_call_of_a_deferred_tool_is_recorded(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # a tool tool search loads (defer_loading): the model calls it in a namespace of its own
    # name, which the SDK keys "deferred_top_level:{name}" (the hosted ToolSearchTool warns)
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="cleaner/purge"))
    purge = function_tool(
        lambda path: f"purged {path}",
        name_override="purge",
        needs_approval=True,
        defer_loading=True,
    )
    call = function_call("purge", {"path": "a"}, call_id="p1", namespace="purge")

    model = _decide_and_resume(pipe, [purge, ToolSearchTool()], [call], set())

    assert model.tool_outputs() == {"p1": "not p1"}
    told = recorder.fields("apiName", "toolCallId", "decidedBy", event="on_tool_call_denied")
    assert told == [("purge", "p1", "needs_approval")]


def test_a_guardrail_rejection_of_a_namespaced_tools_call_is_recorded(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    @tool_input_guardrail
    def no_root(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        if "/root" in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.reject_content("no access to /root")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_root])
    def read_file(path: str) -> str:
        """Read a file."""
        raise AssertionError("a rejected call ran")

    # (a hook on fs.read_file's denials never heard of the rejection: it was told as read_file)
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="fs.read_file"))
    tools = tool_namespace(name="fs", description="the fs tools", tools=[read_file])
    call = function_call("read_file", {"path": "/root/x"}, call_id="r1", namespace="fs")
    model = ScriptedModel("m", [[call], [assistant_message("ok")]])

    async def go() -> None:
        agent = Agent(name="reader", model=model, tools=list(tools))
        assert (await HookedRunner(pipe.tracer).run(agent, "read")).final_output == "ok"

    asyncio.run(go())
    pipe.flush()

    assert model.tool_outputs() == {"r1": "no access to /root"}
    told = recorder.fields(
        "apiName",
        "toolNamespace",
        "identifier",
        "toolCallId",
        "decidedBy",
        event="on_tool_call_denied",
    )
    assert told == [("read_file", "fs", "reader", "r1", "guardrail:no_root")]


class _Seen(AgentHooks[Any]):
    """An agent's own hooks: the callbacks it was called with."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
        self.seen.append(f"llm_start {agent.name}")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_rejected_call_of_an_agent_used_as_a_tool_is_recorded(
    pipe: TestPipeline, recorder: Recorder, streamed: bool
) -> None:
    # the SDK keeps the decision on the nested agent's call in that agent's own run, which the
    # run's hooks never see: the call was answered "rejected" and nothing said so; a namespaced
    # call beside it in the same state is approved and runs
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    own = _Seen()
    inner_model = ScriptedModel(
        "i",
        [
            [function_call("delete_file", {"path": "a"}, call_id="i1")],
            [assistant_message("done")],
        ],
    )
    janitor = Agent(name="janitor", model=inner_model, tools=[delete_file], hooks=own)
    as_tool = hook_agent(janitor).as_tool(tool_name="janitor", tool_description="Cleans up.")
    calls = [
        function_call("janitor", {"input": "clean"}, call_id="o1"),
        function_call("delete_file", {"path": "b"}, call_id="b1", namespace="db"),
    ]

    model = _decide_and_resume(
        pipe, [as_tool, *_namespaced("db")], calls, {"b1"}, streamed=streamed
    )

    assert inner_model.tool_outputs() == {"i1": "not i1"}
    assert model.tool_outputs() == {"o1": "done", "b1": "deleted b"}
    told = recorder.fields(
        "apiName", "identifier", "toolCallId", "decidedBy", "reason", event="on_tool_call_denied"
    )
    assert told == [("delete_file", "janitor", "i1", "needs_approval", "not i1")]
    assert [d["otelhooks.tool.matcher_value"] for d in _denies(pipe)] == ["janitor/delete_file"]
    assert own.seen == ["llm_start janitor", "llm_start janitor"]  # its own hooks still called


@pytest.mark.filterwarnings("ignore::otelhooks.integrations.openai_agents.UnguardedToolWarning")
def test_an_agent_tool_not_hooked_is_refused_before_its_nested_run_asks_a_person(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # an agent used as a tool that is not hooked (your agent's own as_tool: the warning names
    # it) decided its calls in a nested run otelhooks never saw: the rejection was dropped
    # without a word (an error in the log only). Now its call is refused as it starts
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    inner_model = ScriptedModel(
        "i",
        [
            [function_call("delete_file", {"path": "a"}, call_id="i1")],
            [assistant_message("done")],
        ],
    )
    janitor = Agent(name="janitor", model=inner_model, tools=[delete_file])
    as_tool = janitor.as_tool(tool_name="janitor", tool_description="Cleans up.")
    call = function_call("janitor", {"input": "clean"}, call_id="o1")

    with pytest.raises(UserError) as raised:
        _decide_and_resume(pipe, [as_tool], [call], set())

    pipe.flush()
    assert isinstance(raised.value.__cause__, ToolNotHookedError)
    assert inner_model.tool_outputs() == {}  # the nested run never started
    (denied,) = recorder.of("on_tool_call_denied")
    assert denied.apiName == "janitor"  # type: ignore[attr-defined]


@pytest.mark.parametrize("rejected", ["janitor", "cleaner"])
def test_a_nested_run_is_not_asked_about_the_outer_runs_call_of_the_same_id(
    pipe: TestPipeline, recorder: Recorder, rejected: str
) -> None:
    # the agent used as a tool and the agent calling it each call delete_file with call id c1:
    # one rejected, the other approved; only the rejected one is a rejection, and neither run's
    # context is asked about the other's call (the SDK fails the question: a reused call id)
    pipe.register(hook("denied", "on_tool_call_denied", recorder))
    inner_model = ScriptedModel(
        "i",
        [
            [function_call("delete_file", {"path": "a"}, call_id="c1")],
            [assistant_message("done")],
        ],
    )
    janitor = Agent(name="janitor", model=inner_model, tools=[delete_file])
    as_tool = hook_agent(janitor).as_tool(tool_name="janitor", tool_description="Cleans up.")
    calls = [
        function_call("janitor", {"input": "clean"}, call_id="o1"),
        function_call("delete_file", {"path": "b"}, call_id="c1"),
    ]
    model = ScriptedModel("m", [calls, [assistant_message("ok")]])

    async def go() -> None:
        runner = HookedRunner(pipe.tracer)
        agent = Agent(name="cleaner", model=model, tools=[as_tool, delete_file])
        state = (await runner.run(agent, "clean")).to_state()
        for item in state.get_interruptions():
            if item.agent.name == rejected:
                state.reject(item, rejection_message=f"not {rejected}'s")
            else:
                state.approve(item)
        assert (await runner.run(agent, state)).final_output == "ok"

    with capture_logs() as logs:
        asyncio.run(go())
    pipe.flush()

    nested, outer = (
        ("not janitor's", "deleted b") if rejected == "janitor" else ("deleted a", "not cleaner's")
    )
    assert inner_model.tool_outputs() == {"c1": nested}
    assert model.tool_outputs() == {"o1": "done", "c1": outer}
    told = recorder.fields("identifier", "toolCallId", "reason", event="on_tool_call_denied")
    assert told == [(rejected, "c1", f"not {rejected}'s")]
    assert [e for e in logs if e["log_level"] == "error"] == []


def test_a_guardrail_rejection_in_an_agent_used_as_a_tool_is_that_agents(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # the nested agent's tool runs as reader/read_file, but its guardrail's rejection was told
    # as boss/read_file (the calling agent's), which a guard on reader/read_file never matched
    @tool_input_guardrail
    def no_root(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.reject_content("no access to /root")

    @function_tool(tool_input_guardrails=[no_root])
    def read_file(path: str) -> str:
        """Read a file."""
        raise AssertionError("a rejected call ran")

    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="reader/read_file"))
    inner_model = ScriptedModel(
        "i",
        [
            [function_call("read_file", {"path": "/root/x"}, call_id="r1")],
            [assistant_message("done")],
        ],
    )
    reader = Agent(name="reader", model=inner_model, tools=[read_file])
    as_tool = hook_agent(reader).as_tool(tool_name="reader", tool_description="Reads files.")
    model = ScriptedModel(
        "m",
        [[function_call("reader", {"input": "read"}, call_id="o1")], [assistant_message("ok")]],
    )

    async def go() -> None:
        agent = Agent(name="boss", model=model, tools=[as_tool])
        assert (await HookedRunner(pipe.tracer).run(agent, "read")).final_output == "ok"

    asyncio.run(go())
    pipe.flush()

    assert inner_model.tool_outputs() == {"r1": "no access to /root"}
    told = recorder.fields("identifier", "toolCallId", "decidedBy", event="on_tool_call_denied")
    assert told == [("reader", "r1", "guardrail:no_root")]
