"""A webhook endpoint attacking the agent: compression bombs, dripping headers, duplicate keys.

Real servers on 127.0.0.1 (raw sockets where HTTP itself is the attack), the real dispatch path;
memory measured as the peak RSS of a separate agent process, times as wall clock with generous
bounds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gzip
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Block, ToolCallEvent, ToolResult, WebhookDeliverer
from otelhooks.testing import TestPipeline
from tests._webhook_server import Reply, WebhookServer

# -- compression bombs ----------------------------------------------------------------------------

GIB = 1 << 30


@functools.cache
def zstd_bomb() -> bytes:
    """A 32 KiB zstd frame of RLE blocks (4 bytes each, 128 KiB decoded each): 1 GiB decoded."""
    blocks = []
    count = 32 * 1024 // 4
    for index in range(count):
        last = 1 if index == count - 1 else 0
        header = last | (1 << 1) | ((128 * 1024) << 3)  # block type 1: RLE
        blocks.append(header.to_bytes(3, "little") + b"\0")
    # magic, frame header descriptor (no content size), window descriptor (2**17 bytes)
    return b"\x28\xb5\x2f\xfd" + b"\x00" + bytes([7 << 3]) + b"".join(blocks)


@functools.cache
def gzip_gzip_bomb() -> bytes:
    """``Content-Encoding: gzip, gzip``: 1 GiB of zeros gzipped, gzipped again (a few KB).

    Its trailer's CRC is left 0, as an attacker would: a decoder finds out only at the end.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = compressor.compress(b"\0" * (1 << 20)) + compressor.flush(zlib.Z_FULL_FLUSH)
    inner = (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip header
        + segment * 1024  # byte-aligned, history reset: each decodes to the same MiB
        + b"\x03\x00"  # an empty final block
        + struct.pack("<II", 0, GIB & 0xFFFFFFFF)
    )
    return gzip.compress(inner, 9)


def test_the_bombs_are_what_they_claim() -> None:
    """Each is small and decodes to at least 64 MiB from its first bytes (1 GiB in all)."""
    zstandard = pytest.importorskip("zstandard")
    want = 64 << 20
    zstd = zstd_bomb()
    assert len(zstd) <= 32 * 1024 + 8
    reader = zstandard.ZstdDecompressor().stream_reader(zstd)
    assert reader.read(want) == bytes(want)
    bomb = gzip_gzip_bomb()
    assert len(bomb) < 8 * 1024
    inner = gzip.decompress(bomb)
    assert len(inner) < 2 << 20
    inflate = zlib.decompressobj(31)
    first = inflate.decompress(inner, want)
    assert first == bytes(want)
    assert len(inflate.unconsumed_tail) > len(inner) * 0.9  # 1/16 of the input gave 64 MiB


@contextmanager
def bomb_server(encoding: str, body: bytes) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


AGENT = r"""
import json, resource, sys
# Past this, an agent that decodes the bomb fails with MemoryError instead of taking the machine.
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
from opentelemetry.sdk.trace import TracerProvider
from otelhooks import AgentTracer, HookSpanProcessor

url = sys.argv[1]
hooks = HookSpanProcessor()
provider = TracerProvider(shutdown_on_exit=False)
provider.add_span_processor(hooks)
tracer = AgentTracer(tracer_provider=provider, hooks=hooks)
hooks.register([
    {"id": "control", "type": "beforeToolCall", "matcher": "guarded",
     "webhook": {"url": url, "responseHandling": "toolCall", "timeout": 20, "onError": "block"}},
    {"id": "notify", "type": "afterToolCall", "webhook": {"url": url, "timeout": 20}},
])

def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

def call(name):
    with tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("t", name, {"cmd": "ls"}, lambda **kw: "ran")

call("warm")  # imports, threads, clients: the baseline includes them
hooks.engine.flush(20)
before = peak_kib()
results = [call("guarded") for _ in range(3)]
for _ in range(3):
    call("notified")
hooks.engine.flush(30)
print(json.dumps({
    "before_kib": before,
    "after_kib": peak_kib(),
    "contents": [r.content for r in results],
}))
"""


