"""OpenAI Agents SDK: the calls of tools no otelhooks hook can stop (a hosted ``WebSearchTool``
and ``HostedMCPTool`` the model's API runs) are recorded, and a guard that denies one says it
was not enforced (the real SDK, a scripted model whose response holds the hosted calls)."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, HostedMCPTool, WebSearchTool, set_trace_processors
from agents.testing import assistant_message
from openai.types.responses import ResponseFunctionWebSearch
from openai.types.responses.response_function_web_search import ActionSearch
from openai.types.responses.response_output_item import McpCall
from opentelemetry.trace import StatusCode
from structlog.testing import capture_logs

from otelhooks import Block
from otelhooks.integrations.openai_agents import HookedRunner, UnguardedToolWarning
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def _hosted_turn() -> list[Any]:
    """What the model's API answers after running two hosted tools itself."""
    search = ResponseFunctionWebSearch(
        id="ws1",
        type="web_search_call",
        status="completed",
        action=ActionSearch(type="search", query="admin password"),
    )
    lookup = McpCall(
        id="mcp1",
        type="mcp_call",
        server_label="docs",
        name="read_page",
        arguments='{"page": "secrets"}',
        output="the page",
    )
    return [search, lookup, assistant_message("found it")]


def _run(pipe: TestPipeline) -> tuple[Any, list[dict[str, Any]]]:
    model = ScriptedModel("m", [_hosted_turn()])
    mcp: Any = {"type": "mcp", "server_label": "docs", "server_url": "http://127.0.0.1:9/mcp"}
    agent = Agent(
        name="researcher",
        model=model,
        tools=[WebSearchTool(), HostedMCPTool(tool_config=mcp)],
    )
    with warnings.catch_warnings(), capture_logs() as logs:
        warnings.simplefilter("ignore", UnguardedToolWarning)  # what a service's logs may drop
        result = asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()
    return result, logs


