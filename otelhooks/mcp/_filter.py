"""``tools/list`` filtering: hide the tools a policy denies outright (opt-in, ``--filter-tools``).

A tool is hidden when its ``before_tool_call`` chain, asked with :meth:`HooksEngine.adry_run`
(no side effect: nothing queued, control webhooks not called), blocks a call with no
arguments. That is exact for deny rules that look only at the tool (a matcher and a handler or
command that always blocks); a hook that judges the arguments is asked about an empty call, so
it may hide a tool it would allow with real arguments. That is why it is opt-in; the deny at
call time holds either way.
"""

from __future__ import annotations

from typing import Any

from otelhooks._engine import HooksEngine
from otelhooks._events import ToolCallEvent
from otelhooks.mcp._jsonrpc import Message, encode

__all__ = ["filter_tools"]


async def filter_tools(engine: HooksEngine, msg: Message, server: str) -> bytes:
    """The ``tools/list`` answer ``msg`` without the tools the hooks deny outright (the
    original bytes when none is hidden)."""
    data = msg.data
    result = data.get("result") if isinstance(data, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return msg.raw
    kept: list[Any] = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not await _denied(engine, server, name):
            kept.append(tool)
    if len(kept) == len(tools):
        return msg.raw
    assert isinstance(result, dict)
    return encode({**data, "result": {**result, "tools": kept}})


async def _denied(engine: HooksEngine, server: str, tool: str) -> bool:
    values = (f"{server}/{tool}", tool)
    if not engine.matches("before_tool_call", values):
        return False
    call = ToolCallEvent(toolCallId="tools/list", identifier=server, apiName=tool, args={})
    verdict = await engine.adry_run("before_tool_call", call, values=values)
    return verdict.blocked
