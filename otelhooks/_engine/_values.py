"""The values an event offers to hook matchers, derived from its payload.

The instrumentation knows them as it builds an event (a tool call's ``identifier/apiName``, an
operation's agent); callers that hold only a payload (the MCP gateway, replay, the Claude Code
bridge, ``hooks test``) derive them here by the same rule, so a matcher sees the same values
whichever road the event took.
"""

from __future__ import annotations

from otelhooks._events import HookEvent

__all__ = ["matcher_values", "tool_values"]


def tool_values(identifier: str, api: str, namespace: str | None = None) -> tuple[str, ...]:
    """What hook matchers compare for a call of ``identifier``'s tool ``api``: its
    ``identifier/apiName`` and ``apiName`` (the bare name when there is no identifier). A tool in
    a ``namespace`` (OpenAI Agents' ``tool_namespace``) is first named ``namespace.apiName``, so
    a matcher naming the namespace matches that namespace's tool only, and then by its bare
    name, which every matcher written before namespaces names it by.

    Example:
        >>> tool_values("cleaner", "delete_file", "fs")
        ('cleaner/fs.delete_file', 'fs.delete_file', 'cleaner/delete_file', 'delete_file')
    """
    bare = (f"{identifier}/{api}", api) if identifier else (api,)
    if not namespace:
        return bare
    name = f"{namespace}.{api}"
    return ((f"{identifier}/{name}", name) if identifier else (name,)) + bare


def matcher_values(payload: HookEvent) -> tuple[str, ...]:
    """What hook matchers compare for ``payload``.

    Rules, first that applies: a generic event's ``matcherValue``; a tool event's
    :func:`tool_values` (its ``toolNamespace`` too); a
    message's channel and target; a model call's model; the agent's id; else ``("*",)``.

    Example:
        >>> from otelhooks.events import ToolCallEvent
        >>> matcher_values(ToolCallEvent(toolCallId="c1", identifier="fs", apiName="rm"))
        ('fs/rm', 'rm')
    """
    data = payload.__dict__
    value = data.get("matcherValue")
    if isinstance(value, str) and value:
        return (value,)
    api = data.get("apiName")
    if isinstance(api, str) and api:
        identifier, namespace = data.get("identifier"), data.get("toolNamespace")
        return tool_values(
            identifier if isinstance(identifier, str) else "",
            api,
            namespace if isinstance(namespace, str) else None,
        )
    channel = data.get("channelId")
    if isinstance(channel, str) and channel:
        target = data.get("target")
        return (channel, target) if isinstance(target, str) and target else (channel,)
    for name in ("model", "agentId"):
        value = data.get(name)
        if isinstance(value, str) and value:
            return (value,)
    return ("*",)
