"""A tool's result blocked by a ``tool_result_persist`` hook (a failing hook with
``on_error: block``) reaches the model as a failure carrying the block's reason, never as an
empty success, and its ``execute_tool`` span says ``blocked``: in process (``@otelhooks.tool``,
``step.run_tool``), in a real LangGraph ``ToolNode`` and in the OpenAI Agents SDK's runner."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from otelhooks import AgentTracer, HookEvent, ToolDenied, read_otlp_json_lines
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._daemon_procs import bash, one_process

REASON_PART = "leak-check"


def _broken(event: HookEvent) -> None:
    raise RuntimeError("the secret scanner is down")


def _failing_persist() -> dict[str, Any]:
    return hook(REASON_PART, "tool_result_persist", _broken, on_error="block")


def _blocked_span(pipe: TestPipeline, name: str) -> dict[str, Any]:
    pipe.flush()
    span = pipe.span(f"execute_tool {name}")
    attrs = dict(span.attributes or {})
    assert attrs["otelhooks.tool.outcome"] == "blocked"
    assert [
        dict(e.attributes or {}).get("otelhooks.message.blocked")
        for e in span.events
        if e.name == "otelhooks.tool_result_persist"
    ] == [True]
    return attrs


def test_a_decorated_tool_whose_result_is_blocked_raises_tool_denied_with_the_reason(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    # before: the caller got "" (an empty success) and the span said success
    pipe.register(_failing_persist())

    @otelhooks.tool(identifier="fs", name="cat")
    def cat(path: str) -> str:
        return "KEY=S-42-SECRET"

    @otelhooks.tool(identifier="fs", name="acat")
    async def acat(path: str) -> str:
        return "KEY=S-42-SECRET"

    with tracer.operation("agent") as op, op.step():
        with pytest.raises(ToolDenied) as denied:
            cat("/secret")
        with pytest.raises(ToolDenied) as adenied:
            asyncio.run(acat("/secret"))
    for raised in (denied.value, adenied.value):
        assert REASON_PART in raised.reason
        assert raised.decided_by == REASON_PART
        assert "S-42-SECRET" not in str(raised)
    _blocked_span(pipe, "cat")
    _blocked_span(pipe, "acat")


def test_run_tool_with_a_blocked_result_returns_a_failure_carrying_the_reason(
    pipe: TestPipeline,
) -> None:
    pipe.register(_failing_persist())
    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("fs", "cat", {"path": "/s"}, lambda path: "KEY=S-42-SECRET")
        aresult = asyncio.run(
            step.arun_tool("fs", "acat", {"path": "/s"}, lambda path: "KEY=S-42-SECRET")
        )
    for got in (result, aresult):
        assert got.success is False
        assert REASON_PART in got.content
        assert got.error == got.content
        assert "S-42-SECRET" not in got.model_dump_json()
    _blocked_span(pipe, "cat")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_tool_node_gives_the_model_an_error_message_for_a_blocked_result(
    pipe: TestPipeline, mode: str
) -> None:
    # before: the model got a ToolMessage with empty content and status="success"
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool

    @tool
    def cat(path: str) -> str:
        """Read a file."""
        return "KEY=S-42-SECRET"

    pipe.register(_failing_persist())
    app = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([hook_tool(cat)]))
        .add_edge(START, "tools")
        .compile()
    )
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    call = {"name": "cat", "args": {"path": "/s"}, "id": "c1", "type": "tool_call"}
    given = {"messages": [AIMessage(content="", tool_calls=[call])]}
    out = app.invoke(given, config) if mode == "invoke" else asyncio.run(app.ainvoke(given, config))

    (message,) = out["messages"][1:]
    assert message.status == "error"
    assert REASON_PART in message.content
    assert "S-42-SECRET" not in str(message)
    _blocked_span(pipe, "cat")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_the_agents_sdk_model_reads_the_reason_of_a_blocked_result(
    pipe: TestPipeline, streamed: bool
) -> None:
    # before: the model read an empty output, as if the tool had run and said nothing
    pytest.importorskip("agents")
    from agents import Agent, function_tool, set_trace_processors
    from agents.testing import assistant_message, function_call

    from otelhooks.integrations.openai_agents import HookedRunner
    from tests.integrations._agents_model import ScriptedModel

    set_trace_processors([])  # the SDK's default processor would export to its vendor

    @function_tool
    def cat(path: str) -> str:
        """Read a file."""
        return "KEY=S-42-SECRET"

    pipe.register(_failing_persist())
    turns = [[function_call("cat", {"path": "/s"}, call_id="k1")], [assistant_message("done")]]
    model = ScriptedModel("scripted", turns)
    agent = Agent(name="reader", model=model, tools=[cat])

    async def main() -> Any:
        runner = HookedRunner(pipe.tracer)
        if not streamed:
            return await runner.run(agent, "read it")
        result = await runner.run_streamed(agent, "read it")
        async for _ in result.stream_events():
            pass
        return result

    assert asyncio.run(main()).final_output == "done"
    seen = model.tool_outputs()["k1"]
    assert REASON_PART in seen
    assert "S-42-SECRET" not in seen
    _blocked_span(pipe, "cat")


CAPTURED = Path(__file__).parents[1] / "coding_agents_cli" / "captured" / "kinds"


def _gemini(event: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(
        (CAPTURED / f"gemini-0.61.0-shell-{event}.json").read_text()
    )
    if event == "AfterTool":
        payload["tool_response"] = {"llmContent": "KEY=S-42-SECRET", "returnDisplay": "KEY=…"}
    return payload


def _claude(event: str) -> dict[str, Any]:
    payload = bash("t1", "cat .env", "s1")
    if event == "PostToolUse":
        payload["hook_event_name"] = event
        payload["tool_response"] = {"stdout": "KEY=S-42-SECRET", "stderr": ""}
    return payload


@pytest.mark.parametrize(
    ("dialect", "events", "decision", "tool"),
    [
        ("claude-code", ("PreToolUse", "PostToolUse"), "block", "Bash"),
        ("codex", ("PreToolUse", "PostToolUse"), "block", "Bash"),
        ("gemini", ("BeforeTool", "AfterTool"), "deny", "run_shell_command"),
    ],
    ids=["claude-code", "codex", "gemini"],
)
def test_the_bridge_answers_a_blocked_result_with_its_reason_and_its_span_says_blocked(
    tmp_path: Path, dialect: str, events: tuple[str, str], decision: str, tool: str
) -> None:
    # before: the agent got the reason, but the span said success and after_tool_call hooks
    # were told the call succeeded
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        f"  - {{id: {REASON_PART}, type: tool_result_persist, matcher: {tool},"
        " script: hooks.py:scan, on_error: block}\n"
        f"  - {{id: seen, type: after_tool_call, matcher: {tool}, script: hooks.py:seen}}\n"
    )
    (tmp_path / "hooks.py").write_text(
        "import json, pathlib\n"
        "def scan(data):\n"
        "    raise RuntimeError('the secret scanner is down')\n"
        "def seen(event):\n"
        "    pathlib.Path('after.json').write_text(json.dumps(event.success))\n"
    )
    payload = _gemini if dialect == "gemini" else _claude
    traces = tmp_path / "traces.jsonl"
    flags = ("--traces-out", str(traces))
    before = one_process(tmp_path, payload(events[0]), *flags, dialect=dialect)
    assert before.returncode == 0, before.stderr
    answer = one_process(tmp_path, payload(events[1]), *flags, dialect=dialect)
    # Codex: a block is exit 2 with its reason on stderr, which Codex reads even when a
    # printing BASH_ENV spoils the JSON on stdout (docs/adapters.md)
    assert answer.returncode == (2 if dialect == "codex" else 0), answer.stderr
    if dialect == "codex":
        assert REASON_PART in answer.stderr
        assert "S-42-SECRET" not in answer.stderr
    said = json.loads(answer.stdout)
    assert said["decision"] == decision
    assert REASON_PART in said["reason"]
    assert "S-42-SECRET" not in answer.stdout
    (span,) = [s for s in read_otlp_json_lines(traces) if s["name"] == f"execute_tool {tool}"]
    assert span["attributes"]["otelhooks.tool.outcome"] == "blocked"
    assert json.loads((tmp_path / "after.json").read_text()) is False


@pytest.mark.parametrize("handle_errors", [False, True], ids=["default", "handle_tool_errors"])
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_an_unwrapped_langchain_tool_whose_result_is_blocked_never_hands_it_on(
    pipe: TestPipeline, handle_errors: bool, mode: str
) -> None:
    # a callback cannot change a tool's output, but raising from its end keeps the output from
    # the model. Before, the model read the secret, a warning said "not enforced"
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from structlog.testing import capture_logs

    from otelhooks.integrations.langchain import OtelHooksCallbackHandler

    @tool
    def cat(path: str) -> str:
        """Read a file."""
        return "KEY=S-42-SECRET"

    pipe.register(_failing_persist())
    node = ToolNode([cat], handle_tool_errors=handle_errors)
    app = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)]}
    call = {"name": "cat", "args": {"path": "/s"}, "id": "c1", "type": "tool_call"}
    given = {"messages": [AIMessage(content="", tool_calls=[call])]}

    def invoke() -> Any:
        return (
            app.invoke(given, config)
            if mode == "invoke"
            else asyncio.run(app.ainvoke(given, config))
        )

    with capture_logs() as logs:
        if handle_errors:
            answer = invoke()["messages"][-1]
            assert answer.status == "error"
            assert "S-42-SECRET" not in str(answer.content)
            assert "ToolDenied" in str(answer.content)
        else:
            with pytest.raises(ToolDenied) as raised:
                invoke()
            assert "S-42-SECRET" not in str(raised.value)
    (line,) = [e for e in logs if "tool_result_persist" in e["event"]]
    assert line["log_level"] == "warning"
    assert "withheld" in line["event"]
    assert (line["tool"], line["blocked"]) == ("cat", True)
