"""A replayed payload is the chain's own (built from its span for one chain): the hooks get its
values, the chain keeps the copy it compares with, and nothing is assigned to the payload that
the hooks leave as it was. An in-place change is judged as live judges it, on a caller's payload.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from pydantic import BaseModel

from otelhooks import Block, HooksEngine
from otelhooks.events import ToolCallEvent, ToolResultPersistEvent
from otelhooks.replay import recorded_events, replay_events

_SETATTR = BaseModel.__setattr__.__code__


def _assignments(run: Callable[[], Any]) -> tuple[Any, int]:
    """What ``run`` returns, and how many times a pydantic model's ``__setattr__`` ran in it
    (seen by a profiler, nothing replaced)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code is _SETATTR:
            count += 1

    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, count


def _span(n: int, args: dict[str, Any], result: str) -> dict[str, Any]:
    """A tool call's span as ``read_recording`` gives it."""
    return {
        "traceId": "0" * 31 + "1",
        "spanId": f"{n + 2:016x}",
        "parentSpanId": f"{1:016x}",
        "name": "execute_tool query",
        "startTimeUnixNano": "1790000000000000000",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "query",
            "gen_ai.tool.call.id": f"call_{n}",
            "otelhooks.tool.identifier": "db",
            "gen_ai.tool.call.arguments": json.dumps(args),
            "otelhooks.tool.outcome": "success",
            "gen_ai.tool.call.result": result,
        },
        "status": {},
    }


def _agent() -> dict[str, Any]:
    """The calls' parent: the agent and operation they inherit (no event of its own)."""
    return {
        "traceId": "0" * 31 + "1",
        "spanId": f"{1:016x}",
        "name": "run a",
        "attributes": {
            "gen_ai.agent.name": "a",
            "otelhooks.operation.id": "op_1",
        },
        "status": {},
    }


def _allow(event: Any) -> None:
    return None


def _keep(event: Any) -> Any:
    return event  # the kernel's contract: the payload unchanged


def test_a_replayed_call_and_result_that_hooks_allow_are_assigned_nothing() -> None:
    engine = HooksEngine(
        [
            {"id": "a", "type": "beforeToolCall", "handler": _allow},
            {"id": "b", "type": "beforeToolCall", "handler": _allow},
            {"id": "r", "type": "tool_result_persist", "intercept": True, "handler": _keep},
        ]
    )
    spans = [_span(n, {"n": n, "opts": {"deep": [n]}}, "rows") for n in range(3)]
    events = list(recorded_events([*spans, _agent()]))

    outcomes, assigned = _assignments(lambda: list(replay_events(engine, events)))

    assert [(o.recorded.event, o.now.action, o.matched) for o in outcomes] == [
        ("before_tool_call", "allow", ["a", "b"]),
        ("tool_result_persist", "allow", ["r"]),
    ] * 3
    assert assigned == 0


def test_a_tool_payload_gives_the_kernels_names_without_an_assignment() -> None:
    args = {"path": "a.txt"}
    built, assigned = _assignments(
        lambda: ToolCallEvent(toolCallId="c", identifier="fs", apiName="read", args=args)
    )
    assert assigned == 0
    assert built.toolInput is built.args
    assert built.args == args
    assert (built.toolName, built.runId) == ("read", None)
    given = ToolCallEvent(
        toolCallId="c",
        identifier="fs",
        apiName="read",
        operationId="op",
        toolName="Read",
        toolInput={"file_path": "b.txt"},
    )
    assert (given.toolName, given.toolInput, given.runId) == ("Read", {"file_path": "b.txt"}, "op")
    assert ToolCallEvent(toolCallId="c", identifier="", apiName="x", operationId="op").runId == "op"


def _deep_path(event: Any) -> None:
    event.args["opts"]["deep"].append("hook")  # in place, deep inside


def _seen(event: Any) -> Any:
    if event.args["opts"]["deep"][-1] != "hook":
        return Block("the change made in place before me was not handed on")
    return None


def _spoil_then_fail(event: Any) -> None:
    event.args["n"] = "spoiled"
    raise RuntimeError("failed after changing its arguments")


def _not_spoiled(event: Any) -> Any:
    return Block("spoiled") if event.args["n"] == "spoiled" else None


