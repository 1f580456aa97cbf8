"""A scripted Anthropic Messages API on 127.0.0.1 (streamed SSE), enough for Claude Code to call
one MCP tool: it waits for MCP servers (``WaitForMcpServers``) until the tool is offered, calls
it once, then ends the turn. Every request body is kept in ``requests``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)


def _message(block: dict[str, Any], stop: str) -> bytes:
    start = {"type": "text", "text": ""} if block["type"] == "text" else {**block, "input": {}}
    if block["type"] == "text":
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


class FakeAnthropic:
    def __init__(self, tool: str, args: dict[str, Any]) -> None:
        self.tool, self.args = tool, args
        self.requests: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any]) -> bytes:
        self.requests.append(body)
        results = [
            c.get("tool_use_id")
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for c in m["content"]
            if isinstance(c, dict) and c.get("type") == "tool_result"
        ]
        tools = [t.get("name") for t in body.get("tools") or []]
        if "toolu_mcp" in results:
            return _message({"type": "text", "text": "done"}, "end_turn")
        # Claude Code 2.1.3xx defers MCP tools behind ToolSearch: once a search returned the
        # tool's schema, it is callable.
        if self.tool in tools or self.tool in self._searched(body):
            use = {"type": "tool_use", "id": "toolu_mcp", "name": self.tool, "input": self.args}
            return _message(use, "tool_use")
        if "ToolSearch" in tools and len(results) < 10:
            search = {"type": "tool_use", "id": f"toolu_search{len(results)}",
                      "name": "ToolSearch", "input": {"query": f"select:{self.tool}"}}  # fmt: skip
            return _message(search, "tool_use")
        if "WaitForMcpServers" in tools and len(results) < 10:
            wait = {"type": "tool_use", "id": f"toolu_wait{len(results)}",
                    "name": "WaitForMcpServers", "input": {}}  # fmt: skip
            return _message(wait, "tool_use")
        return _message({"type": "text", "text": "no tool"}, "end_turn")

    @staticmethod
    def _searched(body: dict[str, Any]) -> str:
        """The text of the ToolSearch results in the conversation so far."""
        found = [
            json.dumps(c.get("content"))
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for c in m["content"]
            if isinstance(c, dict)
            and c.get("type") == "tool_result"
            and str(c.get("tool_use_id", "")).startswith("toolu_search")
        ]
        return "".join(found)

    def tool_result(self) -> dict[str, Any] | None:
        """The result Claude Code sent back for the MCP tool call."""
        for body in self.requests:
            for m in body.get("messages", []):
                for c in m.get("content") if isinstance(m.get("content"), list) else []:
                    if isinstance(c, dict) and c.get("tool_use_id") == "toolu_mcp":
                        return c
        return None


@contextmanager
def fake_anthropic(tool: str, args: dict[str, Any]) -> Iterator[tuple[FakeAnthropic, str]]:
    api = FakeAnthropic(tool, args)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.loads(raw or b"{}")
            if "count_tokens" in self.path:
                out, kind = json.dumps({"input_tokens": 10}).encode(), "application/json"
            else:
                out, kind = api.answer(body), "text/event-stream"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