def test_a_deny_of_a_hosted_tool_s_call_is_recorded_as_not_enforced(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    """Before, the run went on with no record of either call: no span, no hook run, no line
    (the ``UnguardedToolWarning`` of ``hook_agent``, which Python shows once and a service may
    filter, was the only word)."""
    pipe.register(
        hook("no-search", "before_tool_call", lambda e: Block("no web"), matcher="@web_search"),
        hook("no-docs", "before_tool_call", lambda e: Block("no docs"), matcher="docs/read_page"),
        hook("errors", "on_tool_call_error", recorder),
    )
    result, logs = _run(pipe)

    assert result.final_output == "found it"  # the API ran both: nothing could stop them
    search, page = pipe.span("execute_tool web_search"), pipe.span("execute_tool read_page")
    for span, value in ((search, "researcher/web_search"), (page, "docs/read_page")):
        attrs = span.attributes or {}
        assert attrs["otelhooks.tool.matcher_value"] == value
        assert attrs["otelhooks.hook.decision"] == "deny"
        assert attrs["error.type"] == "otelhooks.integrations.openai_agents.UnguardedToolCall"
        assert span.status.status_code is StatusCode.ERROR
    assert (page.attributes or {})["gen_ai.tool.call.id"] == "mcp1"
    told = sorted((e.apiName, e.errorType) for e in recorder.of("on_tool_call_error"))  # type: ignore[attr-defined]
    assert told == [("read_page", "UnguardedToolCall"), ("web_search", "UnguardedToolCall")]
    lines = sorted(e["tool"] for e in logs if "not enforced" in e["event"])
    assert lines == ["docs/read_page", "researcher/web_search"]
    assert all(e["log_level"] == "warning" for e in logs if "not enforced" in e["event"])


def test_a_hosted_tool_s_call_no_hook_decided_on_is_observed(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    pipe.register(
        hook("audit", "before_tool_call", lambda e: seen.append((e.apiName, dict(e.args)))),
        hook("after", "after_tool_call", recorder),
    )
    _, logs = _run(pipe)

    assert sorted(seen) == [
        ("read_page", {"page": "secrets"}),
        ("web_search", {"action": {"type": "search", "query": "admin password"}}),
    ]
    span = pipe.span("execute_tool web_search")
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "success"
    assert span.status.status_code is not StatusCode.ERROR
    assert sorted(e.apiName for e in recorder.of("after_tool_call")) == ["read_page", "web_search"]  # type: ignore[attr-defined]
    assert [e for e in logs if "not enforced" in e["event"]] == []


def test_a_shell_deny_of_a_hosted_shell_s_call_is_recorded_as_not_enforced(
    pipe: TestPipeline,
) -> None:
    """A ``ShellTool`` with no executor runs in the API's container: before, a ``@shell`` deny
    of its ``rm -rf`` left no span and no line; a local ``ShellTool``'s call is judged by its
    hooked executor, never also here."""
    from agents import ShellTool
    from openai.types.responses import ResponseFunctionShellToolCall
    from openai.types.responses.response_function_shell_tool_call import Action

    pipe.register(hook("no-shell", "before_tool_call", lambda e: Block("no"), matcher="@shell"))
    rm = ResponseFunctionShellToolCall(
        id="sh1",
        call_id="c1",
        type="shell_call",
        status="completed",
        action=Action(commands=["rm -rf /data"], timeout_ms=1000, max_output_length=None),
    )
    model = ScriptedModel("m", [[rm, assistant_message("gone")]])
    shell = ShellTool(environment={"type": "container_auto"})
    agent = Agent(name="ops", model=model, tools=[shell])
    with warnings.catch_warnings(), capture_logs() as logs:
        warnings.simplefilter("ignore", UnguardedToolWarning)
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    span = pipe.span("execute_tool shell")
    attrs = span.attributes or {}
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert attrs["error.type"] == "otelhooks.integrations.openai_agents.UnguardedToolCall"
    assert attrs["gen_ai.tool.call.id"] == "c1"
    assert [e["tool"] for e in logs if "not enforced" in e["event"]] == ["ops/shell"]


def test_a_tool_search_and_a_program_the_api_ran_are_recorded(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    """A ``ToolSearchTool``'s search and a ``ProgrammaticToolCallingTool``'s program run in the
    model's API, as any hosted tool's call. Before, ``hook_agent``'s warning named the tools and
    no call of them was recorded: no span, no hook run. Now each is an ``execute_tool`` span,
    and a deny of one is said to be not enforced."""
    from agents import ProgrammaticToolCallingTool, ToolSearchTool
    from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem
    from openai.types.responses.response_output_item import Program, ProgramOutput

    seen: list[tuple[str, dict[str, Any]]] = []
    pipe.register(
        hook("audit", "before_tool_call", lambda e: seen.append((e.apiName, dict(e.args)))),
        hook("no-program", "before_tool_call", lambda e: Block("no"), matcher="programmatic_.*"),
        hook("errors", "on_tool_call_error", recorder),
        hook("after", "after_tool_call", recorder),
    )
    found: Any = {"type": "function", "name": "delete_file", "parameters": {}, "strict": False}
    turn = [
        ResponseToolSearchCall(
            id="ts1",
            call_id="s1",
            type="tool_search_call",
            arguments={"query": "files"},
            execution="server",
            status="completed",
        ),
        ResponseToolSearchOutputItem(
            id="tso1",
            call_id="s1",
            type="tool_search_output",
            execution="server",
            status="completed",
            tools=[found],
        ),
        Program(id="p1", call_id="pc1", type="program", code="return 1 + 1", fingerprint="f"),
        ProgramOutput(
            id="po1", call_id="pc1", type="program_output", result="2", status="completed"
        ),
        assistant_message("done"),
    ]
    agent = Agent(
        name="searcher",
        model=ScriptedModel("m", [turn]),
        tools=[ToolSearchTool(), ProgrammaticToolCallingTool()],
    )
    with warnings.catch_warnings(), capture_logs() as logs:
        warnings.simplefilter("ignore", UnguardedToolWarning)
        result = asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()
    assert result.final_output == "done"

    assert sorted(seen) == [
        ("programmatic_tool_calling", {"code": "return 1 + 1"}),
        ("tool_search", {"arguments": {"query": "files"}, "execution": "server"}),
    ]
    search = pipe.span("execute_tool tool_search")
    assert search.status.status_code is not StatusCode.ERROR
    attrs = dict(search.attributes or {})
    assert attrs["gen_ai.tool.call.id"] == "s1"
    assert attrs["gen_ai.tool.type"] == "extension"
    assert attrs["otelhooks.tool.outcome"] == "success"
    (after,) = recorder.of("after_tool_call")
    assert "delete_file" in str(after.result)  # type: ignore[attr-defined]  # the tools found
    program = pipe.span("execute_tool programmatic_tool_calling")
    assert program.status.status_code is StatusCode.ERROR  # denied: not enforced, said so
    assert [e.errorType for e in recorder.of("on_tool_call_error")] == ["UnguardedToolCall"]  # type: ignore[attr-defined]
    assert [e["tool"] for e in logs if "not enforced" in e["event"]] == [
        "searcher/programmatic_tool_calling"
    ]