def _redact_in_place(event: Any) -> Any:
    event.result["content"] = "[REDACTED]"
    return event


def _outcomes_of_both_roads() -> Iterator[tuple[Any, Any, Any]]:
    engine = HooksEngine(
        [
            {"id": "deep", "type": "beforeToolCall", "handler": _deep_path},
            {"id": "seen", "type": "beforeToolCall", "handler": _seen},
            {"id": "spoil", "type": "beforeToolCall", "handler": _spoil_then_fail},
            {"id": "clean", "type": "beforeToolCall", "handler": _not_spoiled},
            {"id": "redact", "type": "tool_result_persist", "intercept": True,
             "handler": _redact_in_place},
        ]
    )  # fmt: skip
    spans = [_span(0, {"n": 0, "opts": {"deep": [0]}}, "password=x"), _agent()]
    for event, outcome in zip(
        recorded_events(spans), replay_events(engine, recorded_events(spans)), strict=True
    ):
        # live's road: a caller's payload, whose values are the caller's own, the same chain
        payload = event.build()
        field = "args" if event.event == "before_tool_call" else "result"
        own, given = getattr(payload, field), payload.model_dump()[field]
        verdict = engine.dry_run(event.event, payload, inline=True)
        yield outcome, verdict, (own, given)


def test_an_in_place_change_replayed_is_judged_as_on_a_callers_payload() -> None:
    (call, call_live, call_own), (persist, persist_live, persist_own) = _outcomes_of_both_roads()

    assert call.now.action == "rewrite"
    assert call.now.by == ("deep",)
    assert call.diff == [
        {"path": "args.opts.deep", "op": "replace", "from": [0], "to": [0, "hook"]}
    ]
    assert call.errors == ["spoil: RuntimeError: failed after changing its arguments"]
    assert [s.outcome for s in call.steps] == ["rewritten", "ok", "error", "ok"]
    assert (call_live.rewritten_by, call_live.errors, call_live.blocked) == (
        ["deep"],
        call.errors,
        False,
    )
    assert call_live.payload.args == {"n": 0, "opts": {"deep": [0, "hook"]}}
    assert call_own[0] == call_own[1]  # the caller's arguments are as it gave them

    assert persist.now.action == "rewrite"
    assert persist.now.by == ("redact",)
    assert persist.diff == [
        {"path": "result.content", "op": "replace", "from": "password=x", "to": "[REDACTED]"}
    ]
    assert persist_live.rewritten_by == ["redact"]
    assert persist_live.payload.result["content"] == "[REDACTED]"
    assert persist_own[0] == persist_own[1]
    assert isinstance(persist_live.payload, ToolResultPersistEvent)


def test_arguments_recorded_as_a_structure_are_the_payloads_own() -> None:
    # Another instrumentation's span may carry the arguments as a map (OTLP kvlistValue) or a
    # list, which the reader gives as the span's own dict or list: a hook changing them in
    # place changes the payload's, never the span's, and the diff starts from the recording.
    engine = HooksEngine([{"id": "deep", "type": "beforeToolCall", "handler": _deep_anywhere}])
    span = _span(0, {}, "rows")
    recorded = {"n": 0, "opts": {"deep": [0]}}
    span["attributes"]["gen_ai.tool.call.arguments"] = recorded
    listed = _span(1, {}, "rows")
    listed["attributes"]["gen_ai.tool.call.arguments"] = [{"opts": {"deep": [1]}}]

    call, _, other, _ = replay_events(engine, recorded_events([span, listed, _agent()]))

    assert call.now.action == "rewrite"
    assert call.diff == [
        {"path": "args.opts.deep", "op": "replace", "from": [0], "to": [0, "hook"]}
    ]
    assert recorded == {"n": 0, "opts": {"deep": [0]}}
    assert other.now.action == "rewrite"
    assert other.diff == [
        {
            "path": "args.input",
            "op": "replace",
            "from": [{"opts": {"deep": [1]}}],
            "to": [{"opts": {"deep": [1, "hook"]}}],
        }
    ]
    assert listed["attributes"]["gen_ai.tool.call.arguments"] == [{"opts": {"deep": [1]}}]


def _deep_anywhere(event: Any) -> None:
    target = event.args["input"][0] if "input" in event.args else event.args
    target["opts"]["deep"].append("hook")
