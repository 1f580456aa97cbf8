"""A ``DELETE`` of a session the upstream refused (the specification lets a server answer
``405``; a server without the method answers ``501``) ended the session in the gateway anyway:
a call its guard was still deciding then ran on the server, its answer reached the client, and
the gateway had recorded it as ``session_closed``, its ``after_tool_call`` never queued. Now the
session ends only when the upstream ended it.

Real processes: a Streamable HTTP server without ``DELETE`` (``batch_http_server.py``),
``python -m otelhooks mcp --listen --upstream`` in front of it, and a raw httpx client."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import SSE, calls, http_gateway, write_hooks

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).with_name("batch_http_server.py")
INIT = {
    "protocolVersion": "2025-03-26",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
# a guard that allows add, slowly enough for the client to DELETE its session meanwhile
SLOW_ALLOW = """
hooks:
  - id: slow
    type: beforeToolCall
    matcher: "testsrv/add"
    script: hooks.py:slow
  - id: seen
    type: afterToolCall
    matcher: "testsrv/add"
    script: hooks.py:seen
"""
SLOW_SCRIPT = """
import json
import time


def slow(event):
    time.sleep(1.5)


def seen(event):
    with open("OBSERVED", "a") as f:
        f.write(json.dumps({"tool": event.apiName, "content": event.content}) + "\\n")
"""


def test_a_delete_the_upstream_refused_leaves_the_session_and_its_calls_recorded(
    tmp_path: Path,
) -> None:
    observed_path = tmp_path / "observed.jsonl"  # the gateway's cwd is not tmp_path
    hooks = write_hooks(tmp_path, SLOW_ALLOW, SLOW_SCRIPT.replace("OBSERVED", str(observed_path)))
    answers: list[httpx.Response] = []
    with (
        http_gateway(tmp_path, [hooks], app=SERVER, app_args=()) as url,
        httpx.Client(headers=SSE, timeout=30) as client,
    ):
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
        client.headers["mcp-session-id"] = client.post(url, json=init).headers["mcp-session-id"]
        call: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        call["params"] = {"name": "add", "arguments": {"a": 1}}
        posting = threading.Thread(target=lambda: answers.append(client.post(url, json=call)))
        posting.start()
        time.sleep(0.5)  # the guard is deciding
        deleted = client.delete(url)
        posting.join(30)
    assert deleted.status_code == 501  # the upstream did not end the session
    assert [a.json()["result"]["content"][0]["text"] for a in answers] == ["ran add"]
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]
    spans = {s["name"]: s for s in read_otlp_json_lines(tmp_path / "traces.jsonl")}
    assert "error.type" not in spans["tools/call add"].get("attributes", {})  # session_closed
    observed = observed_path.read_text().splitlines()
    assert [json.loads(line) for line in observed] == [{"tool": "add", "content": "ran add"}]
