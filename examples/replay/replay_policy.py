"""The Python hooks of ``policy.yaml`` (the replay guide's example policy)."""

from __future__ import annotations

from typing import Any

from otelhooks.events import ToolCallEvent


def offline_calc(event: ToolCallEvent) -> None:
    """Answer every calculator call with a fixed result."""
    event.mock({"content": "42"})


def sandbox_reads(event: ToolCallEvent) -> dict[str, Any]:
    """Read files from ``sandbox/`` instead of the workspace."""
    return {"args": {**event.args, "path": f"sandbox/{event.args.get('path', '')}"}}
