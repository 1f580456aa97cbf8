"""A stdio MCP server whose JSON reader matches member names ignoring case, as Go's
``encoding/json`` does (``Method``, ``PARAMS``, ``Name``, ``params`` with a long s all fill the
field; the last one wins): the servers built on it (mcp-go, for one) run the call such a frame
names. Each ``tools/call`` it runs is appended to ``MCP_TEST_LOG`` (tool and arguments); each
message of a batch is answered on its own line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "testsrv", "version": "1"},
}
TOOLS = ("add", "shell", "write_note")


def member(obj: Any, name: str) -> Any:
    """``obj[name]`` as a case-insensitive reader finds it: the last key equal ignoring case."""
    found = None
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key.casefold() == name:
                found = value
    return found


def result(msg: Any) -> dict[str, Any] | None:
    method = member(msg, "method")
    if method == "initialize":
        return INIT
    if method == "tools/list":  # the gateway lists before it judges a call
        return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    if method != "tools/call":
        return None
    params = member(msg, "params") or {}
    tool, args = member(params, "name"), member(params, "arguments") or {}
    if isinstance(args, dict):  # the tool's struct reads its fields the same way
        args = {name.casefold(): member(args, name.casefold()) for name in args}
    with open(os.environ["MCP_TEST_LOG"], "a") as log:
        log.write(json.dumps({"tool": tool, "args": args}) + "\n")
    return {"content": [{"type": "text", "text": f"ran {tool}"}]}


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        value = json.loads(line)
        for msg in value if isinstance(value, list) else [value]:
            answer, request_id = result(msg), member(msg, "id")
            if answer is not None and request_id is not None:
                frame = {"jsonrpc": "2.0", "id": request_id, "result": answer}
                out.write(json.dumps(frame).encode() + b"\n")
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
