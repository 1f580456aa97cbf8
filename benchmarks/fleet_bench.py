"""A fleet on PostgreSQL against the SQLite default: OTLP ingest and Claude Code hook round trips.

``python benchmarks/fleet_bench.py`` (a few minutes; ``--quick`` for a smoke run)::

    sqlite     one ``otelhooks serve``, no --store (the durable agent_events log a SQLite file)
    pg x1      one instance,  --store postgresql://... (a throwaway cluster, initdb'd here)
    pg x2      two instances, the same --store

Every configuration runs the same ``kind: agent_events`` file (``durable: true``), so every
ingest answer waits for the commit, and the same ``PreToolUse`` guard hook (a Python script).

1. **OTLP ingest.** ``--clients`` threads post OTLP/JSON requests of ``--batch`` tool spans,
   round-robin over the instances, until ``--spans`` were sent; spans/s acknowledged.
2. **Hook round trips.** 16, 64 and 256 concurrent Claude Code sessions (processes, one
   keep-alive connection each, pinned to instance ``n % instances`` as an L4 balancer pins a
   connection), each posting ``UserPromptSubmit``, ``--tools`` x (``PreToolUse`` +
   ``PostToolUse``), ``Stop`` as fast as answered; p50/p99 of every request.

Every figure also gives the serve processes' own CPU time (``/proc/<pid>/stat``, user + system)
per span or per hook event: on two shared cores the load generator competes with the servers,
so wall-clock throughput of two instances cannot show what a second machine would give; the
CPU cost per event can.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from claude_code_bench import (  # noqa: E402
    TOKEN,
    _burst,
    _cpu_s,
    _percentile,
    instance_files,
    start_serve,
)
from receiver_burst import spans_body  # noqa: E402


def _start(
    tmp: Path, store: str | None, *, web: bool = False
) -> tuple[subprocess.Popen[bytes], str]:
    args = [] if web else ["--no-web"]
    args += ["--hooks", str(tmp / "events.yaml"), "--hooks", str(tmp / "hooks.yaml")]
    return start_serve(args + (["--store", store] if store else []))


def _ingest(urls: list[str], spans: int, batch: int, clients: int) -> tuple[int, float]:
    acked = [0]
    lock = threading.Lock()
    next_start = [0]
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}

    def client(n: int) -> None:
        with httpx.Client(timeout=120) as http:
            turn = n
            while True:
                with lock:
                    start = next_start[0]
                    if start >= spans:
                        return
                    next_start[0] += batch
                body = spans_body(min(batch, spans - start), start)
                response = http.post(f"{urls[turn % len(urls)]}/v1/traces", content=body,
                                     headers=headers)  # fmt: skip
                turn += 1
                if response.status_code == 200:
                    rejected = (response.json().get("partialSuccess") or {}).get("rejectedSpans")
                    with lock:
                        acked[0] += min(batch, spans - start) - int(rejected or 0)

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acked[0], time.monotonic() - started


def _sessions(urls: list[str], sessions: int, tools: int, tag: str) -> list[float]:
    if len(urls) == 1:
        return _burst(urls[0], sessions, tools, tag)
    # one burst per instance, at the same time: session n on instance n % len(urls)
    results: list[list[float]] = [[] for _ in urls]
    share = [sessions // len(urls) + (i < sessions % len(urls)) for i in range(len(urls))]
    threads = [
        threading.Thread(
            target=lambda i=i: results[i].extend(_burst(urls[i], share[i], tools, f"{tag}-{i}"))
        )
        for i in range(len(urls))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [v for r in results for v in r]


def run(config: str, store: str | None, instances: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        instance_files(tmp)
        procs = [_start(tmp, store, web=args.web) for _ in range(instances)]
        urls = [url for _, url in procs]
        pids = [proc.pid for proc, _ in procs]
        result: dict[str, Any] = {"config": config, "instances": instances}
        try:
            _ingest(urls, 5000, args.batch, args.clients)  # warm-up
            cpu0 = sum(_cpu_s(p) for p in pids)
            acked, seconds = _ingest(urls, args.spans, args.batch, args.clients)
            cpu = sum(_cpu_s(p) for p in pids) - cpu0
            result["ingest_spans_per_s"] = round(acked / seconds)
            result["ingest_cpu_us_per_span"] = round(cpu / max(acked, 1) * 1e6, 1)
            for sessions in args.session_counts:
                _sessions(urls, min(sessions, 16), args.tools, f"warm{sessions}")
                cpu0 = sum(_cpu_s(p) for p in pids)
                latencies = _sessions(urls, sessions, args.tools, f"s{sessions}")
                cpu = sum(_cpu_s(p) for p in pids) - cpu0
                result[f"hooks_{sessions}"] = {
                    "requests": len(latencies),
                    "p50_ms": round(_percentile(latencies, 0.50) * 1000, 1),
                    "p99_ms": round(_percentile(latencies, 0.99) * 1000, 1),
                    "cpu_ms_per_event": round(cpu / len(latencies) * 1000, 3),
                }
        finally:
            for proc, _ in procs:
                proc.terminate()
            for proc, _ in procs:
                proc.wait(30)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--tools", type=int, default=4)
    parser.add_argument("--sessions", type=int, nargs="+", default=[16, 64, 256],
                        dest="session_counts")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="10,000 spans, 16 sessions")
    parser.add_argument("--web", action="store_true", help="with the web view (its index too)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.quick:
        args.spans, args.session_counts = 10_000, [16]
    from tests._postgres import postgres_cluster

    results = [run("sqlite", None, 1, args)]
    print(json.dumps(results[-1]), flush=True)
    with postgres_cluster() as cluster:
        for instances in (1, 2):
            db = f"bench{instances}"
            import psycopg

            with psycopg.connect(cluster.url, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {db}")
            url = cluster.url.rsplit("/", 1)[0] + f"/{db}"
            results.append(run(f"pg x{instances}", url, instances, args))
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
