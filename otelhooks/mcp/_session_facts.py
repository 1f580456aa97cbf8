"""What an MCP session's handshake says of its two ends.

The ``initialize`` request names the client (the agent that executes the tools: the
``gen_ai.agent.name`` of its ``tools/call`` spans) and the protocol version it asks for; the
answer names the server (the ``<server>`` half of ``<server>/<tool>`` matchers) and the version
agreed. This module's one job is reading those facts, whatever shape a protocol version gives
them, so the gateway's routing only stores them.
"""

from __future__ import annotations

from typing import Any, Final

from otelhooks.mcp._jsonrpc import Message

__all__ = ["client_facts", "server_facts"]

# protocol 2026-07-28: ``server/discover`` (and every result) names the server in ``_meta``
_SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


def client_facts(msg: Message) -> tuple[str | None, str | None]:
    """The ``initialize`` request's protocol version and client name (``None``: not given)."""
    version = msg.params.get("protocolVersion")
    info = msg.params.get("clientInfo")
    name = info.get("name") if isinstance(info, dict) else None
    return (
        version if isinstance(version, str) else None,
        name if isinstance(name, str) and name else None,
    )


def server_facts(msg: Message) -> tuple[str | None, str | None] | None:
    """The ``initialize`` answer's protocol version and server name (``None`` each: not given);
    ``None`` for an answer that is no result (an error)."""
    result: Any = msg.data.get("result") if isinstance(msg.data, dict) else None
    if not isinstance(result, dict):
        return None
    version = result.get("protocolVersion")
    info = result.get("serverInfo")
    meta = result.get("_meta")
    if not isinstance(info, dict) and isinstance(meta, dict):
        # a guard matching ``<server>/<tool>`` must see the same name either way
        info = meta.get(_SERVER_INFO_META)
    name = info.get("name") if isinstance(info, dict) else None
    return (version if isinstance(version, str) else None, str(name) if name else None)
