"""MCP gateway benchmark: latency a ``tools/call`` gains through ``otelhooks mcp``, and throughput.

Run from the repository root::

    python benchmarks/mcp_bench.py            # the numbers in benchmarks/README.md
    python benchmarks/mcp_bench.py --quick    # a smoke run

A raw JSON-RPC client (newline-delimited frames on pipes, no SDK on the client side, so the
client adds as little as possible) drives a stdio MCP server directly and through the gateway,
one ``tools/call`` at a time: latency from writing the request to reading its answer, p50 and
p99. Two servers: the MCP SDK's (``MCPServer``, a real tool) and a minimal echo server (answers
a ``tools/call`` with a canned result as soon as it reads it), which isolates what the gateway
adds. Gateway set-ups: no hooks; a matching ``before_tool_call`` script hook that allows (the
chain runs on every call); spans exported to a file (``--traces-out``).

Throughput: ``--window`` requests in flight (pipelined), ``--burst`` calls in all against the
echo server; messages per second counts both directions (a call and its answer are two).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]

ECHO_SERVER = r"""
import sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    if b'"tools/call"' in line or b'"initialize"' in line or b'"tools/list"' in line:
        i = line.index(b'"id":') + 5
        j = i
        while line[j:j+1] not in (b",", b"}"):
            j += 1
        rid = line[i:j]
        if b'"initialize"' in line:
            res = (b'{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},'
                   b'"serverInfo":{"name":"echo","version":"1"}}')
        else:
            res = b'{"content":[{"type":"text","text":"ok"}],"isError":false}'
        out.write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + res + b'}\n')
        out.flush()
"""

SDK_SERVER = r"""
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench")
@app.tool(structured_output=False)
def add(a: int, b: int) -> str:
    return str(a + b)
app.run()
"""

ALLOW_HOOK = """
hooks:
  - id: allow-all
    type: beforeToolCall
    matcher: "*"
    script: allow.py:allow
"""


class RawClient:
    """Newline-delimited JSON-RPC over a child's pipes, one frame at a time."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        # buffered pipes: an unbuffered stdout would make readline() read a byte per syscall
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.stdin.write(json.dumps(frame).encode() + b"\n")
        self.stdin.flush()
        return self.next_id

    def notify(self, method: str) -> None:
        self.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.stdin.flush()

    def read(self) -> dict[str, Any]:
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            msg: dict[str, Any] = json.loads(line)
            if "id" in msg and ("result" in msg or "error" in msg):
                return msg

    def initialize(self) -> None:
        self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.read()
        self.notify("notifications/initialized")

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _call_params(i: int) -> dict[str, Any]:
    return {"name": "add", "arguments": {"a": i, "b": 1}}


def latencies(client: RawClient, n: int, warmup: int) -> list[float]:
    """Seconds per sequential round trip."""
    out: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        client.send("tools/call", _call_params(i))
        answer = client.read()
        dt = time.perf_counter() - t0
        if "error" in answer:
            raise RuntimeError(f"tools/call failed: {answer['error']}")
        if i >= warmup:
            out.append(dt)
    return out


def throughput(client: RawClient, burst: int, window: int) -> float:
    """Messages per second (requests + answers) with ``window`` calls in flight."""
    done = threading.Semaphore(window)
    finished = threading.Event()
    received = 0

    def reader() -> None:
        nonlocal received
        while received < burst:
            client.read()
            received += 1
            done.release()
        finished.set()

    thread = threading.Thread(target=reader, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    for i in range(burst):
        done.acquire()
        client.send("tools/call", _call_params(i))
    finished.wait(300)
    elapsed = time.perf_counter() - t0
    return 2 * burst / elapsed


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    (tmp / "echo.py").write_text(ECHO_SERVER)
    (tmp / "sdk.py").write_text(SDK_SERVER)
    (tmp / "hooks.yaml").write_text(ALLOW_HOOK)
    (tmp / "allow.py").write_text("def allow(event):\n    return None\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    py = sys.executable
    gateway = [py, "-m", "otelhooks", "mcp"]
    setups: dict[str, list[str]] = {
        "direct": [],
        "gateway": [*gateway, "--"],
        "gateway + allow hook": [*gateway, "--hooks", str(tmp / "hooks.yaml"), "--"],
        "gateway + spans to file": [*gateway, "--traces-out", str(tmp / "t.jsonl"), "--"],
    }
    results: dict[str, Any] = {"latency": {}, "throughput": {}}
    for server in ("echo", "sdk"):
        script = str(tmp / f"{server}.py")
        for label, prefix in setups.items():
            client = RawClient([*prefix, py, script], env)
            try:
                client.initialize()
                lat = latencies(client, args.calls, args.warmup)
            finally:
                client.close()
            row = {
                "p50_us": pct(lat, 50) * 1e6,
                "p99_us": pct(lat, 99) * 1e6,
                "mean_us": statistics.fmean(lat) * 1e6,
            }
            results["latency"][f"{server}: {label}"] = row
            print(
                f"{server:>4} {label:<26} p50 {row['p50_us']:8.0f} µs"
                f"   p99 {row['p99_us']:8.0f} µs",
                flush=True,
            )
    for label in ("direct", "gateway", "gateway + spans to file"):
        client = RawClient([*setups[label], py, str(tmp / "echo.py")], env)
        try:
            client.initialize()
            rate = throughput(client, args.burst, args.window)
        finally:
            client.close()
        results["throughput"][label] = rate
        print(f"echo {label:<26} {rate:10.0f} messages/s (window {args.window})", flush=True)
    for server in ("echo", "sdk"):
        direct = results["latency"][f"{server}: direct"]
        for label in setups:
            if label == "direct":
                continue
            row = results["latency"][f"{server}: {label}"]
            row["added_p50_us"] = row["p50_us"] - direct["p50_us"]
            row["added_p99_us"] = row["p99_us"] - direct["p99_us"]
            print(
                f"added by {label:<26} ({server}): p50 {row['added_p50_us']:7.0f} µs, "
                f"p99 {row['added_p99_us']:7.0f} µs"
            )
    results["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    results["params"] = vars(args)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls per set-up")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--burst", type=int, default=20000, help="calls in the throughput run")
    parser.add_argument("--window", type=int, default=64, help="calls in flight")
    parser.add_argument("--quick", action="store_true", help="200 calls, burst 2000")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.warmup, args.burst = 200, 50, 2000
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
