"""The calls of a resumed run a person rejected (``RunState.reject``): the SDK answers the model
with its rejection message and never calls the tool's invoker, where otelhooks' hooks run, so
nothing else records them. :class:`~otelhooks.integrations.openai_agents.HookedRunner` tells
``on_tool_call_denied`` observers of each, decided by ``needs_approval``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agents import RunContextWrapper, ToolApprovalItem
from agents.tool import ToolOriginType

from otelhooks.integrations.openai_agents._guard import parse_args

__all__ = ["Rejected", "rejected"]

DEFAULT_REASON = "a person rejected the call (needs_approval)"


@dataclass(frozen=True)
class Rejected:
    """One call a person rejected: its tool, call id, arguments, the identifier of its
    matcher value (its MCP server's name, else its agent's) and the reason given."""

    tool: str
    call_id: str
    args: dict[str, Any]
    identifier: str
    reason: str


def rejected(asked: list[ToolApprovalItem], context: RunContextWrapper[Any]) -> Iterator[Rejected]:
    """The calls of ``asked`` (the run state's interruptions, read before the run) that
    ``context`` (the resumed run's) says were rejected."""
    for item in asked:
        name, call_id = item.tool_name or item.name, item.call_id
        if not name or not call_id:
            continue
        namespace = item.tool_namespace
        if context.is_tool_approved(name, call_id) is not False:
            continue
        message = context.get_rejection_message(name, call_id, tool_namespace=namespace)
        origin = item.tool_origin
        server = origin.mcp_server_name if origin is not None else None
        mcp = origin is not None and origin.type is ToolOriginType.MCP and server
        raw = item.arguments
        yield Rejected(
            tool=name,
            call_id=call_id,
            args=parse_args(raw) if isinstance(raw, str) else {},
            identifier=server if mcp and server else item.agent.name,
            reason=message or DEFAULT_REASON,
        )
