"""A client that goes away: the gateway stops the server and exits, and what it saw is exported
before a client's kill can land."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import SERVER_APP, env, gateway_args, server_pids

pytestmark = pytest.mark.timeout(90)


def _frame(**fields: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


def _start(tmp_path: Path) -> subprocess.Popen[bytes]:
    args = [*gateway_args([], tmp_path / "traces.jsonl"), "--", sys.executable, str(SERVER_APP)]
    gateway = subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp_path / "calls.jsonl"),
    )
    assert gateway.stdin is not None
    assert gateway.stdout is not None
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    gateway.stdin.write(_frame(id=1, method="initialize", params=init))
    gateway.stdin.flush()
    assert json.loads(gateway.stdout.readline())["id"] == 1
    return gateway


def test_signal_then_kill_like_claude_code_still_exports_the_session(tmp_path: Path) -> None:
    gateway = _start(tmp_path)
    gateway.send_signal(signal.SIGINT)  # Claude Code: SIGINT, SIGTERM, SIGKILL within ~0.5 s
    time.sleep(0.15)
    if gateway.poll() is None:
        gateway.send_signal(signal.SIGTERM)
    time.sleep(0.4)
    if gateway.poll() is None:
        gateway.kill()
    gateway.wait(10)
    names = [s["name"] for s in read_otlp_json_lines(tmp_path / "traces.jsonl")]
    assert "initialize" in names
    assert "mcp.session" in names


def test_client_gone_mid_call_stops_the_server_and_the_gateway(tmp_path: Path) -> None:
    gateway = _start(tmp_path)
    assert gateway.stdin is not None
    gateway.stdin.write(_frame(method="notifications/initialized"))
    call = {"name": "slow", "arguments": {"tag": "never", "seconds": 60}}
    gateway.stdin.write(_frame(id=2, method="tools/call", params=call))
    gateway.stdin.flush()
    deadline = time.monotonic() + 30
    while not server_pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)  # the server has the call
    (server_pid,) = server_pids(tmp_path)

    gateway.stdin.close()  # the client is gone
    started = time.monotonic()
    code = gateway.wait(30)
    stderr = gateway.stderr.read().decode() if gateway.stderr else ""
    assert code == 0, stderr
    assert time.monotonic() - started < 15  # 2 s grace, then terminate
    assert "the client closed the connection" in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)
    spans = read_otlp_json_lines(tmp_path / "traces.jsonl")
    (slow,) = [s for s in spans if s["name"] == "tools/call slow"]
    # ended as an error either way: the server's own answer as its stdin closed (the SDK answers
    # -32000), or the gateway's "session_closed" when the server said nothing
    assert slow["attributes"]["error.type"] in ("-32000", "session_closed"), slow
    assert slow["status"]["code"] in (2, "STATUS_CODE_ERROR"), slow["status"]
