"""A recorded tool call's arguments reach the policy as ``json.loads`` reads their text, whichever
parser read it (pydantic-core's first, ``json.loads`` for what that one refuses), or as the text
itself when it is not JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from otelhooks import ToolCallEvent
from otelhooks.replay import recorded_events

TEXTS = [
    '{"cmd": "ls", "n": 1}',
    '{"s": "\\ud800 lone surrogate"}',  # json.loads reads it; pydantic-core refuses it
    '{"k": "\\udfff", "\\udc00": 1}',
    '{"n": NaN, "i": Infinity, "j": -Infinity}',
    '{"big": 123456789012345678901234567890, "e": 1e400, "t": 5e-324, "z": -0}',
    '{"f": 0.1, "g": 1.7976931348623157e308, "h": 1E5, "k": -0.0}',
    '{"a": 1, "a": 2}',
    '{"u": "\\u0000\\u2028 \\ud83d\\ude00", "": [true, false, null]}',
    ' \t\n{"ws": []}\r\n',
    '{"deep": ' + "[" * 80 + "]" * 80 + "}",
]
NOT_JSON = [
    "rm -rf /",
    "{'single': 1}",
    '{"a": 1,}',
    '{"n": nan}',
    "\ufeff{}",
    '{"big": ' + "9" * 5000 + "}",
]


def _args(text: str) -> dict[str, Any]:
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "execute_tool exec",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "exec",
            "gen_ai.tool.call.arguments": text,
        },
    }
    event = next(iter(recorded_events([span])))
    payload = event.payload
    assert isinstance(payload, ToolCallEvent)
    args: dict[str, Any] = payload.args
    return args


@pytest.mark.parametrize("text", TEXTS)
def test_arguments_are_what_json_loads_reads(text: str) -> None:
    args = _args(text)
    # repr: NaN is not equal to itself; -0.0 and 0 differ in repr, not in ==
    if "deep" not in args:
        assert repr(args) == repr(json.loads(text))
        return
    node, depth = args["deep"], 1  # nested past 64 levels: what is deeper is kept as its text
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert (depth, node) == (64, "[" * 17 + "]" * 17)


@pytest.mark.parametrize("text", NOT_JSON)
def test_text_that_json_loads_refuses_reaches_the_policy_as_text(text: str) -> None:
    assert _args(text) == {"input": text}
