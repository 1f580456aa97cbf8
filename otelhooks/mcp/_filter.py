"""``tools/list``: what the gateway keeps of each tool, and filtering (opt-in, ``--filter-tools``).

:func:`listed_tools` reads the annotation kinds (``@read_only`` ...,
:func:`otelhooks._tool_kinds.annotation_kinds`) and the ``inputSchema`` of every tool a list
names: the gateway adds the kinds to the matcher values of that tool's calls, and judges their
arguments by the schema (the tables that keep them: :mod:`._listing`).

Filtering hides the tools a policy denies outright.

A tool is hidden when its ``before_tool_call`` chain, asked with :meth:`HooksEngine.adry_run`
(no side effect: nothing queued, control webhooks not called), blocks a call with no
arguments. That is exact for deny rules that look only at the tool (a matcher and a handler or
command that always blocks); a hook that judges the arguments is asked about an empty call, so
it may hide a tool it would allow with real arguments. That is why it is opt-in; the deny at
call time holds either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from otelhooks._engine import HooksEngine
from otelhooks._events import ToolCallEvent
from otelhooks._tool_kinds import annotation_kinds
from otelhooks.mcp._jsonrpc import Message, encode

__all__ = ["UNLISTED", "Listed", "filter_tools", "listed_tools"]

# a tool never listed, or listed without annotations: the specification's defaults
UNLISTED: Final = annotation_kinds(None)
# what the gateway keeps of a listed tool: its annotation kinds, inputSchema and outputSchema
Listed = tuple[tuple[str, ...], Any, Any]


def _tools(msg: Message) -> list[Any] | None:
    data = msg.data
    result = data.get("result") if isinstance(data, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    return tools if isinstance(tools, list) else None


def listed_tools(msg: Message) -> dict[str, Listed]:
    """The annotation kinds, ``inputSchema`` and ``outputSchema`` of each tool a ``tools/list``
    answer names."""
    listed: dict[str, Listed] = {}
    for tool in _tools(msg) or ():
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            annotations = tool.get("annotations")
            kinds = annotation_kinds(annotations if isinstance(annotations, Mapping) else None)
            listed[tool["name"]] = (kinds, tool.get("inputSchema"), tool.get("outputSchema"))
    return listed


async def filter_tools(engine: HooksEngine, msg: Message, server: str) -> bytes:
    """The ``tools/list`` answer ``msg`` without the tools the hooks deny outright (the
    original bytes when none is hidden)."""
    tools = _tools(msg)
    if tools is None:
        return msg.raw
    listed = listed_tools(msg)
    kept: list[Any] = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not await _denied(engine, server, name, listed[name][0]):
            kept.append(tool)
    if len(kept) == len(tools):
        return msg.raw
    data = msg.data
    result = data["result"]
    return encode({**data, "result": {**result, "tools": kept}})


async def _denied(engine: HooksEngine, server: str, tool: str, kinds: tuple[str, ...]) -> bool:
    values = (f"{server}/{tool}", tool, *kinds)
    if not engine.matches("before_tool_call", values):
        return False
    call = ToolCallEvent(toolCallId="tools/list", identifier=server, apiName=tool, args={})
    verdict = await engine.adry_run("before_tool_call", call, values=values)
    return verdict.blocked
