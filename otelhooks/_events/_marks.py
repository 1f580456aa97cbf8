"""The marks the hooks of a ``before_tool_call`` chain leave on its payload."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otelhooks._events._payloads import ToolResult

__all__ = ["ToolCallMarks"]


class ToolCallMarks:
    """What the hooks of a ``before_tool_call`` chain did to its payload: the accepted mock and
    its hook, a deny and its reason, the hook running now, and ``closed`` once the chain decided
    (a late mock or deny no longer counts). A copy of a payload made by the chain starts with
    fresh marks."""

    __slots__ = ("closed", "current_hook", "denied", "deny_reason", "mock", "mocked_by")

    def __init__(self) -> None:
        self.mock: ToolResult | None = None
        self.mocked_by: str | None = None
        self.closed = False
        self.current_hook: str | None = None
        self.denied = False
        self.deny_reason: str | None = None

    def copy(self) -> ToolCallMarks:
        """The same marks, in an object of their own."""
        marks = ToolCallMarks()
        marks.mock, marks.mocked_by, marks.closed = self.mock, self.mocked_by, self.closed
        marks.current_hook, marks.denied = self.current_hook, self.denied
        marks.deny_reason = self.deny_reason
        return marks
