"""The pieces of replay on their own: decisions, diffs, the engine's inline calls."""

from __future__ import annotations

import time
from typing import Any

from otelhooks import Block, HooksEngine, Verdict
from otelhooks.events import ToolCallEvent
from otelhooks.replay import Decision, RecordedEvent, decision_of, diff_values, replay_events


def test_a_block_wins_over_a_mock_and_a_mock_over_rewrites() -> None:
    blocked = Verdict(blocked=True, decided_by="a", reason="no", mocked_by="b", rewritten_by=["c"])
    assert decision_of(blocked) == Decision("deny", ("a",), "no")
    assert decision_of(Verdict(rewritten_by=["c", "d"])) == Decision("rewrite", ("c", "d"))
    assert decision_of(Verdict()) == Decision()


def test_diff_walks_nested_arguments() -> None:
    old = {"cmd": "rm", "opts": {"force": True, "dir": "/"}, "gone": 1}
    new = {"cmd": "rm", "opts": {"force": False, "dir": "/"}, "added": [1]}
    assert diff_values(old, new, "args") == [
        {"path": "args.added", "op": "add", "to": [1]},
        {"path": "args.gone", "op": "remove", "from": 1},
        {"path": "args.opts.force", "op": "replace", "from": True, "to": False},
    ]
    assert diff_values("hi", "hi!", "content") == [
        {"path": "content", "op": "replace", "from": "hi", "to": "hi!"}
    ]


def _call(n: int = 0) -> ToolCallEvent:
    return ToolCallEvent(toolCallId=f"c{n}", identifier="fs", apiName="rm", args={"n": n})


def test_inline_decide_gives_the_pooled_verdicts() -> None:
    def rewrite(event: ToolCallEvent) -> dict[str, Any]:
        return {"args": {**event.args, "safe": True}}

    def mock(event: ToolCallEvent) -> None:
        event.mock("done")

    engine = HooksEngine(
        [
            {"id": "rewrite", "type": "beforeToolCall", "handler": rewrite},
            {"id": "mock", "type": "beforeToolCall", "handler": mock},
            {"id": "deny", "type": "beforeToolCall", "handler": lambda e: Block("stop")},
        ]
    )
    try:
        for inline in (False, True):
            verdict = engine.dry_run("before_tool_call", _call(), inline=inline)
            assert verdict.rewritten_by == ["rewrite"]
            assert verdict.mocked_by == "mock"
            assert verdict.mock is not None
            assert verdict.mock.content == "done"
            assert not verdict.blocked  # the mock ends the chain before the deny
    finally:
        engine.shutdown(1.0)


def test_inline_decide_judges_a_deadline_when_the_hook_returns() -> None:
    def slow_mock(event: ToolCallEvent) -> None:
        time.sleep(0.3)
        event.mock("too late")

    engine = HooksEngine(
        [{"id": "slow", "type": "beforeToolCall", "handler": slow_mock, "timeout": 0.1}]
    )
    try:
        verdicts = [engine.dry_run("before_tool_call", _call(), inline=i) for i in (False, True)]
    finally:
        engine.shutdown(1.0)
    for verdict in verdicts:
        assert verdict.mock is None  # a mock after the deadline does not count, either way
        assert [s.outcome for s in verdict.steps] == ["timeout"]
        assert verdict.errors == ["slow: timed out after 0.1s"]


def test_the_replay_package_exports_documented_objects_only() -> None:
    import otelhooks.replay as replay_pkg

    assert set(replay_pkg.__all__) == {
        "CHANGES", "AnnotationWriter", "Decision", "RecordedEvent", "RecordingError",
        "ReplayOutcome", "ReplayReport", "SpanContext", "Tally", "annotation_attributes",
        "decision_of", "diff_values", "iter_requests", "iter_spans", "loaded_once",
        "read_recording", "recorded_events", "replay", "replay_events",
    }  # fmt: skip
    undocumented = [
        name
        for name in replay_pkg.__all__
        if callable(getattr(replay_pkg, name)) and not getattr(replay_pkg, name).__doc__
    ]
    assert undocumented == []


def test_spans_that_lack_names_replay_with_the_values_matchers_expect() -> None:
    from otelhooks import semconv as sc
    from otelhooks.replay import recorded_events

    spans: list[dict[str, Any]] = [
        {"traceId": "t", "spanId": "a", "name": "invoke_agent", "attributes": {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}},
        {"traceId": "t", "spanId": "m", "parentSpanId": "a", "name": "send_message",
         "attributes": {sc.GEN_AI_OPERATION_NAME: sc.OP_SEND_MESSAGE}},
        {"traceId": "t", "spanId": "x", "parentSpanId": "a", "name": "execute_tool fs/rm",
         "attributes": {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                        sc.GEN_AI_TOOL_CALL_ARGUMENTS: "not json"}},
    ]  # fmt: skip
    agent, message, call, persist = recorded_events(spans)
    assert agent.values == ("*",)
    assert message.values == ("*",)
    assert (call.values, call.subject) == (("fs/rm", "rm"), "fs/rm")
    assert call.payload.args == {"input": "not json"}  # type: ignore[attr-defined]
    assert not persist.content_recorded  # neither a result nor its size was recorded


