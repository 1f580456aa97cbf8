"""The copies an intercept chain hands its hooks (rule 2 of :mod:`otelhooks._dispatch._chain`):
a deep copy of the field a hook may rewrite, so what it changes in place can be told by a
comparison and never reaches the runtime's own objects; and a permissive hook's own copy of the
whole payload (rule 7)."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from otelhooks._events import HookEvent, ToolCallEvent
from otelhooks._events._marks import ToolCallMarks

__all__ = ["copied", "scratch_copy"]


def copied(value: Any) -> Any:
    """A deep copy of ``value`` for hooks, which may change it: JSON's containers copied here,
    at a third of ``deepcopy``'s cost (a tool call's args, once per chain:
    benchmarks/README.md), anything else by it. What cannot be copied, or whose copy is not
    equal to it (an in-process tool's lock, client or plain object; a value nested past the
    recursion limit), is ``value`` itself, so a tool's list argument beside it is still a copy."""
    try:
        return _copy(value)
    except RecursionError:
        return value


# JSON's scalars: immutable, so a copy holds them as they are.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    kind = type(value)
    # A container's shallow copy, then a copy of each container in it. Most tool calls'
    # arguments and results hold scalars only, which one C call tells: then the shallow copy
    # is the copy (benchmarks/README.md, "Replay, n-replay").
    if kind is dict:
        twin = value.copy()
        if _SCALARS.issuperset(map(type, value.values())):
            return twin
        for key, item in value.items():
            if type(item) not in _SCALARS:
                twin[key] = _copy(item)
        return twin
    if kind is list:
        twins = value.copy()
        if _SCALARS.issuperset(map(type, value)):
            return twins
        for index, item in enumerate(value):
            if type(item) not in _SCALARS:
                twins[index] = _copy(item)
        return twins
    if kind in _SCALARS:
        return value
    try:
        twin = deepcopy(value)
        # an object compared by identity (a plain class's): its copy would look changed by
        # every hook, and the tool would get the copy, not the caller's object
        return twin if bool(twin == value) else value
    except Exception:  # cannot be copied or compared
        return value


def scratch_copy(payload: HookEvent) -> HookEvent:
    """A copy a permissive hook may change, mock or deny freely: nothing of it reaches the
    payload the chain goes on with."""
    copy = payload.model_copy(deep=True)
    if isinstance(copy, ToolCallEvent):
        copy._marks = ToolCallMarks()
    return copy
