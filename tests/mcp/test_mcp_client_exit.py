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
from tests.mcp._harness import SERVER_APP, calls, env, gateway_args, server_pids

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


def test_a_client_that_only_closes_its_input_gets_an_error_for_a_call_still_decided(
    tmp_path: Path,
) -> None:
    """``printf '...' | otelhooks mcp ... | reader``: the client closes its input at once and
    reads on. A call whose hooks took longer than the gateway takes to stop the server (2 s and
    more) was neither forwarded nor answered, and the gateway exited 0 saying nothing (so was a
    call the server had not answered when it stopped); now each gets a JSON-RPC error."""
    (tmp_path / "hooks.py").write_text(
        "import time\nfrom otelhooks import Block\n\n"
        "def slow_deny(event):\n    time.sleep(8)\n    return Block('no notes')\n"
    )
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n  - id: slow\n    type: beforeToolCall\n"
        '    matcher: "testsrv/write_note"\n    script: hooks.py:slow_deny\n'
    )
    args = [
        *gateway_args([hooks], tmp_path / "traces.jsonl"),
        "--",
        sys.executable,
        str(SERVER_APP),
    ]
    client = {"name": "t", "version": "1"}
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
    note = {"name": "write_note", "arguments": {"text": "x"}}
    gateway = subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp_path / "calls.jsonl"),
        cwd=tmp_path,
    )
    # the handshake answered first (a call sent before it would meet the guard as `mcp/...`)
    assert gateway.stdin is not None
    assert gateway.stdout is not None
    gateway.stdin.write(_frame(id=1, method="initialize", params=init))
    gateway.stdin.flush()
    first = gateway.stdout.readline()
    rest = (
        _frame(method="notifications/initialized")
        + _frame(id=2, method="tools/call", params=note)
        + _frame(id=3, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": 2}})
    )
    out, err = gateway.communicate(rest, timeout=60)
    answers = {a["id"]: a for a in map(json.loads, (first + out).splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "testsrv"  # so the guard matches
    assert set(answers) == {1, 2, 3}  # every request is answered (add: by the server, or not)
    assert answers[2]["error"]["code"] == -32000
    assert "closed its input" in answers[2]["error"]["message"]
    assert b"left unanswered" in err
    assert calls(tmp_path) in ([], [{"tool": "add", "args": {"a": 1, "b": 2}}])


@pytest.mark.parametrize("end", ["stdin", "stdout"])
def test_a_file_for_stdin_or_stdout_is_refused_with_a_sentence(tmp_path: Path, end: str) -> None:
    # An MCP client gives the gateway pipes; a person trying it by hand with `< requests.jsonl`
    # or `> out.jsonl` got asyncio's traceback ("Pipe transport is only for pipes, sockets and
    # character devices") after the server had started. Now: a sentence naming the way, before.
    file = tmp_path / "frames.jsonl"
    file.write_bytes(_frame(id=1, method="ping"))
    args = [*gateway_args([], tmp_path / "traces.jsonl"), "--", sys.executable, str(SERVER_APP)]
    with file.open("r+b") as handle:
        run = subprocess.run(
            [sys.executable, *args],
            stdin=handle if end == "stdin" else subprocess.PIPE,
            stdout=handle if end == "stdout" else subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(tmp_path / "calls.jsonl"),
            timeout=60,
        )
    said = run.stderr.decode()
    assert run.returncode == 2, said
    assert f"{end} is a file, not a pipe" in said
    assert "Traceback" not in said
    assert not (tmp_path / "calls.jsonl").exists()  # the server never started
