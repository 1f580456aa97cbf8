"""Which received spans are a coding agent's, which session each names, and the move into the
session's trace (``coding_agents._joins``): Claude Code and Gemini CLI per span, Codex per trace,
bounded."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, TraceFlags

from otelhooks import HooksEngine
from otelhooks.integrations.claude_code import session_trace_id
from otelhooks.integrations.coding_agents._joins import TraceSessions, agent_of
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._spans import BRIDGE_SCOPE
from otelhooks.integrations.coding_agents._telemetry import ClaudeTelemetry


def _span(
    service: str,
    trace_id: int,
    span_id: int,
    attrs: dict[str, Any] | None = None,
    resource: dict[str, Any] | None = None,
    scope: str | None = None,
) -> ReadableSpan:
    ctx = SpanContext(trace_id, span_id, True, TraceFlags(TraceFlags.SAMPLED))
    return ReadableSpan(
        instrumentation_scope=InstrumentationScope(scope) if scope else None,
        name=f"span {span_id}",
        context=ctx,
        parent=None,
        resource=Resource.create({"service.name": service, **(resource or {})}),
        attributes=attrs or {},
        start_time=1,
        end_time=2,
    )


def _telemetry() -> ClaudeTelemetry:
    return ClaudeTelemetry(ServerSessions(), engine=HooksEngine())


def test_a_gemini_span_joins_by_its_conversation_id() -> None:
    joined = _telemetry().join(_span("gemini-cli", 7, 1, {"gen_ai.conversation.id": "g-1"}))
    assert joined is not None
    assert joined.context is not None
    assert joined.context.trace_id == session_trace_id("g-1")
    assert (joined.attributes or {})["gemini_cli.trace_id"] == format(7, "032x")


def test_a_gemini_span_without_one_joins_by_its_resources_session_id() -> None:
    joined = _telemetry().join(_span("gemini-cli", 7, 1, resource={"session.id": "g-2"}))
    assert joined is not None
    assert joined.context is not None
    assert joined.context.trace_id == session_trace_id("g-2")


def test_a_codex_trace_joins_whole_once_one_span_of_the_request_names_the_session() -> None:
    telemetry = _telemetry()
    child = _span("codex_exec", 9, 1, {"busy_ns": 5})
    named = _span("codex_exec", 9, 2, {"conversation.id": "c-1"})
    assert telemetry.join(child) is None  # alone, a span of the trace names no session
    telemetry.prepare([child, named])
    joined = telemetry.join(child)
    assert joined is not None
    assert joined.context is not None
    assert joined.context.trace_id == session_trace_id("c-1")
    assert (joined.attributes or {})["codex.trace_id"] == format(9, "032x")


def test_a_codex_trace_naming_no_session_stays_as_it_is() -> None:
    telemetry = _telemetry()
    startup = _span("codex_exec", 11, 1)
    telemetry.prepare([startup])
    assert telemetry.join(startup) is None


def test_a_codex_tool_span_links_the_bridges_execute_tool_span_received_before() -> None:
    telemetry = _telemetry()
    bridge = _span(
        "codex",
        session_trace_id("c-3"),
        0xABC,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.conversation.id": "c-3",
            "gen_ai.tool.call.id": "call_1",
            "otelhooks.tool.call_index": 0,
        },
        scope=BRIDGE_SCOPE,
    )
    telemetry.prepare([bridge])
    tool = _span("codex_exec", 12, 5, {"conversation.id": "c-3", "call_id": "call_1"})
    telemetry.prepare([tool])
    joined = telemetry.join(tool)
    assert joined is not None
    assert (joined.attributes or {})["otelhooks.hook.span_id"] == format(0xABC, "016x")
    assert [link.context.span_id for link in joined.links] == [0xABC]


def test_the_trace_memory_forgets_the_oldest_past_its_bound_and_counts_it() -> None:
    forgotten: list[int] = []
    traces = TraceSessions(remember=2, on_forget=lambda: forgotten.append(1))
    spans = [_span("codex_exec", t, 1, {"conversation.id": f"s-{t}"}) for t in (1, 2, 3)]
    traces.learn(spans)
    codex = agent_of(spans[0])
    assert codex is not None
    assert [traces.session(codex, _span("codex_exec", t, 9)) for t in (1, 2, 3)] == [
        None,
        "s-2",
        "s-3",
    ]
    assert forgotten == [1]


def test_a_session_that_is_not_text_is_no_session() -> None:
    assert _telemetry().join(_span("gemini-cli", 7, 1, {"gen_ai.conversation.id": 3})) is None


def test_a_span_of_another_service_is_not_joined() -> None:
    assert agent_of(_span("my-app", 7, 1, {"conversation.id": "x"})) is None


class _Preparing:
    """A processor that fails preparing and records what reaches ``on_end``."""

    def __init__(self) -> None:
        self.ended: list[str] = []

    def prepare(self, spans: object) -> None:
        raise RuntimeError("prepare broke")

    def on_start(self, span: object, parent_context: object = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span.name)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_a_processor_failing_to_prepare_still_gets_every_span() -> None:
    import json

    from otelhooks._eventlog._ingest import OtlpIngest, PreparesBatch

    processor = _Preparing()
    assert isinstance(processor, PreparesBatch)
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "name": "s", "kind": 1,
            "startTimeUnixNano": "1", "endTimeUnixNano": "2"}  # fmt: skip
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    ingest = OtlpIngest([processor])  # type: ignore[list-item]
    assert ingest.ingest(json.dumps(body).encode(), "application/json") == 0
    assert processor.ended == ["s"]


def test_a_trace_is_not_remembered_for_a_session_id_past_the_bound() -> None:
    from otelhooks.integrations.coding_agents._joins import MAX_SESSION_ID

    telemetry = _telemetry()
    child = _span("codex_exec", 13, 1)
    huge = _span("codex_exec", 13, 2, {"conversation.id": "x" * (MAX_SESSION_ID + 1)})
    telemetry.prepare([child, huge])
    assert telemetry.join(child) is None


def test_the_join_memory_answers_while_a_transaction_waits_for_the_file(tmp_path: Path) -> None:
    """The daemon's state file is shared with hook processes: while a neighbour holds its write
    lock, a tool use starting waits for it (up to 5 s) holding the file's connection. What the
    store keeps in memory (the span an ended tool use became, which the telemetry joins read for
    every received span; whether a session was seen; what is held) answers at once, not after
    that wait (before: it took the connection's lock, and waited)."""
    path = tmp_path / "state.sqlite3"
    sessions = ServerSessions(path)
    sessions.begin_tool("s-1", "toolu_1", "Bash", {})
    ended = sessions.end_tool("s-1", "toolu_1")
    assert ended is not None
    neighbour = sqlite3.connect(path, isolation_level=None)
    neighbour.execute("BEGIN IMMEDIATE")
    thread = threading.Thread(target=sessions.begin_tool, args=("s-1", "toolu_2", "Bash", {}))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not sessions._lock.locked():  # the tool use is in its transaction, waiting
            assert time.monotonic() < deadline
            time.sleep(0.005)
        began = time.monotonic()
        assert sessions.tool_span("s-1", "toolu_1") == ended.span_id
        assert sessions.saw("s-1")
        sessions.note("s-2")
        assert sessions.held[0] == 1
        waited = time.monotonic() - began
        assert thread.is_alive()  # still waiting for the neighbour
    finally:
        neighbour.execute("ROLLBACK")
        neighbour.close()
        thread.join(10)
    assert waited < 1.0
    assert sessions.has_open_tool("s-1", "toolu_2")  # started on the file once it was free
    sessions.close()
