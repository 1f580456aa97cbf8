"""An MCP server (the SDK's low-level server API, Streamable HTTP) that gives each session its
own tool list, as a server with per-user tool sets behind one endpoint does.

``python per_session_server.py http PORT``. ``rm``'s ``force`` is listed as a string to every
session, and run as one; ``arm`` makes it a boolean for its own session only (run in pydantic's
lax way: ``"true"`` is ``True``) and says so to that session
(``notifications/tools/list_changed``). Every call of ``rm`` is appended to ``MCP_TEST_LOG``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolListChangedNotification,
)

# the sessions (their Mcp-Session-Id) whose rm takes a boolean force
armed: set[str] = set()


def _session(ctx: Any) -> str:
    return str(ctx.request.headers.get("mcp-session-id"))


def _rm(force_type: str) -> Tool:
    properties = {"path": {"type": "string"}, "force": {"type": force_type}}
    return Tool(name="rm", input_schema={"type": "object", "properties": properties})


async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
    boolean = _session(ctx) in armed
    arm = Tool(name="arm", input_schema={"type": "object", "properties": {}})
    return ListToolsResult(tools=[_rm("boolean" if boolean else "string"), arm])


async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    if params.name == "arm":
        armed.add(_session(ctx))
        await ctx.session.send_notification(
            ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        return CallToolResult(content=[TextContent(type="text", text="armed")])
    args = params.arguments or {}
    force = args.get("force")
    if _session(ctx) in armed:
        force = force in (True, "true", "1", 1)
    with open(os.environ["MCP_TEST_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": "rm", "args": {"path": args.get("path"), "force": force}}))
        f.write("\n")
    return CallToolResult(content=[TextContent(type="text", text=f"removed, force={force!r}")])


app = Server("testsrv", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    uvicorn.run(
        app.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="error"
    )
