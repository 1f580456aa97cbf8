"""Receiver burst: spans acknowledged vs stored when 100,000 tool spans hit ``otelhooks serve``.

Run from the repository root::

    python benchmarks/receiver_burst.py                       # ring log and durable log
    python benchmarks/receiver_burst.py --spans 20000 --quick # a smoke run
    python benchmarks/receiver_burst.py --root /path/to/an/older/checkout   # the same on it

A real ``otelhooks serve`` child process on 127.0.0.1 with one ``kind: agent_events`` log
(``capacity`` above the burst, so the ring evicts nothing; or ``durable: true`` in a temporary
SQLite file). ``--clients`` threads post OTLP/JSON requests of ``--batch`` ``execute_tool``
spans each, as fast as the server answers, until ``--spans`` were sent. A span counts as
*acknowledged* when its request got a 200 and it is not in ``partialSuccess.rejectedSpans``;
*refused* when its request got a 503 (the client may retry it) or was rejected in a partial
success. After the burst the log's ``head`` is read until it stops moving: *stored*. An honest
receiver has ``stored == acknowledged`` (more would be fine; fewer is data loss).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ADMIN = "bench-admin-token"
HERE = Path(__file__).resolve().parent


def spans_body(count: int, start: int) -> bytes:
    spans = [
        {
            "traceId": f"{n + 1:032x}",
            "spanId": f"{n + 1:016x}",
            "name": "execute_tool calc/add",
            "kind": 1,
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000001000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": "calc/add"}},
            ],
        }
        for n in range(start, start + count)
    ]
    request = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}
    return json.dumps(request).encode()


def start_serve(root: Path, config: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    out = workdir / "serve.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    env.update(PYTHONPATH=str(root), OTELHOOKS_ADMIN_TOKEN=ADMIN)
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelhooks", "serve", "--port", "0", "--hooks", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"listening on (http://\S+) ", out.read_text(errors="replace"))
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {out.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)
    raise SystemExit("serve did not start")


def head(url: str) -> int:
    response = httpx.get(
        f"{url}/v1/events",
        params={"mode": "version"},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )
    value: int = response.json()["head"]
    return value


def burst(url: str, spans: int, batch: int, clients: int) -> dict[str, Any]:
    counts = {"acknowledged": 0, "refused": 0, "failed_requests": 0, "requests": 0}
    lock = threading.Lock()
    next_start = [0]

    def client() -> None:
        with httpx.Client(timeout=120) as http:
            while True:
                with lock:
                    start = next_start[0]
                    if start >= spans:
                        return
                    size = min(batch, spans - start)
                    next_start[0] += size
                try:
                    response = http.post(
                        f"{url}/v1/traces",
                        content=spans_body(size, start),
                        headers={
                            "Content-Type": "application/json",
                            "Authorization": f"Bearer {ADMIN}",
                        },
                    )
                except httpx.HTTPError:
                    with lock:
                        counts["failed_requests"] += 1
                    continue
                with lock:
                    counts["requests"] += 1
                    if response.status_code == 200:
                        partial = response.json().get("partialSuccess") or {}
                        rejected = int(partial.get("rejectedSpans", 0))
                        counts["acknowledged"] += size - rejected
                        counts["refused"] += rejected
                    elif response.status_code in (429, 503):
                        counts["refused"] += size
                    else:
                        counts["failed_requests"] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts["burst_s"] = round(time.monotonic() - started, 2)
    # Drain: the head stops moving (the ring's observers run after the acknowledgement).
    last, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 2.0:
        now = head(url)
        if now != last:
            last, stable_since = now, time.monotonic()
        time.sleep(0.2)
    counts["stored"] = last
    counts["lost_after_ack"] = max(0, counts["acknowledged"] - last)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--root", type=Path, default=HERE.parent, help="otelhooks checkout")
    parser.add_argument("--quick", action="store_true", help="ring log only")
    args = parser.parse_args()
    modes = ["ring"] if args.quick else ["ring", "durable"]
    results = {}
    for mode in modes:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            config = workdir / "events.yaml"
            if mode == "ring":
                config.write_text(f"kind: agent_events\ncapacity: {args.spans * 2}\n")
            else:
                db = workdir / "events.sqlite3"
                config.write_text(f"kind: agent_events\ndurable: true\npath: {db}\n")
            proc, url = start_serve(args.root.resolve(), config, workdir)
            try:
                results[mode] = burst(url, args.spans, args.batch, args.clients)
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        print(mode, json.dumps(results[mode]), flush=True)


if __name__ == "__main__":
    main()
