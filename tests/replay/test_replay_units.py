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
