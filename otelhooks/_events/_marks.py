"""The marks the hooks of a ``before_tool_call`` chain leave on its payload."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otelhooks._events._payloads import ToolResult

__all__ = ["ToolCallMarks"]


class ToolCallMarks:
    """What the hooks of a ``before_tool_call`` chain did to its payload: the accepted mock, a
    deny and its reason, and ``closed`` once the chain decided (a late mock or deny no longer
    counts). Which hook mocked is the one the chain just ran: a mock ends the chain. A copy of
    a payload made by the chain starts with fresh marks."""

    __slots__ = ("closed", "denied", "deny_reason", "mock")

    def __init__(self) -> None:
        self.mock: ToolResult | None = None
        self.closed = False
        self.denied = False
        self.deny_reason: str | None = None

    def copy(self) -> ToolCallMarks:
        """The same marks, in an object of their own."""
        marks = ToolCallMarks()
        marks.mock, marks.closed = self.mock, self.closed
        marks.denied, marks.deny_reason = self.denied, self.deny_reason
        return marks
