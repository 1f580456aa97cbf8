"""The copy of a call's arguments an intercept chain keeps guards against Python code: a chain of
hooks otelhooks runs itself (a command, a webhook, an approval, a budget), which read the
payload or send a copy of it, copies nothing of the caller's arguments; a Python hook's in-place
change is still told, in the same chain.
"""

from __future__ import annotations

from typing import Any

import pytest

from otelhooks import HooksEngine
from otelhooks.events import ToolCallEvent

pytestmark = pytest.mark.timeout(60)


class Tally:
    """An argument of an in-process tool that says when it is deep-copied."""

    def __init__(self, copies: list[int]) -> None:
        self.copies = copies

    def __deepcopy__(self, memo: dict[int, Any]) -> Tally:
        self.copies.append(1)
        return Tally(self.copies)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tally)

    __hash__ = None  # type: ignore[assignment]


def _call(copies: list[int]) -> tuple[ToolCallEvent, Tally]:
    tally = Tally(copies)
    return ToolCallEvent(toolCallId="c", identifier="", apiName="x", args={"t": tally}), tally


def _bump(event: Any) -> None:
    event.args["n"] = 2  # in place


def test_a_chain_of_commands_and_budgets_copies_none_of_the_callers_arguments() -> None:
    engine = HooksEngine(
        [
            {"id": "cmd", "type": "beforeToolCall", "command": "exit 0"},
            {"id": "spend", "type": "beforeToolCall", "budget": {"operation_usd": 5}},
        ]
    )
    copies: list[int] = []
    payload, tally = _call(copies)

    verdict = engine.dry_run("before_tool_call", payload, inline=True)

    assert (verdict.blocked, verdict.rewritten_by, verdict.errors) == (False, [], [])
    assert [s.outcome for s in verdict.steps] == ["ok", "ok"]
    assert copies == []
    assert verdict.payload.args["t"] is tally


def test_a_python_hook_in_the_same_chain_is_watched_and_its_change_is_a_rewrite() -> None:
    engine = HooksEngine(
        [
            {"id": "cmd", "type": "beforeToolCall", "command": "exit 0"},
            {"id": "py", "type": "beforeToolCall", "handler": _bump},
        ]
    )
    copies: list[int] = []
    payload, tally = _call(copies)
    own = payload.args

    verdict = engine.dry_run("before_tool_call", payload, inline=True)

    assert verdict.rewritten_by == ["py"]
    assert verdict.payload.args["n"] == 2
    assert copies  # the caller's argument, copied for the Python hook
    assert own == {"t": tally}  # the caller's own arguments are as it gave them


def _deep(event: Any) -> None:
    event.args["rows"][1][0]["v"] = "changed"  # in place, three containers down


@pytest.mark.parametrize(
    ("args", "hook", "field"),
    [
        ({"n": 1, "path": "a", "ok": True, "x": None, "f": 1.5}, _bump, "n"),  # scalars only
        ({"rows": ["head", [{"v": "kept"}]], "n": 1}, _deep, "rows"),  # a list holding a list
    ],
    ids=["scalars-only", "nested-in-a-list"],
)
def test_each_shape_of_arguments_is_copied_for_the_hook_and_its_change_told(
    args: dict[str, Any], hook: Any, field: str
) -> None:
    """A dict of scalars only is copied in one call, a container holding others item by item:
    either way the hook's in-place change is its rewrite and the caller's values stay."""
    engine = HooksEngine(
        [
            {"id": "first", "type": "beforeToolCall", "handler": lambda event: None},
            {"id": "changer", "type": "beforeToolCall", "handler": hook},
            {"id": "last", "type": "beforeToolCall", "handler": lambda event: None},
        ]
    )
    payload = ToolCallEvent(toolCallId="c", identifier="", apiName="x", args=args)
    before = repr(args)

    verdict = engine.dry_run("before_tool_call", payload, inline=True)

    assert verdict.rewritten_by == ["changer"]
    assert [s.outcome for s in verdict.steps] == ["ok", "rewritten", "ok"]
    assert verdict.payload.args[field] != args[field]
    assert repr(args) == before  # nothing of the caller's arguments changed
