"""What a tool call returned: the ``result`` of ``after_tool_call`` payloads, and what a
``before_tool_call`` hook's mock supplies instead."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ToolResult"]


class ToolResult(BaseModel):
    """LobeHub's structured tool result (``content``, ``success``, ``executionTime``, ``state``)."""

    model_config = ConfigDict(extra="allow")

    content: str = ""
    success: bool = True
    executionTime: float | None = None
    error: str | None = None
    state: dict[str, Any] | None = None
