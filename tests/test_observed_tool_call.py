"""What an ``after_tool_call`` observer receives, and that the agent never waits for it."""

from __future__ import annotations

import threading
from typing import Any

from otelhooks.events import AfterToolCallEvent, ToolResult
from otelhooks.testing import capture_events, pipeline


def _read(path: str) -> str:
    return f"text of {path}"


def test_an_observer_receives_every_field_of_the_call_by_name() -> None:
    with pipeline() as pipe:
        seen = capture_events(pipe.oh, events=["after_tool_call"])
        with pipe.oh.operation("agent", session_id="s-1") as op, op.step() as step:
            step.run_tool("fs", "readFile", {"path": "a.txt"}, _read)
            step.run_tool("fs", "readFile", {"path": "b.txt"}, _read)
        first, second = seen.of("after_tool_call")
        (span, _) = pipe.spans("execute_tool readFile")
    assert isinstance(second, AfterToolCallEvent)
    # LobeHub's callIndex: calls of the same identifier/apiName so far in the operation, from 1
    assert (first.callIndex, first.stepIndex) == (1, 0)
    assert (second.callIndex, second.stepIndex) == (2, 0)
    assert second.model_dump(include={"identifier", "apiName", "args", "content"}) == {
        "identifier": "fs",
        "apiName": "readFile",
        "args": {"path": "b.txt"},
        "content": "text of b.txt",
    }
    assert (second.toolName, second.toolInput, second.runId) == (
        "readFile",
        {"path": "b.txt"},
        second.operationId,
    )
    assert second.sessionKey == "s-1"
    assert second.success is True
    assert second.mocked is False
    assert second.result.content == "text of b.txt"
    assert second.result.executionTime == second.executionTimeMs > 0
    assert second.duration == second.executionTimeMs / 1000
    ctx = span.get_span_context()
    assert ctx is not None
    assert (first.traceId, first.spanId) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")


def test_the_step_index_of_a_later_step_reaches_the_observer() -> None:
    with pipeline() as pipe:
        seen = capture_events(pipe.oh, events=["after_tool_call"])
        with pipe.oh.operation("agent") as op:
            with op.step() as step:
                step.run_tool("fs", "readFile", {"path": "a"}, _read)
            with op.step() as step:
                step.run_tool("fs", "readFile", {"path": "b"}, _read)
                step.run_tool("fs", "readFile", {"path": "c"}, _read)
        got = [(e.callIndex, e.stepIndex) for e in seen.of("after_tool_call")]
    # callIndex counts the tool's calls across the operation (LobeHub), not within the step
    assert got == [(1, 0), (2, 1), (3, 1)]


def test_each_tool_event_carries_its_own_values_in_its_own_fields() -> None:
    # The 3rd call of fs/readFile, made in the 2nd step: every field of the same type holds a
    # value no other field holds, so two fields swapped where the payload is built fail here.
    with pipeline() as pipe:
        seen = capture_events(pipe.oh, events=["before_tool_call", "after_tool_call"])
        with pipe.oh.operation("agent", session_id="s-9") as op:
            with op.step() as first:
                first.run_tool("fs", "readFile", {"path": "a"}, _read)
                first.run_tool("fs", "readFile", {"path": "b"}, _read)
            with op.step() as second:
                second.run_tool("fs", "readFile", {"path": "c"}, _read, tool_call_id="call-3")
                message_id = second.message_id
            operation_id = op.operation_id
        events = [e for e in seen.events if getattr(e, "toolCallId", None) == "call-3"]
    assert sorted(e.event for e in events) == ["after_tool_call", "before_tool_call"]
    for event in events:
        assert event.model_dump(
            include={
                "toolCallId",
                "identifier",
                "apiName",
                "callIndex",
                "stepIndex",
                "assistantMessageId",
                "operationId",
                "sessionKey",
            }
        ) == {
            "toolCallId": "call-3",
            "identifier": "fs",
            "apiName": "readFile",
            "callIndex": 3,
            "stepIndex": 1,
            "assistantMessageId": message_id,
            "operationId": operation_id,
            "sessionKey": "s-9",
        }


def test_an_observer_sees_the_arguments_as_they_were_when_the_call_ended() -> None:
    with pipeline() as pipe:
        seen = capture_events(pipe.oh, events=["after_tool_call"])
        args = {"path": "a.txt"}
        with pipe.oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", args, _read)
            args["path"] = "changed after the call"  # the agent reuses its dict
        (event,) = seen.of("after_tool_call")
    assert event.args == {"path": "a.txt"}


def test_an_observer_sees_a_mocked_result_as_mocked() -> None:
    mock = {
        "id": "mock",
        "type": "beforeToolCall",
        "handler": lambda e: e.mock(ToolResult(content="mocked", state={"k": 1})),
    }
    with pipeline(hooks=[mock]) as pipe:
        seen = capture_events(pipe.oh, events=["after_tool_call"])
        with pipe.oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", {"path": "a"}, _read)
        (event,) = seen.of("after_tool_call")
    assert (event.mocked, event.content, event.result.state) == (True, "mocked", {"k": 1})


def test_an_observer_sees_a_failed_results_every_field_and_its_extras() -> None:
    with pipeline() as pipe:
        seen = capture_events(pipe.oh, events=["after_tool_call"])
        with (
            pipe.oh.operation("agent") as op,
            op.step() as step,
            step.tool_call("db", "query", {"sql": "select 1"}) as call,
        ):
            failed = ToolResult(content="no", success=False, error="locked", state={"k": 2})
            call.set_result(ToolResult.model_validate({**failed.model_dump(), "retry": 3}))
        (event,) = seen.of("after_tool_call")
    result = event.result
    assert (result.content, result.success, result.error, result.state) == (
        "no",
        False,
        "locked",
        {"k": 2},
    )
    assert result.model_extra == {"retry": 3}
    assert result.executionTime == event.executionTimeMs
    assert event.success is False


def test_the_agent_thread_never_waits_for_an_observer() -> None:
    release = threading.Event()
    entered = threading.Event()
    threads: list[str] = []

    def slow(event: Any) -> None:
        threads.append(threading.current_thread().name)
        entered.set()
        release.wait(5)

    watch = {"id": "slow", "type": "afterToolCall", "handler": slow, "timeout": 10}
    with pipeline(hooks=[watch]) as pipe:
        try:
            with pipe.oh.operation("agent") as op, op.step() as step:
                for _ in range(3):
                    step.run_tool("fs", "readFile", {"path": "a"}, _read)
            # the run ended while the first observer call is still blocked
            assert entered.wait(5)
            assert not release.is_set()
        finally:
            release.set()
    assert threads
    assert threading.current_thread().name not in threads
