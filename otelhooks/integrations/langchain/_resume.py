"""A hooked LangGraph call resumed after its tool asked a person (``interrupt()``) runs only with
the arguments its tool had when it asked.

LangGraph runs the tool again from its start on resume, and the ``before_tool_call`` hooks judge
it again: a rewrite answering otherwise the second time would run what nobody was shown. The
handler remembers each paused call (by thread, LangGraph task namespace and tool call id: a new
input runs in a new task) and refuses a resumed call the hooks gave other arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from otelhooks.integrations.langchain._tool_run import ToolRun

__all__ = ["RESUMED_CHANGED", "PausedCalls"]

# calls paused and never resumed are forgotten oldest first
_MAX_PAUSED = 1024
RESUMED_CHANGED = (
    "the hooks gave this resumed call other arguments than its tool had when it asked a person "
    "(interrupt()): nobody was shown them"
)

_Key = tuple[str, str, str]


class PausedCalls:
    """The hooked calls of one handler whose tool asked a person, until they resume."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # key -> (the arguments the call came with, those its tool had)
        self._paused: dict[_Key, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._keys: dict[UUID, _Key] = {}  # each open hooked call's key

    def judge(self, run_id: UUID, tool: ToolRun, metadata: Mapping[str, Any]) -> None:
        """As the call starts, its hooks having decided: refuse it (``ToolCall.refuse``) when it
        resumes a paused call whose hooks gave the tool other arguments. Arguments the graph
        changed meanwhile (a person editing the call) are a new question for the hooks."""
        thread = str(metadata.get("thread_id", ""))
        key = (thread, str(metadata.get("langgraph_checkpoint_ns", "")), str(tool.tool_call_id))
        with self._lock:
            self._keys[run_id] = key
            asked = self._paused.pop(key, None)
        if asked is not None and tool.args == asked[0] and tool.call.args != asked[1]:
            tool.call.refuse(RESUMED_CHANGED)

    def done(self, run_id: UUID, tool: ToolRun, *, paused: bool) -> None:
        """The call ended: ``paused`` (its tool asked a person), remember what it had."""
        with self._lock:
            key = self._keys.pop(run_id, None)
            if key is None or not paused or not tool.call.should_run:
                return
            self._paused[key] = (dict(tool.args), dict(tool.call.args))
            while len(self._paused) > _MAX_PAUSED:
                del self._paused[next(iter(self._paused))]