@pytest.mark.parametrize(
    ("encoding", "bomb"),
    [("zstd", zstd_bomb), ("gzip, gzip", gzip_gzip_bomb)],
    ids=["zstd_32_kib", "gzip_gzip"],
)
def test_a_compression_bomb_leaves_the_agent_rss_flat(
    encoding: str, bomb: Any, tmp_path: Path
) -> None:
    with bomb_server(encoding, bomb()) as url:
        done = subprocess.run(
            [sys.executable, "-c", AGENT, url],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parents[2],
            # few malloc arenas: each reserves 64 MiB of address space under the RLIMIT_AS
            env={**os.environ, "MALLOC_ARENA_MAX": "2"},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    growth_mib = (report["after_kib"] - report["before_kib"]) / 1024
    assert growth_mib < 32, report
    for content in report["contents"]:  # refused, so onError: block denies; never an allow
        assert "invalid_response" in content, report
        assert "encoded answer refused" in content, report


def test_requests_ask_for_identity_and_the_cap_counts_what_is_kept(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply.json({"decision": "deny", "reason": "no"})
    pipe.register(control(server.url + "/control", timeout=5, matcher="guarded"))
    result, _ = run_tool(pipe, "guarded")
    assert denied(result)
    assert server.requests("/control")[0].headers["accept-encoding"] == "identity"


# -- dripping headers and capacity ----------------------------------------------------------------


class DripServer:
    """Accepts, reads the request, then sends its status line a byte every ``interval_s`` (the
    headers never end) for ``lifetime_s``, then hangs up; records when each connection started
    and when the client went away (``None``: the client held it until the server hung up).
    The lifetime only bounds how long a client that never gives up stays stuck."""

    def __init__(self, interval_s: float = 0.1, lifetime_s: float = 4.0) -> None:
        self.interval_s = interval_s
        self.lifetime_s = lifetime_s
        self.connections: list[list[float | None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/control"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            record: list[float | None] = [time.monotonic(), None]
            with self._lock:
                self.connections.append(record)
            threading.Thread(target=self._drip, args=(conn, record), daemon=True).start()

    def _drip(self, conn: socket.socket, record: list[float | None]) -> None:
        status = b"HTTP/1.1 200 OK\r\n" * 1000
        with conn:
            conn.settimeout(1)
            try:
                conn.recv(65536)
                started = time.monotonic()
                for byte in status:
                    if self._stop.wait(self.interval_s):
                        return
                    if time.monotonic() - started > self.lifetime_s:
                        return  # hang up: the client held on past any deadline
                    conn.sendall(bytes([byte]))
            except OSError:
                record[1] = time.monotonic()  # the client closed: send failed

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer()
    yield server
    server.close()


def control(url: str, *, timeout: float, matcher: str = "fetch") -> dict[str, Any]:
    return {
        "id": "slow",
        "type": "beforeToolCall",
        "matcher": matcher,
        "webhook": {"url": url, "responseHandling": "toolCall", "timeout": timeout},
    }


def no_rm(event: ToolCallEvent) -> Block | None:
    return Block("no rm -rf") if "rm -rf" in str(event.args.get("cmd", "")) else None


GUARD = {"id": "guard", "type": "beforeToolCall", "matcher": "exec", "handler": no_rm}


def run_tool(pipe: TestPipeline, name: str, cmd: str = "ls") -> tuple[ToolResult, list[str]]:
    ran: list[str] = []
    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", name, {"cmd": cmd}, lambda **kw: ran.append(name))
    return result, ran


async def arun_tool(pipe: TestPipeline, name: str, cmd: str = "ls") -> tuple[ToolResult, list[str]]:
    ran: list[str] = []
    async with pipe.tracer.operation("agent") as op:
        with op.step() as step:
            result = await step.arun_tool(
                "shell", name, {"cmd": cmd}, lambda **kw: ran.append(name)
            )
    return result, ran


def denied(result: ToolResult) -> bool:
    return (result.state or {}).get("classification") == "hook_denied"


CALLS = 80
TIMEOUT_S = 1.0


def test_84_dripping_calls_end_at_the_deadline_and_leave_the_guard_its_capacity_sync(
    pipe: TestPipeline,
) -> None:
    drip = DripServer(lifetime_s=30)  # longer than the test: a stuck client stays stuck
    try:
        _dripping_calls_then_the_guard(pipe, drip)
    finally:
        drip.close()


def _dripping_calls_then_the_guard(pipe: TestPipeline, drip: DripServer) -> None:
    timeout = 0.3
    pipe.register(control(drip.url, timeout=timeout), GUARD)
    durations: list[float] = []

    def agent() -> None:  # one call after another, as an agent's tool calls come
        for _ in range(12):
            started = time.monotonic()
            run_tool(pipe, "fetch")
            durations.append(time.monotonic() - started)

    # 7 agents x 12 calls: 84 calls, never more than 7 at once, so each really starts (a call
    # still queued at its deadline is never started, and would prove nothing).
    threads = [threading.Thread(target=agent) for _ in range(7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(durations) == 84
    assert max(durations) < timeout + 2.5, max(durations)  # one deadline: connect+headers+body

    runs = 0
    for _ in range(CALLS):
        result, ran = run_tool(pipe, "exec", "rm -rf /")
        runs += len(ran)
        assert denied(result), result.content
    assert runs == 0

    time.sleep(0.5)  # the drip notices a closed socket at its next byte
    with drip._lock:
        connections = list(drip.connections)
    assert len(connections) == 84
    held = [end - start for start, end in connections if end is not None and start is not None]
    assert len(held) == len(connections), "a request was still holding its connection"
    assert max(held) < timeout + 2.5


def test_80_dripping_calls_leave_the_local_guard_and_the_app_threads_alone_async(
    pipe: TestPipeline, drip: DripServer
) -> None:
    pipe.register(control(drip.url, timeout=TIMEOUT_S), GUARD)

    app_executor = CountingExecutor(max_workers=4, thread_name_prefix="app")

    async def main() -> tuple[int, int, int]:
        asyncio.get_running_loop().set_default_executor(app_executor)
        slow = [asyncio.create_task(arun_tool(pipe, "fetch")) for _ in range(CALLS)]
        await asyncio.sleep(0.2)  # every slow call is in flight
        probes = [await asyncio.to_thread(time.sleep, 0.01) for _ in range(20)]
        await asyncio.gather(*slow)
        runs = denies = 0
        for _ in range(20):
            result, ran = await arun_tool(pipe, "exec", "rm -rf /")
            runs += len(ran)
            denies += denied(result)
        return len(probes), runs, denies

    probes, runs, denies = asyncio.run(main())
    # the application's executor ran the application's 20 probes and nothing of otelhooks'
    # (counted, not timed: a loaded machine delays a probe without anything taking the executor)
    assert app_executor.submitted == probes == 20
    assert (runs, denies) == (0, 20)


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    """The application's own default executor, counting the work it is given."""

    submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


# -- duplicate keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"decision":"deny","decision":"allow"}',
        b'{"decision":"allow","reason":"a","reason":"b"}',
    ],
    ids=["deny_then_allow", "repeated_reason"],
)
def test_duplicate_keys_in_a_control_answer_are_a_protocol_error_never_an_allow(
    pipe: TestPipeline, server: WebhookServer, body: bytes
) -> None:
    server.routes["/control"] = Reply(200, body, headers={"Content-Type": "application/json"})
    hook = control(server.url + "/control", timeout=5, matcher="exec")
    hook["webhook"]["onError"] = "block"
    pipe.register(hook)
    result, ran = run_tool(pipe, "exec")
    assert ran == []
    assert denied(result)
    span = pipe.span("execute_tool exec")
    errors = str((span.attributes or {}).get("otelhooks.hook.errors"))
    assert "repeats the key" in errors


# -- the event encoding in webhook bodies ---------------------------------------------------------


def test_control_and_notification_bodies_are_strict_json_whatever_the_arguments(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/control"] = Reply.json({"decision": "deny", "reason": "seen"})
    server.routes["/notify"] = Reply(204)
    hook = control(server.url + "/control", timeout=5, matcher="exec")
    pipe.register(
        hook,
        {
            "id": "notify",
            "type": "beforeToolCall",
            "webhook": {"url": server.url + "/notify", "eventFields": ["args"]},
        },
    )
    deep: Any = "rm -rf /"
    for _ in range(5000):
        deep = {"a": deep}
    args = {"cmd": deep, "s": "a\ud800", "n": float("nan")}
    ran: list[str] = []
    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "exec", args, lambda **kw: ran.append("exec"))
    assert ran == []
    assert result.content == "seen"  # the endpoint got the call and denied it
    assert deliverer.flush(10)

    def no_constants(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    for path in ("/control", "/notify"):
        (request,) = server.requests(path)
        body = json.loads(request.body.decode("utf-8"), parse_constant=no_constants)
        assert body["args"]["s"] == "a\ufffd"
        assert body["args"]["n"] is None
        assert "rm -rf /" in json.dumps(body["args"]["cmd"])


def test_a_hung_python_hook_exhausts_only_its_own_capacity(pipe: TestPipeline) -> None:
    release = threading.Event()

    def hang(event: ToolCallEvent) -> None:
        release.wait(30)

    pipe.register(
        {"id": "hang", "type": "beforeToolCall", "matcher": "fetch", "handler": hang,
         "timeout": 0.02},
        GUARD,
    )  # fmt: skip
    try:
        for _ in range(70):  # one at a time: each starts, then is abandoned at its deadline
            run_tool(pipe, "fetch")
        runs = 0
        for _ in range(20):
            result_exec, ran = run_tool(pipe, "exec", "rm -rf /")
            runs += len(ran)
            assert denied(result_exec), result_exec.content
        assert runs == 0
    finally:
        release.set()
    errors = [
        str((span.attributes or {}).get("otelhooks.hook.errors"))
        for span in pipe.spans("execute_tool fetch")
    ]
    assert any("calls of this hook are stuck past their deadline" in e for e in errors), errors[-3:]
