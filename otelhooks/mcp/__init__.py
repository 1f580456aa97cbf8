"""The MCP gateway: otelhooks' hooks and spans for any MCP client and any MCP server.

Run it from the command line (``otelhooks mcp -- <server command>`` for stdio,
``otelhooks mcp --listen 127.0.0.1:PORT --upstream URL`` for Streamable HTTP), or embed it:
a :class:`McpGateway` turns each JSON-RPC frame that crosses a session into what to send on;
:func:`run_stdio` and :class:`McpHttpProxy` (an ASGI application) move the frames.
See ``docs/mcp.md``.

Example:
    >>> from opentelemetry.trace import NoOpTracer
    >>> from otelhooks import HooksEngine
    >>> gateway = McpGateway(HooksEngine(), NoOpTracer(), name="files")
    >>> relay = gateway.session().from_client(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    >>> relay.to_server
    [b'{"jsonrpc":"2.0","id":1,"method":"ping"}']
"""

from otelhooks.mcp._gateway import McpGateway, McpSession, Relay
from otelhooks.mcp._headers import UpstreamHeaders
from otelhooks.mcp._http import McpHttpProxy, run_http
from otelhooks.mcp._jsonrpc import Message, parse
from otelhooks.mcp._spans import span_name
from otelhooks.mcp._stdio import run_stdio

__all__ = [
    "McpGateway",
    "McpHttpProxy",
    "McpSession",
    "Message",
    "Relay",
    "UpstreamHeaders",
    "parse",
    "run_http",
    "run_stdio",
    "span_name",
]
