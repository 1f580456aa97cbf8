"""OpenAI Agents: once a ``tool_result_persist`` hook redacts a hooked tool's result or the
message the SDK made of its exception, the redacted text is the only one other listeners get:
the SDK's tracing processors (its own and the GenAI instrumentation's), ``RunHooks`` and
``AgentHooks`` ``on_tool_end``, ``run_streamed``'s events, the run's items and otelhooks' own
``execute_tool`` span (a scripted model, the real SDK)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("opentelemetry.instrumentation.openai_agents")

from agents import (
    Agent,
    AgentHooks,
    RunConfig,
    RunHooks,
    ToolErrorFormatterArgs,
    function_tool,
    set_trace_processors,
)
from agents.testing import assistant_message, function_call
from agents.tracing import Span, Trace, TracingProcessor
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

from otelhooks import HookEvent
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, attribute_values, hook
from tests.integrations._agents_model import ScriptedModel

SECRET = "S-42-SECRET"


class Heard(TracingProcessor, RunHooks[Any]):
    """A tracing processor and run hooks of the user's: the text of all they are told."""

    def __init__(self) -> None:
        self.told: list[str] = []

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        self.told.append(f"span {span.export()!r} {span.error!r}")

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: str) -> None:
        self.told.append(f"run hooks on_tool_end {result!r}")


class AgentHeard(AgentHooks[Any]):
    def __init__(self, heard: Heard) -> None:
        self.heard = heard

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: str) -> None:
        self.heard.told.append(f"agent hooks on_tool_end {result!r}")


@pytest.fixture
def heard(pipe: TestPipeline) -> Iterator[Heard]:
    # the SDK's default processor would export to its vendor: only ours and the instrumentation's
    listener = Heard()
    set_trace_processors([listener])
    OpenAIAgentsInstrumentor().instrument(tracer_provider=pipe.oh.tracer_provider)
    yield listener
    OpenAIAgentsInstrumentor().uninstrument()
    set_trace_processors([])


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace(SECRET, "[REDACTED]")


def _own_message(ctx: Any, error: Exception) -> str:
    return f"login broke: {error}"


def _formatter(args: ToolErrorFormatterArgs[Any]) -> str:
    return f"formatted: {args.error}"


@function_tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"{url}: token {SECRET}"


def _login(own: bool) -> Any:
    def login() -> str:
        """Log in."""
        raise ValueError(f"bad token {SECRET}")

    # (the SDK's default message names no exception text: nothing of it to judge)
    return (
        function_tool(login, failure_error_function=_own_message) if own else function_tool(login)
    )


def _run(pipe: TestPipeline, heard: Heard, tool: Any, args: Any, streamed: bool, **cfg: Any) -> Any:
    model = ScriptedModel(
        "m", [[function_call(tool.name, args, call_id="f1")], [assistant_message("done")]]
    )
    agent = Agent(name="bot", model=model, tools=[tool], hooks=AgentHeard(heard))
    runner = HookedRunner(pipe.tracer)
    config = RunConfig(trace_include_sensitive_data=True, **cfg)

    async def main() -> None:
        if not streamed:
            result = await runner.run(agent, "go", hooks=heard, run_config=config)
        else:
            result = await runner.run_streamed(agent, "go", hooks=heard, run_config=config)
            async for event in result.stream_events():
                heard.told.append(f"stream {event!r}")
        heard.told.append(f"items {result.new_items!r} {result.final_output!r}")

    asyncio.run(main())
    pipe.flush()
    return model


def _ours(pipe: TestPipeline) -> Any:
    """otelhooks' ``execute_tool`` span (the instrumentation's has the same name)."""
    spans = pipe.spans("execute_tool login")
    [span] = [s for s in spans if "otelhooks.tool.outcome" in (s.attributes or {})]
    return span


def _own_spans(pipe: TestPipeline) -> list[str]:
    spans = pipe.spans()
    return [*attribute_values(spans), *(str(s.status.description) for s in spans)]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_redacted_result_is_all_the_sdks_listeners_get(
    pipe: TestPipeline, heard: Heard, streamed: bool
) -> None:
    pipe.register(hook("redact", "tool_result_persist", _redact))
    model = _run(pipe, heard, fetch, {"url": "a"}, streamed)

    assert model.tool_outputs()["f1"] == "a: token [REDACTED]"
    kinds = {t.split(" ")[0] for t in heard.told if "[REDACTED]" in t}
    assert {"span", "run", "agent", "items"} <= kinds
    assert [t for t in heard.told if SECRET in t] == []
    assert [v for v in _own_spans(pipe) if SECRET in v] == []


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("handler", ["tool-own", "run-formatter"])
def test_a_redacted_tool_failure_is_all_the_tracing_and_spans_get(
    pipe: TestPipeline, heard: Heard, recorder: Recorder, handler: str, streamed: bool
) -> None:
    # before: the SDK's function span error kept the exception's own text (every tracing
    # processor exports it), and otelhooks' execute_tool span its exception event
    pipe.register(
        hook("redact", "tool_result_persist", _redact),
        hook("errors", "on_tool_call_error", recorder),
        hook("after", "after_tool_call", recorder),
    )
    own = handler == "tool-own"
    formatter = None if own else _formatter
    model = _run(pipe, heard, _login(own), {}, streamed, tool_error_formatter=formatter)

    told = model.tool_outputs()["f1"]
    assert told == ("login broke: " if own else "formatted: ") + "bad token [REDACTED]"
    assert [t for t in heard.told if SECRET in t] == []
    assert any("bad token [REDACTED]" in t and "Error running tool" in t for t in heard.told)
    assert [v for v in _own_spans(pipe) if SECRET in v] == []
    assert "on_tool_call_error" in recorder.names()
    assert [e for e in recorder.events if SECRET in repr(e)] == []  # what observers are told
    span = _ours(pipe)
    assert (span.attributes or {})["error.type"] == "ValueError"
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "error"


def test_a_tool_failure_no_hook_judges_is_recorded_as_raised(
    pipe: TestPipeline, heard: Heard
) -> None:
    # without a tool_result_persist hook nothing is judged: the exception as the tool raised it
    _run(pipe, heard, _login(True), {}, False)
    span = _ours(pipe)
    [event] = [e for e in span.events if e.name == "exception"]
    assert (event.attributes or {})["exception.message"] == f"bad token {SECRET}"
