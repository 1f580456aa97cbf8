"""What keeps the hot path cheap keeps the rules: one behaviour per test.

Cached, ordered matching; no end event queued when no hook matches it; a payload's builder
released once built; the arguments' fingerprint.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any

from conftest import Recorder, hook

from otelhooks import HookEvent, HookRegistry, HookSpanProcessor
from otelhooks._fingerprint import fnv1a_64
from otelhooks._live import LiveEvent
from otelhooks.events import StepEvent
from otelhooks.testing import TestPipeline

VALUES = ("fs/readFile", "readFile")


def _reference_fnv1a_64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _noop(event: Any) -> None:
    return None


def test_fnv1a_64_agrees_with_the_byte_loop_for_every_tail_length() -> None:
    data = bytes(range(256)) * 3
    for length in range(40):
        assert fnv1a_64(data[:length]) == _reference_fnv1a_64(data[:length])
    assert fnv1a_64(data) == _reference_fnv1a_64(data)


def test_any_match_agrees_with_match_for_global_and_operation_hooks() -> None:
    reg = HookRegistry()
    reg.register([{"id": "g", "type": "PostToolUse", "matcher": "readFile", "handler": _noop}])
    reg.register(
        [{"id": "o", "type": "before_tool_call", "matcher": "/^fs\\//", "handler": _noop}],
        operation_id="op-1",
    )
    for event in ("after_tool_call", "before_tool_call", "tool_result_persist"):
        for op in (None, "op-1", "op-2"):
            expected = bool(reg.match(event, VALUES, operation_id=op))
            assert reg.any_match(event, VALUES, operation_id=op) is expected


def test_matched_ids_lists_the_first_event_then_new_ids_in_registration_order() -> None:
    reg = HookRegistry()
    reg.register(
        [
            {"id": "after", "type": "after_tool_call", "handler": _noop},
            {"id": "both", "type": "before_tool_call", "handler": _noop},
            {"id": "before", "type": "before_tool_call", "matcher": "readFile", "handler": _noop},
        ]
    )
    reg.register([{"id": "both", "type": "after_tool_call", "handler": _noop}], operation_id="op")
    events = ("before_tool_call", "after_tool_call")
    assert reg.matched_ids(events, VALUES) == ("both", "before", "after")
    assert reg.matched_ids(events, VALUES, operation_id="op") == ("both", "before", "after")


def test_a_repeated_match_is_served_from_the_cache_in_registration_order() -> None:
    reg = HookRegistry()
    reg.register(
        [
            {"id": "regex", "type": "afterToolCall", "matcher": "^fs/", "handler": _noop},
            {
                "id": "names",
                "type": "PostToolUse",
                "matcher": "readFile|fs/readFile",
                "handler": _noop,
            },
            {"id": "all", "type": "after_tool_call", "handler": _noop},
        ]
    )
    first = [h.id for h in reg.match("after_tool_call", VALUES)]
    again = [h.id for h in reg.match("after_tool_call", VALUES)]
    assert first == again == ["regex", "names", "all"]


def test_an_end_event_no_hook_watches_is_not_queued(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        with step.tool_call("fs", "readFile", {}) as call:
            call.set_result("ok")
        assert not call.live.followups


def test_an_end_event_registered_during_the_call_still_fires(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    with (
        pipe.tracer.operation("agent") as op,
        op.step() as step,
        step.tool_call("fs", "readFile", {}) as call,
    ):
        pipe.oh.hooks.register([hook("late", "afterToolCall", recorder)])
        call.set_result("ok")
    pipe.oh.hooks.force_flush()
    assert [e.apiName for e in recorder.events] == ["readFile"]


def test_a_built_payload_no_longer_holds_its_builder() -> None:
    class Scope:
        def build(self) -> HookEvent:
            return StepEvent(stepIndex=0)

    scope = Scope()
    ref = weakref.ref(scope)
    live = LiveEvent("before_step", scope.build)
    payload = live.payload()
    del scope
    gc.collect()
    assert ref() is None
    assert live.payload() is payload


def test_the_observer_queue_is_bounded_to_4096_events_by_default() -> None:
    processor = HookSpanProcessor()
    assert processor.engine._dispatcher._observers.queue._max_queue_size == 4_096


def test_a_tool_name_seen_first_and_seen_again_lands_in_one_series_per_outcome(
    pipe: TestPipeline,
) -> None:
    from otelhooks import semconv as sc

    name = "seen-first-in-this-test"
    with pipe.tracer.operation("agent") as op, op.step() as step:
        for success in (True, True, False, False, True):
            with step.tool_call("fs", name, {}) as call:
                call.set_result("x", success=success)
    assert len(pipe.metric_points(sc.METRIC_TOOL_CALLS, {sc.GEN_AI_TOOL_NAME: name})) == 2
    ok = {sc.GEN_AI_TOOL_NAME: name, sc.ATTR_OUTCOME: "success"}
    failed = {sc.GEN_AI_TOOL_NAME: name, sc.ATTR_OUTCOME: "error", sc.ERROR_TYPE: "_OTHER"}
    assert pipe.metric_total(sc.METRIC_TOOL_CALLS, ok) == 3
    assert pipe.metric_total(sc.METRIC_TOOL_CALLS, failed) == 2
    assert pipe.metric_total(sc.METRIC_EXECUTE_TOOL_DURATION, failed) == 2
    assert len(pipe.metric_points(sc.METRIC_TOOL_CALLS, {sc.GEN_AI_TOOL_NAME: name})) == 2
    (point,) = pipe.metric_points(sc.METRIC_TOOL_CALLS, ok)
    assert dict(point.attributes or {}) == {
        sc.GEN_AI_AGENT_NAME: "agent",
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_TYPE: "function",
        sc.ATTR_OUTCOME: "success",
    }


def test_tools_taking_turns_are_answered_from_their_plans_without_testing_a_prefix() -> None:
    reg = HookRegistry()
    reg.register(
        [
            {"id": "fs", "type": "before_tool_call", "matcher": "^fs/", "handler": _noop},
            {"id": "db", "type": "before_tool_call", "matcher": "^db/", "handler": _noop},
            {"id": "all", "type": "before_tool_call", "handler": _noop},
        ]
    )
    fs, db = ("fs/readFile", "readFile"), ("db/query", "query")
    for values in (fs, db):  # each gets its plan
        reg.intercepts("before_tool_call", values)
    tested: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "startswith":
            tested.append(event)

    found = []
    sys.setprofile(profile)
    try:
        for values in (fs, db, fs, db):  # equal tuples of their own, as each call asks
            found.append(reg.intercepts("before_tool_call", tuple(list(values))).matched)
    finally:
        sys.setprofile(None)
    assert found == [("fs", "all"), ("db", "all")] * 2
    assert tested == []
