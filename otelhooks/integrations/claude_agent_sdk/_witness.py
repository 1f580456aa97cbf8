"""Which tool calls ``hooks_for``'s ``PreToolUse`` callback judged, and on what arguments, so a
tool call that ran past its guards says so.

Two ways a call runs that no guard of ``hooks_for`` judged, both the application's own wiring and
both silent before: ``ClaudeAgentOptions.hooks`` is a plain dict, so ``{**hooks_for(oh),
"PreToolUse": [its own matcher]}`` drops the guard callback; and the CLI runs a call with the
arguments ``can_use_tool`` answered (``PermissionResultAllow(updated_input=...)``) or another
``PreToolUse`` callback rewrote (``updatedInput``), asking no ``PreToolUse`` callback again (the
CLI runs them all on the model's arguments). Neither can be seen before the call runs: the CLI
sends its ``PostToolUse`` after, with the arguments it ran, and that end is told where the
application sees it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from otelhooks._encoding import dumps

__all__ = ["PreToolUseWitness"]

_ENDS = frozenset({"PostToolUse", "PostToolUseFailure"})


def _digest(tool_input: Any) -> str:
    return hashlib.sha256(dumps(tool_input).encode("utf-8", "surrogatepass")).hexdigest()


class PreToolUseWitness:
    """The calls ``PreToolUse`` judged whose end has not come yet, each with the arguments its
    guards left (at most ``keep``: a denied call never ends, and the oldest are let go first).

    Example:
        >>> witness = PreToolUseWitness()
        >>> start = {"hook_event_name": "PreToolUse", "tool_use_id": "t1", "tool_input": {"a": 1}}
        >>> witness.note(start)
        >>> end = {**start, "hook_event_name": "PostToolUse", "tool_name": "X"}
        >>> witness.note(end) is None
        True
        >>> print(witness.note({**end, "tool_use_id": "t2"}))
        otelhooks: the X call t2 ran with no guard asked: ...
    """

    def __init__(self, keep: int = 10_000) -> None:
        self._judged: OrderedDict[str, str] = OrderedDict()
        self._keep = keep

    def note(self, payload: Mapping[str, Any]) -> str | None:
        """Record ``payload`` (the bridge's input); for the end of a call whose start was never
        judged, or that ran other arguments than its guards left, the message that says so."""
        event = payload.get("hook_event_name")
        use_id = str(payload.get("tool_use_id") or "")
        if not use_id:
            return None
        if event == "PreToolUse":
            self.judged(use_id, payload.get("tool_input"))
            return None
        if event not in _ENDS:
            return None
        judged = self._judged.pop(use_id, None)
        tool = str(payload.get("tool_name") or "tool")
        if judged is None:
            return (
                f"otelhooks: the {tool} call {use_id} ran with no guard asked: hooks_for's "
                "PreToolUse callback was not called for it (is it still in "
                "ClaudeAgentOptions.hooks['PreToolUse'], beside any callback of the "
                "application's own?)"
            )
        if judged != _digest(payload.get("tool_input")):
            return (
                f"otelhooks: the {tool} call {use_id} ran with arguments no guard judged: they "
                "were changed after hooks_for's PreToolUse (by can_use_tool's updated_input, or "
                "another PreToolUse callback's updatedInput), and the CLI asks no guard again"
            )
        return None

    def judged(self, use_id: str, tool_input: Any) -> None:
        """The arguments the guards of ``use_id`` left (the model's, or their rewrite)."""
        self._judged[use_id] = _digest(tool_input)
        self._judged.move_to_end(use_id)
        while len(self._judged) > self._keep:
            self._judged.popitem(last=False)
