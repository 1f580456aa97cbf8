"""An MCP server written with the SDK's server API, for the gateway tests.

``python mcp_server_app.py stdio`` or ``python mcp_server_app.py http PORT``. Every tool call is
appended to the file named by ``MCP_TEST_LOG`` (one JSON line: tool and arguments), so a test
sees what reached the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import SamplingMessage, TextContent, ToolAnnotations, ToolListChangedNotification

app = MCPServer("testsrv")


def _record(tool: str, **args: object) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "args": args, "pid": os.getpid()}) + "\n")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    _record("add", a=a, b=b)
    return a + b


@app.tool(structured_output=False)
def write_note(text: str) -> str:
    """Write a note (a side effect the tests can see)."""
    _record("write_note", text=text)
    return f"noted: {text}"


@app.tool(
    structured_output=False,
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
)
def lookup(key: str) -> str:
    """Read a value (annotated read-only, closed world)."""
    _record("lookup", key=key)
    return f"value of {key}"


@app.tool(
    structured_output=False,
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True),
)
def purge(key: str) -> str:
    """Delete a value (annotated destructive)."""
    _record("purge", key=key)
    return f"purged {key}"


@app.tool(structured_output=False)
def rm(path: str, force: bool = False) -> str:
    """Remove a path (the SDK validates in pydantic's lax mode: ``"true"`` is ``True``)."""
    _record("rm", path=path, force=force)
    return f"removed {path}" + (" (forced)" if force else "")


@app.tool(structured_output=False)
def wipe(path: str, force: bool = True) -> str:
    """Wipe a path, forced unless told otherwise (a default the client need not send)."""
    _record("wipe", path=path, force=force)
    return f"wiped {path}" + (" (forced)" if force else "")


@app.tool(structured_output=False)
async def slow(tag: str, seconds: float = 0.2) -> str:
    """Answer ``tag`` after ``seconds``."""
    _record("slow", tag=tag)
    await asyncio.sleep(seconds)
    return tag


@app.tool(structured_output=False)
async def count(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times."""
    _record("count", steps=steps)
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return f"counted {steps}"


@app.tool(structured_output=False)
def auth_header(ctx: Context) -> str:
    """The Authorization header this call arrived with (HTTP only)."""
    _record("auth_header")
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None) or {}
    return str(headers.get("authorization", "<none>"))


@app.tool(structured_output=False)
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model (a server-initiated sampling request)."""
    _record("ask", question=question)
    message = SamplingMessage(role="user", content=TextContent(type="text", text=question))
    result = await ctx.session.create_message([message], max_tokens=16)
    return getattr(result.content, "text", "")


@app.tool(structured_output=False)
def fail(reason: str) -> str:
    """Fail with ``reason`` (the SDK answers a tool's exception with an ``isError`` result)."""
    _record("fail", reason=reason)
    raise ValueError(reason)


@app.tool(structured_output=False)
def check_token(token: str) -> str:
    """Refuse ``token`` with a JSON-RPC error (the SDK passes an ``MCPError`` on as one), its
    message and ``data`` quoting it."""
    _record("check_token", token=token)
    raise MCPError(-32001, f"bad token {token}", data={"token": token})


@app.tool(structured_output=False)
async def leak(secret: str, ctx: Context) -> str:
    """Tell the client ``secret`` while the call runs: in a progress message and in a log
    message (``notifications/message``), then answer."""
    _record("leak", secret=secret)
    await ctx.report_progress(1, 2, message=f"reading {secret}")
    await ctx.info(f"read {secret}")
    await ctx.log("warning", {"secret": secret})
    return "done"


@app.tool(structured_output=False)
def crash() -> str:
    """Die mid-call, as a broken server does."""
    _record("crash")
    os._exit(3)


def _toggle(path: str) -> str:
    """Toggle a path (``arm`` gives it a ``force`` argument)."""
    _record("toggle", path=path)
    return f"toggled {path}"


def _armed_toggle(path: str, force: bool = False) -> str:
    """Toggle a path, forced when told (lax validation: ``"true"`` is ``True``)."""
    _record("toggle", path=path, force=force)
    return f"toggled {path}" + (" (forced)" if force else "")


app.add_tool(_toggle, name="toggle", structured_output=False)


@app.tool(structured_output=False)
async def arm(ctx: Context) -> str:
    """Give ``toggle`` a ``force`` argument and say so (``notifications/tools/list_changed``,
    sent before this answer, on the request's own stream over HTTP)."""
    app.remove_tool("toggle")
    app.add_tool(_armed_toggle, name="toggle", structured_output=False)
    await ctx.session.send_notification(
        ToolListChangedNotification(), related_request_id=ctx.request_id
    )
    return "armed"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
