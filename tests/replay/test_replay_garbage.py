"""A replay pauses the cyclic garbage collector while it streams a recording, and still
collects the cycles a policy's hooks make, a bounded number of events later."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from otelhooks import HooksEngine
from otelhooks.events import ToolCallEvent
from otelhooks.replay import replay

CALLS = 12_000
# replay() collects the young generations once per this many events (before_tool_call and
# tool_result_persist: two per recorded tool call).
COLLECTED_PER = 5_000


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _recording(path: Path) -> Path:
    with path.open("w") as file:
        for first in range(0, CALLS, 500):
            spans = [
                {
                    "traceId": "ab" * 16,
                    "spanId": f"{n + 1:016x}",
                    "name": "execute_tool exec",
                    "kind": 1,
                    "startTimeUnixNano": "1",
                    "endTimeUnixNano": "2",
                    "status": {},
                    "attributes": [
                        _kv("gen_ai.operation.name", "execute_tool"),
                        _kv("gen_ai.tool.name", "exec"),
                        _kv("otelhooks.tool.identifier", "shell"),
                        _kv("gen_ai.tool.call.arguments", json.dumps({"n": n})),
                    ],
                }
                for n in range(first, first + 500)
            ]
            request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
            file.write(json.dumps(request) + "\n")
    return path


class _Cycle:
    """Garbage the moment the hook returns, freed only by the cyclic collector."""

    alive = 0
    peak = 0

    def __init__(self) -> None:
        self.me = self
        _Cycle.alive += 1
        _Cycle.peak = max(_Cycle.peak, _Cycle.alive)

    def __del__(self) -> None:
        _Cycle.alive -= 1


def test_cycles_a_hook_makes_are_collected_during_the_replay(tmp_path: Path) -> None:
    def cyclic(event: ToolCallEvent) -> None:
        _Cycle()

    engine = HooksEngine([{"id": "cyclic", "type": "beforeToolCall", "handler": cyclic}])
    _Cycle.alive = _Cycle.peak = 0
    try:
        report = replay([_recording(tmp_path / "calls.jsonl")], engine)
    finally:
        engine.shutdown(1.0)
    assert report.hooks["cyclic"].seen == CALLS
    assert report.events == 2 * CALLS
    # Without the collector at all every hook run's cycle would stay (12,000); with it, at
    # most the cycles of one stretch between two collections are alive at once.
    assert _Cycle.peak <= COLLECTED_PER // 2 + 1, _Cycle.peak
    assert gc.isenabled()  # given back as it was
    gc.collect()
    assert _Cycle.alive == 0


def test_a_collector_paused_by_the_caller_stays_paused(tmp_path: Path) -> None:
    engine = HooksEngine([{"id": "none", "type": "beforeToolCall", "handler": lambda e: None}])
    gc.disable()
    try:
        replay([_recording(tmp_path / "calls.jsonl")], engine)
        assert not gc.isenabled()
    finally:
        gc.enable()
        engine.shutdown(1.0)
