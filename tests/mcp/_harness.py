"""Real processes for the gateway tests: the SDK server (stdio or Streamable HTTP), the gateway
(``python -m otelhooks mcp``) and the SDK's client in front of it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import propagate
from opentelemetry.propagators.composite import CompositePropagator

from otelhooks import read_otlp_json_lines
from tests._realparts import reserved_port

ROOT = Path(__file__).resolve().parents[2]
SERVER_APP = Path(__file__).with_name("mcp_server_app.py")


# what a raw client says of itself in ``initialize``
RAW_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
# a guard on the test server's write_note tool, and its script (``write_hooks``)
DENY_NOTES = """
hooks:
  - id: no-notes
    type: beforeToolCall
    matcher: "testsrv/write_note"
    script: hooks.py:deny
"""
DENY_SCRIPT = """
from otelhooks import Block

def deny(event):
    return Block("notes are read-only here")
"""
# a tool_result_persist script (``write_hooks``) that redacts S-42-SECRET from text blocks
REDACT_SCRIPT = """
def redact(data):
    for block in data.result["content"]:
        block["text"] = block["text"].replace("S-42-SECRET", "***")
"""
# what a raw HTTP client sends with each POST
SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def env(log: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out["PYTHONPATH"] = str(ROOT)
    out["MCP_TEST_LOG"] = str(log)
    out["OTEL_BSP_SCHEDULE_DELAY"] = "100"  # spans reach the file while the gateway runs
    return out


def gateway_args(hooks: Sequence[Path], traces: Path, extra: Sequence[str] = ()) -> list[str]:
    args = ["-m", "otelhooks", "mcp", "--traces-out", str(traces), *extra]
    for path in hooks:
        args += ["--hooks", str(path)]
    return args


@asynccontextmanager
async def stdio_session(
    tmp: Path, hooks: Sequence[Path] = (), extra: Sequence[str] = (), **client: Any
) -> AsyncIterator[ClientSession]:
    """The SDK client → ``otelhooks mcp -- python mcp_server_app.py`` (both real processes)."""
    args = [
        *gateway_args(hooks, tmp / "traces.jsonl", extra),
        "--",
        sys.executable,
        str(SERVER_APP),
    ]
    params = StdioServerParameters(
        command=sys.executable, args=args, env=env(tmp / "calls.jsonl"), cwd=str(tmp)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, **client) as session,
    ):
        with client_injects_no_trace_context():
            await session.initialize()
            yield session


@contextmanager
def client_injects_no_trace_context() -> Iterator[None]:
    """The SDK's client sends only what a test tells it to.

    The MCP SDK's client (2.3 and later) puts the W3C context of a span of its own into every
    request's ``params._meta`` whenever this process has a global ``TracerProvider``, which any
    earlier test may have set (OpenTelemetry allows one per process). Each request would then
    continue a trace of the test process, and whether a test saw one trace per session, or its
    own ``traceparent``, would depend on which tests ran before it in the same process."""
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    try:
        yield
    finally:
        propagate.set_global_textmap(before)


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


@contextmanager
def process(args: Sequence[str], log: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, *args], env=env(log))
    try:
        wait_port(port, proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
                if sys.exc_info()[0] is None:  # its spans, written as it ends, would be lost
                    raise AssertionError(f"{args} did not exit within 20 s of SIGTERM") from None


@contextmanager
def http_gateway(
    tmp: Path,
    hooks: Sequence[Path] = (),
    extra: Sequence[str] = (),
    app: Path = SERVER_APP,
    *,
    app_args: Sequence[str] = ("http",),
    gateway: Path | None = None,
) -> Iterator[str]:
    """The server ``app`` over Streamable HTTP (``app [app_args] PORT``; the SDK's by default)
    and ``otelhooks mcp --listen --upstream`` in front of it (or the script ``gateway``, run as
    ``gateway http PORT UPSTREAM``); yields the gateway's URL. Spans are in
    ``tmp/traces.jsonl`` once this exits."""
    with reserved_port() as server_port, reserved_port() as gateway_port:
        log = tmp / "calls.jsonl"
        upstream = f"http://127.0.0.1:{server_port}/mcp"
        with process([str(app), *app_args, str(server_port)], log, server_port):
            if gateway is not None:
                args = [str(gateway), "http", str(gateway_port), upstream]
            else:
                args = [
                    *gateway_args(hooks, tmp / "traces.jsonl", extra),
                    "--listen",
                    f"127.0.0.1:{gateway_port}",
                    "--upstream",
                    upstream,
                ]
            with process(args, log, gateway_port):
                yield f"http://127.0.0.1:{gateway_port}/mcp"


@asynccontextmanager
async def http_session(url: str, **client: Any) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, **client) as session,
    ):
        with client_injects_no_trace_context():
            await session.initialize()
            yield session


def events(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """The ``(id, data)`` of each server-sent event of a stream's lines."""
    event_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data or event_id is not None:
                yield event_id, "\n".join(data)
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def answer(response: httpx.Response) -> Any:
    """The first JSON-RPC message of an HTTP answer (a JSON body, or its first event)."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    for _, data in events(response.iter_lines()):
        if data.strip():
            return json.loads(data)
    raise AssertionError("no answer")


def open_session(
    client: httpx.Client, url: str, *, capabilities: dict[str, Any] | None = None
) -> dict[str, str]:
    """Initialize a session by hand over HTTP (the client's ``capabilities``): the headers its
    later requests carry."""
    params = {**RAW_INIT, "capabilities": capabilities or {}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    response = client.post(url, json=init, headers=SSE)
    assert response.status_code == 200, response.text
    assert answer(response)["id"] == 0
    headers = {
        **SSE,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": RAW_INIT["protocolVersion"],
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post(url, json=done, headers=headers).status_code == 202
    return headers


def spans(tmp: Path, name: str) -> list[Any]:
    """The spans named ``name`` the gateway wrote to ``tmp/traces.jsonl`` so far."""
    path = tmp / "traces.jsonl"
    if not path.exists():
        return []
    try:
        found = read_otlp_json_lines(path)
    except ValueError:
        if not path.read_bytes().endswith(b"\n"):
            return []  # its last line is being written: the caller's wait looks again
        found = read_otlp_json_lines(path)  # written whole since: a bad line raises
    return [s for s in found if s["name"] == name]


def wait_for(check: Any, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.05)


def calls(tmp: Path) -> list[dict[str, Any]]:
    """What reached the server: one record per tool call."""
    path = tmp / "calls.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    for record in records:
        record.pop("pid", None)
    return records


def server_pids(tmp: Path) -> set[int]:
    """The pids of the server processes that recorded a call."""
    path = tmp / "calls.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {json.loads(line)["pid"] for line in lines if line}


def write_hooks(tmp: Path, yaml_text: str, script: str = "") -> Path:
    """A hooks file (and its ``hooks.py`` for ``script:`` hooks) in ``tmp``."""
    if script:
        (tmp / "hooks.py").write_text(script)
    path = tmp / "hooks.yaml"
    path.write_text(yaml_text)
    return path


class RawClient:
    """A client that writes frames to a gateway process (bytes as they are, anything else as
    its JSON) and reads its answers, one line each."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout

    def send(self, frame: Any) -> None:
        raw = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
        self.stdin.write(raw + b"\n")
        self.stdin.flush()

    def answer(self) -> Any:
        line = self.stdout.readline()
        assert line, "the gateway closed its stdout"
        return json.loads(line)


@contextmanager
def raw_stdio_gateway(
    tmp: Path,
    hooks: Sequence[Path],
    server: Path = SERVER_APP,
    *,
    handshake: bool = True,
    extra: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Iterator[RawClient]:
    """``otelhooks mcp [extra] -- python SERVER`` driven frame by frame (the session initialized
    unless ``handshake`` is false), ``environ`` added to its environment; the server's calls are
    in ``tmp/calls.jsonl``."""
    args = [*gateway_args(hooks, tmp / "traces.jsonl", extra), "--", sys.executable, str(server)]
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**env(tmp / "calls.jsonl"), **(environ or {})},
        cwd=tmp,
    )
    client = RawClient(proc)
    try:
        if handshake:
            client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": RAW_INIT})
            assert client.answer()["id"] == 0
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
