"""Many long-polls on ``otelhooks serve`` woken by one write: how late is the last one answered?

``python benchmarks/longpoll_wake_bench.py [--pollers 1000] [--pythonpath TREE]``::

    sqlite     one ``otelhooks serve``, no --store (the durable agent_events log a SQLite file)
    pg x1      one instance,  --store postgresql://... (a throwaway cluster, initdb'd here)
    pg x2      two instances, the same --store; the pollers split between them, the write
               through the first

``--pollers`` long-polls (``GET /v1/events?mode=wait&since=<head>&limit=<--limit>``, one
connection each, from this process) wait; then one OTLP/JSON request of ``--spans`` tool spans is
posted. Reported: from that request's acknowledgement (and from its start) to the first, median
and last poller answered (each answer must hold records), and the CPU time of the serve
processes and of this client over the wake-up. ``--rounds`` repeats it (pollers from the new head).

``--store-delay-ms D`` puts PostgreSQL D ms away (a proxy on 127.0.0.1 holds what serve sends
it that long, from when the pollers wait): a long-poll's own read is a round trip.

``--client shared`` sends every long-poll through one ``httpx.AsyncClient`` (a pool of
``--pollers`` connections); ``--client each`` gives each poller its own ``AsyncClient`` (one
TLS context shared, never used: the URLs are http). The shared pool re-scans all its
connections for every request and response (httpcore's ``_assign_requests_to_connections``):
quadratic in the pollers, about 1.5 ms of client CPU per answer at 1,000, which on a loaded
machine made the *client* take seconds to see answers the server had sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from claude_code_bench import TOKEN, _cpu_s, start_serve  # noqa: E402
from receiver_burst import spans_body  # noqa: E402

EVENTS = "kind: agent_events\nname: bench\non: [after_tool_result]\ndurable: true\npath: {path}\n"


async def _round(
    urls: list[str], pids: list[int], since: int, tag: int, args: argparse.Namespace
) -> dict[str, Any]:
    pollers = args.pollers
    proxy = args.proxy
    limits = httpx.Limits(max_connections=pollers + 8, max_keepalive_connections=pollers + 8)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    tls = ssl.create_default_context()
    answered: list[float] = []
    bad: list[str] = []
    async with httpx.AsyncClient(limits=limits, timeout=120, headers=headers) as client:

        async def get(url: str, params: dict[str, Any]) -> httpx.Response:
            if args.client == "shared":
                return await client.get(url, params=params)
            async with httpx.AsyncClient(timeout=120, headers=headers, verify=tls) as own:
                return await own.get(url, params=params)

        async def poll(n: int) -> None:
            url = urls[n % len(urls)]
            params = {"mode": "wait", "since": since, "timeout": 60, "limit": args.limit}
            response = await get(f"{url}/v1/events", params)
            answered.append(time.monotonic())
            if response.status_code != 200 or not response.json()["events"]:
                bad.append(f"{response.status_code} {response.text[:120]}")

        tasks = [asyncio.create_task(poll(n)) for n in range(pollers)]
        await asyncio.sleep(3.0 + pollers / 250)  # every poller connected and waiting
        early = len(answered)
        if proxy is not None:
            proxy.delay_s = args.store_delay_ms / 1000
        serve0, client0 = sum(_cpu_s(p) for p in pids), time.process_time()
        posted = time.monotonic()
        response = await client.post(
            f"{urls[0]}/v1/traces",
            content=spans_body(args.spans, tag),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
        )
        acked = time.monotonic()
        assert response.status_code == 200, response.text
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        if proxy is not None:
            proxy.delay_s = 0.0
        client_cpu = time.process_time() - client0
        serve_cpu = sum(_cpu_s(p) for p in pids) - serve0
    late = sorted(t - acked for t in answered)
    return {
        "answered_before_write": early,
        "bad_answers": len(bad),
        "bad_sample": bad[:2],
        "ack_ms": round((acked - posted) * 1000, 1),
        "first_ms": round(late[0] * 1000, 1),
        "median_ms": round(late[len(late) // 2] * 1000, 1),
        "last_ms": round(late[-1] * 1000, 1),
        "last_from_post_ms": round((late[-1] + acked - posted) * 1000, 1),
        "serve_cpu_s": round(serve_cpu, 2),
        "client_cpu_s": round(client_cpu, 2),
    }


def run(config: str, store: str | None, instances: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "events.yaml").write_text(EVENTS.format(path=tmp / "events.sqlite3"))
        extra = ["--no-web", "--hooks", str(tmp / "events.yaml")]
        extra += ["--max-waiters", str(args.pollers + 16)]
        extra += ["--store", store] if store else []
        procs = [start_serve(extra, pythonpath=args.pythonpath) for _ in range(instances)]
        urls = [url for _, url in procs]
        pids = [proc.pid for proc, _ in procs]
        result: dict[str, Any] = {"config": config, "pollers": args.pollers, "rounds": []}
        try:
            for n in range(args.rounds):
                since = n * args.spans
                one = asyncio.run(_round(urls, pids, since, 10_000 + since, args))
                result["rounds"].append(one)
                tags = {"config": config, "client": args.client, "delay_ms": args.store_delay_ms}
                print(json.dumps({**tags, **one}), flush=True)
        finally:
            for proc, _ in procs:
                proc.terminate()
            for proc, _ in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pollers", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spans", type=int, default=1, help="spans in the write")
    parser.add_argument("--limit", type=int, default=100, help="the long-polls' limit")
    parser.add_argument("--client", choices=["shared", "each"], default="each")
    parser.add_argument("--store-delay-ms", type=float, default=0.0)
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pythonpath", type=Path, default=REPO, help="the otelhooks tree run")
    parser.add_argument("--only", choices=["sqlite", "pg"], help="one store only")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    args.proxy = None
    results = []
    if args.only != "pg":
        results.append(run("sqlite", None, 1, args))
    if args.only != "sqlite":
        from tests._postgres import postgres_cluster
        from tests.fleet._fleet import StallingProxy

        with postgres_cluster() as cluster:
            for instances in args.instances:
                import psycopg

                db = f"bench{instances}"
                with psycopg.connect(cluster.url, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {db}")
                url = cluster.url.rsplit("/", 1)[0] + f"/{db}"
                if args.store_delay_ms:
                    args.proxy = StallingProxy(cluster.port)
                    url = args.proxy.url(url)
                results.append(run(f"pg x{instances}", url, instances, args))
                if args.proxy is not None:
                    args.proxy.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
