"""The calls of a run that a person is asked about (``needs_approval``): those a run pauses for
(``result.interruptions``) and those of a resumed run a person rejected (``RunState.reject``).
The SDK answers a rejected call itself and never calls the tool's invoker, where otelhooks'
hooks run, so nothing else records them.
:class:`~otelhooks.integrations.openai_agents.HookedRunner` tells ``on_tool_call_denied``
observers of each (decided by ``needs_approval``) and writes an ``otelhooks.tool_approval``
event on the step, as it writes one on the step that paused for each call it waits for. The
decision is read as the SDK reads it (by the call's namespace and pending item), from the
resumed run's context or, for a call of an agent used as a tool, from that agent's nested run's
(handed to the agent's hooks, which :func:`hook_agent` gives each clone)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import RunContextWrapper, ToolApprovalItem
from agents.tool import ToolOriginType

from otelhooks import _semconv as sc
from otelhooks.integrations.openai_agents._guard import parse_args
from otelhooks.integrations.openai_agents._mcp_servers import HookedMCPServer

__all__ = ["Decisions", "Rejected", "decided", "pending_event", "rejected_event"]

DEFAULT_REASON = "a person rejected the call (needs_approval)"


@dataclass(frozen=True)
class Rejected:
    """One call a person rejected: its tool, call id, arguments, the identifier of its
    matcher value (its MCP server's name, else its agent's), the reason given and its tool's
    ``tool_namespace`` (``None``: none)."""

    tool: str
    call_id: str
    args: dict[str, Any]
    identifier: str
    reason: str
    namespace: str | None = None


def _identifier(item: ToolApprovalItem) -> str:
    origin = item.tool_origin
    server = origin.mcp_server_name if origin is not None else None
    mcp = origin is not None and origin.type is ToolOriginType.MCP and server
    return server if mcp and server else item.agent.name


def _tool(item: ToolApprovalItem) -> str:
    """The call's tool as hooks name it: an MCP tool by its server's own name for it (the SDK
    may have given the model ``mcp_{server}__{tool}``, ``include_server_in_tool_names``)."""
    name = item.tool_name or item.name or ""
    origin = item.tool_origin
    if origin is None or origin.type is not ToolOriginType.MCP:
        return name
    for server in item.agent.mcp_servers:
        if isinstance(server, HookedMCPServer) and server.name == origin.mcp_server_name:
            return server.tool_named(name)
    return name


def _namespace(item: ToolApprovalItem) -> str | None:
    """The ``tool_namespace`` of the call's tool; ``None`` for none, and for the namespace the
    model calls a deferred tool in (``defer_loading``), which is the tool's own name, not one
    ``tool_namespace`` gave it."""
    namespace, name = item.tool_namespace, item.tool_name or item.name
    return namespace if namespace and namespace != name else None


def _named(name: str, namespace: str | None) -> str:
    """The tool's full name, as its ``execute_tool`` span's ``gen_ai.tool.name`` gives it."""
    return f"{namespace}.{name}" if namespace else name


def decided(
    asked: list[ToolApprovalItem], context: RunContextWrapper[Any]
) -> tuple[list[Rejected], list[ToolApprovalItem]]:
    """The calls of ``asked`` (the run state's interruptions, read before the run) that
    ``context`` (a resumed run's, or that of the nested run of an agent used as a tool) says
    were rejected, and those it holds no decision on (the others were approved)."""
    found: list[Rejected] = []
    undecided: list[ToolApprovalItem] = []
    for item in asked:
        name, call_id = item.tool_name or item.name, item.call_id
        if not name or not call_id:
            continue
        # asked as the SDK asks itself on resuming: by the call's namespace and its pending
        # item, not the bare name (which finds no decision of a namespaced tool's call)
        namespace = item.tool_namespace
        status = context.get_approval_status(
            name, call_id, tool_namespace=namespace, existing_pending=item
        )
        if status is None:
            undecided.append(item)
        if status is not False:
            continue
        message = context.get_rejection_message(
            name, call_id, tool_namespace=namespace, existing_pending=item
        )
        raw = item.arguments
        found.append(
            Rejected(
                tool=_tool(item),
                call_id=call_id,
                args=parse_args(raw) if isinstance(raw, str) else {},
                identifier=_identifier(item),
                reason=message or DEFAULT_REASON,
                namespace=_namespace(item),
            )
        )
    return found, undecided


def pending_event(item: ToolApprovalItem) -> dict[str, Any]:
    """The attributes of the ``otelhooks.tool_approval`` event of a call the run paused for."""
    name = _named(_tool(item), _namespace(item))
    return {
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_CALL_ID: item.call_id or "",
        sc.TOOL_MATCHER_VALUE: f"{_identifier(item)}/{name}",
        sc.APPROVAL_DECISION: "pending",
    }


def rejected_event(call: Rejected) -> dict[str, Any]:
    """The attributes of the ``otelhooks.tool_approval`` event of a call a person rejected."""
    name = _named(call.tool, call.namespace)
    return {
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_CALL_ID: call.call_id,
        sc.TOOL_MATCHER_VALUE: f"{call.identifier}/{name}",
        sc.APPROVAL_DECISION: "deny",
        sc.APPROVAL_REASON: call.reason,
    }


class Decisions:
    """The calls a resumed run's state asked a person about, until a context of the run says
    what was decided: the run's own (the first the SDK hands a callback, else the one it
    returns or raises with), or, for a call of an agent used as a tool (``Agent.as_tool``),
    whose decision the SDK keeps in that agent's nested run, the nested run's. A call is
    dropped once decided, so each rejection is told once."""

    def __init__(self, asked: list[ToolApprovalItem]) -> None:
        self.asked = asked
        self.context: RunContextWrapper[Any] | None = None

    def take(
        self, context: RunContextWrapper[Any] | None, agent: str | None = None, own: bool = True
    ) -> list[Rejected]:
        """The calls ``context`` (else the run's own last seen) says were rejected, and not told
        before. With ``agent``, only the calls of the agent so named, whose callback handed
        ``context``: a run's context is never asked about calls another run made (asking binds
        the call to it, and a call id the other run reused fails the question). ``own``:
        ``context`` is the run's own, not that of the nested run of an agent used as a tool."""
        if context is not None and own:
            self.context = context
        if agent is not None:
            asked = [item for item in self.asked if item.agent.name == agent]
        else:
            asked, context = self.asked, self.context
        if not asked or context is None:
            return []
        found, undecided = decided(asked, context)
        settled = {id(item) for item in asked} - {id(item) for item in undecided}
        self.asked = [item for item in self.asked if id(item) not in settled]
        return found
