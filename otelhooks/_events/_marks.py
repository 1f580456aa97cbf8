"""The marks the hooks of a ``before_tool_call`` chain leave on its payload."""

from __future__ import annotations

from typing import Any, overload

from otelhooks._events._tool_result import ToolResult

__all__ = ["MarksOnFirstRead", "ToolCallMarks"]


class ToolCallMarks:
    """What the hooks of a ``before_tool_call`` chain did to its payload: the accepted mock, a
    deny and its reason, and ``closed`` once the chain decided (a late mock or deny no longer
    counts). Which hook mocked is the one the chain just ran: a mock ends the chain. A copy of
    a payload made by the chain starts with fresh marks.

    The defaults are class attributes: every payload a chain holds gets marks, and most are
    never marked, so a new one sets nothing."""

    mock: ToolResult | None = None
    closed: bool = False
    denied: bool = False
    deny_reason: str | None = None


class MarksOnFirstRead:
    """A payload's :class:`ToolCallMarks`, made on its first read and then kept in the
    instance's ``__dict__``, where the instance's own value wins over this (non-data)
    descriptor: ``functools.cached_property`` without the lock it takes on every first read on
    Python 3.11 (each payload a chain holds is read once). An assignment replaces the marks.
    The model lists it in ``ignored_types``, so pydantic leaves it alone as it leaves
    ``functools``' own descriptors."""

    __slots__ = ("name",)

    def __init__(self) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> MarksOnFirstRead: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> ToolCallMarks: ...
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        marks = instance.__dict__[self.name] = ToolCallMarks()
        return marks
