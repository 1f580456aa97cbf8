"""A Streamable HTTP MCP server that takes JSON-RPC batches (protocol 2025-03-26), as the
TypeScript SDK's does: a POST whose messages are all notifications or responses is answered
``202 Accepted`` with no body; requests are answered in one JSON body (a batch for a batch).
Each ``tools/call`` it runs is appended to ``MCP_TEST_LOG``. Run: ``batch_http_server.py PORT``."""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INIT = {
    "protocolVersion": "2025-03-26",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "testsrv", "version": "1"},
}
TOOLS = ("add", "write_note", "check_token")


def result(msg: dict[str, Any]) -> dict[str, Any]:
    if msg["method"] == "tools/list":  # the gateway lists before it judges a call
        return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    if msg["method"] != "tools/call":
        return INIT if msg["method"] == "initialize" else {}
    params = msg.get("params", {})
    with open(os.environ["MCP_TEST_LOG"], "a") as log:
        log.write(json.dumps({"tool": params.get("name"), "args": params.get("arguments")}) + "\n")
    return {"content": [{"type": "text", "text": f"ran {params.get('name')}"}]}


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    """The answer to ``msg``: ``check_token`` refuses its token with a JSON-RPC error."""
    params = msg.get("params", {})
    if msg["method"] == "tools/call" and params.get("name") == "check_token":
        token = params.get("arguments", {}).get("token")
        error = {"code": -32001, "message": f"bad token {token}", "data": {"token": token}}
        request_id = None if params.get("arguments", {}).get("null_id") else msg["id"]
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result(msg)}


def _status(body: Any) -> int:
    """The HTTP status of the answer to ``body``: a ``check_token`` call's ``http`` argument
    (a server answering a JSON-RPC error at an error status, as the specification allows)."""
    args = body.get("params", {}).get("arguments", {}) if isinstance(body, dict) else {}
    return int(args.get("http", 200)) if isinstance(args, dict) else 200


def _plain(body: Any) -> tuple[str, bytes] | None:
    """A ``check_token`` call's ``body_type`` argument: the type of a body that is no JSON-RPC
    answer (a proxy's or framework's error page), quoting the token, and the body; else
    ``None``."""
    params = body.get("params", {}) if isinstance(body, dict) else {}
    args = params.get("arguments", {}) if isinstance(params, dict) else {}
    if not isinstance(args, dict) or "body_type" not in args:
        return None
    text = f"upstream failed: bad token {args.get('token')}"
    return args["body_type"], text.encode(args.get("charset", "utf-8"))


def _content_type(body: Any) -> str:
    """The type a ``check_token`` call's JSON answer is sent as: its ``content_type`` argument
    (one a client still reads as JSON, such as ``application/json-rpc``), else JSON's own."""
    params = body.get("params", {}) if isinstance(body, dict) else {}
    args = params.get("arguments", {}) if isinstance(params, dict) else {}
    given = args.get("content_type") if isinstance(args, dict) else None
    return given if isinstance(given, str) else "application/json"


def _odd_stream(body: Any, out: bytes) -> tuple[str, bytes] | None:
    """A ``check_token`` call's ``sse`` argument: its answer ``out`` as an event stream spelled
    as the SSE rules allow and a careless reader misses: ``bom`` (the stream starts with a byte
    order mark), ``split`` (events ended by ``\n\r\n``, the answer in the second, the first
    and third making it part of one JSON text with them to a reader that splits at
    ``\n\n`` only)."""
    params = body.get("params", {}) if isinstance(body, dict) else {}
    args = params.get("arguments", {}) if isinstance(params, dict) else {}
    how = args.get("sse") if isinstance(args, dict) else None
    if how == "bom":
        return "text/event-stream", b"\xef\xbb\xbfdata: " + out + b"\n\n"
    if how != "split":
        return None
    harmless = {"content": [{"type": "text", "text": "ok"}]}
    head = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": harmless})[:-1]
    events = [head.encode() + b', "x":', out, b"}"]
    return "text/event-stream", b"".join(b"data: " + e + b"\n\r\n" for e in events)


def _redirect(body: Any) -> bool:
    """Whether a ``check_token`` call asks to be redirected (``redirect`` argument): answered
    ``307`` to another path of this server, which runs it there, as a mounted app redirects
    ``/mcp`` to ``/mcp/``."""
    params = body.get("params", {}) if isinstance(body, dict) else {}
    args = params.get("arguments", {}) if isinstance(params, dict) else {}
    return isinstance(args, dict) and bool(args.get("redirect"))


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if _redirect(body) and self.path == "/mcp":
            self.send_response(307)
            self.send_header("location", f"http://127.0.0.1:{self.server.server_port}/direct")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        messages = body if isinstance(body, list) else [body]
        answers = [answer(m) for m in messages if "method" in m and "id" in m]
        if not answers:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        out = json.dumps(answers if isinstance(body, list) else answers[0]).encode()
        kind = _content_type(body)
        plain = _plain(body) or _odd_stream(body, out)
        if plain is not None:
            kind, out = plain
        self.send_response(_status(body))
        self.send_header("content-type", kind)
        self.send_header("mcp-session-id", "s1")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