def test_each_tool_span_gets_its_own_parents_facts_and_its_own_names() -> None:
    # Tool spans of two agents interleaved, one with a fact of its own, and tool names in
    # every shape: each payload carries what its own span and ancestors say.
    from otelhooks import semconv as sc
    from otelhooks.replay import recorded_events

    def agent(span_id: str, n: int) -> dict[str, Any]:
        return {
            "traceId": "t",
            "spanId": span_id,
            "name": "invoke_agent",
            "attributes": {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_ID: f"agent{n}",
                sc.OPERATION_ID: f"op{n}",
                sc.GEN_AI_CONVERSATION_ID: f"s{n}",
            },
        }

    def tool(span_id: str, parent: str, **attrs: Any) -> dict[str, Any]:
        return {
            "traceId": "t",
            "spanId": span_id,
            "parentSpanId": parent,
            "name": "execute_tool fs/rm",
            "startTimeUnixNano": "5000000",
            "attributes": {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, **attrs},
        }

    spans = [
        agent("a", 1), agent("b", 2),
        tool("x", "a", **{sc.GEN_AI_TOOL_NAME: "web/fetch"}),
        tool("y", "b", **{sc.GEN_AI_TOOL_NAME: 7, sc.TOOL_IDENTIFIER: "calc"}),
        tool("z", "b", **{sc.USER_ID: "u"}),
        tool("w", "a", **{sc.GEN_AI_TOOL_NAME: "web/fetch", sc.TOOL_IDENTIFIER: "net"}),
    ]  # fmt: skip
    calls = [e for e in recorded_events(spans) if e.event == "before_tool_call"]
    got = [
        (e.subject, e.values, e.agent, e.payload.model_dump(include={
            "identifier", "apiName", "toolName", "toolCallId", "agentId", "operationId",
            "runId", "sessionKey", "userId", "timestamp", "assistantMessageId"}))
        for e in calls
    ]  # fmt: skip

    def fields(identifier: str, api: str, call: str, n: int, **more: Any) -> dict[str, Any]:
        return {"identifier": identifier, "apiName": api, "toolName": api, "toolCallId": call,
                "agentId": f"agent{n}", "operationId": f"op{n}", "runId": f"op{n}",
                "sessionKey": f"s{n}", "userId": None, "timestamp": 5,
                "assistantMessageId": "msg_" + "ab"[n - 1], **more}  # fmt: skip

    assert got == [
        ("web/fetch", ("web/fetch", "fetch"), "agent1", fields("web", "fetch", "x", 1)),
        ("calc/7", ("calc/7", "7"), "agent2", fields("calc", "7", "y", 2)),
        ("fs/rm", ("fs/rm", "rm"), "agent2", fields("fs", "rm", "z", 2, userId="u")),
        ("net/web/fetch", ("net/web/fetch", "web/fetch"), "agent1",
         fields("net", "web/fetch", "w", 1)),
    ]  # fmt: skip
    persisted = [e for e in recorded_events(spans) if e.event == "tool_result_persist"]
    assert [e.payload.model_dump(exclude={"eventId", "result"}) for e in persisted][2] == {
        "event": "tool_result_persist", "timestamp": 5, "operationId": "op2",
        "parentOperationId": None, "sessionKey": "s2", "userId": "u", "traceId": "t",
        "spanId": "z", "toolName": "rm", "toolCallId": "z", "identifier": "fs",
        "apiName": "rm", "toolNamespace": None}  # fmt: skip


def _recorded(event: str, build: Any, values: tuple[str, ...]) -> RecordedEvent:
    return RecordedEvent(event, build, values, Decision(), "t", "s", None, "fs/rm", True, {})


def test_replay_decides_each_event_as_dry_run_does_with_its_operations_hooks() -> None:
    engine = HooksEngine([{"id": "g", "type": "beforeToolCall", "handler": lambda e: None}])
    engine.register(
        [{"id": "o", "type": "beforeToolCall", "handler": lambda e: Block("not in op1")}],
        operation_id="op1",
    )
    values = ("fs/rm", "rm")
    in_op = ToolCallEvent(toolCallId="c1", identifier="fs", apiName="rm", operationId="op1")
    built: list[str] = []

    def never() -> ToolCallEvent:
        built.append("persisted")
        raise AssertionError("no hook wants this event: its payload is not built")

    events = [
        _recorded("before_tool_call", lambda: in_op, values),
        _recorded("before_tool_call", _call, values),
        _recorded("tool_result_persist", never, values),
    ]
    op, plain, persisted = replay_events(engine, events)
    expected = engine.dry_run("before_tool_call", in_op, values=values)
    assert op.now == decision_of(expected) == Decision("deny", ("o",), "not in op1")
    assert op.matched == expected.matched == ["g", "o"]
    assert (plain.now, plain.matched) == (Decision(), ["g"])
    assert (persisted.now, persisted.matched, built) == (Decision(), [], [])


def test_a_chain_no_enforcing_hook_runs_in_copies_no_arguments() -> None:
    # Only an enforcing hook's in-place change is one to tell (a permissive hook gets its own
    # copy): a chain of none holds the caller's arguments, uncopied, as a replay reads them.
    def tamper(event: ToolCallEvent) -> None:
        event.args["n"] = 99

    engine = HooksEngine(
        [{"id": "try", "type": "beforeToolCall", "handler": tamper, "mode": "permissive"}]
    )
    try:
        call = _call(1)
        args = call.args
        verdict = engine.dry_run("before_tool_call", call, inline=True)
        assert verdict.payload is not None
        assert verdict.payload.args is args
        assert args == {"n": 1}
        assert verdict.steps[0].permissive == "rewrite"
    finally:
        engine.shutdown(1.0)
