"""Event log benchmark: append cost, long-poll wake latency, drain throughput over HTTP.

Run from the repository root::

    python benchmarks/eventlog_bench.py            # the numbers in docs/eventlog.md
    python benchmarks/eventlog_bench.py --quick    # a smoke run (a few seconds)

Every phase is bounded in count and in time (``--max-seconds`` for the whole run); a phase that
runs out of time reports what it measured so far. The server is a real uvicorn on 127.0.0.1.

* append: ``EventLog.append`` of one prebuilt entry, ``--appends`` per round, ``--rounds``
  rounds; the median over rounds of the mean per append, in microseconds. For the durable log
  this is the hand-off to the writer queue (what the observer pays); the commit happens on the
  writer thread. ``observe`` adds the mapping from an ``after_tool_call`` payload (filters,
  args fingerprint) to the append: the whole cost of the observer hook's handler.
* wake: a consumer holds a ``mode=wait`` long-poll; the producer appends one record once the
  poll is waiting; latency is from just before ``append`` to the consumer having the response.
  ``--samples`` samples, p50 and p99 in milliseconds.
* drain: ``--records`` records in the log, read with ``EventLogClient.drain()`` at
  ``limit=1000`` over loopback HTTP; records per second, median of ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from otelhooks import AfterToolCallEvent
from otelhooks._config import AgentEventsConfig
from otelhooks._eventlog import (
    AgentEvents,
    EventEntry,
    EventLog,
    EventLogClient,
    EventLogServer,
    RingEventLog,
    SqliteEventLog,
)

TOKEN = "bench-token"
ENTRY = EventEntry(
    1_700_000_000_000, "bench", "session-1", "user-1", "shop/order_create", "after_tool_result",
    True, True, "a0ebc03bdc71de7b", "ok", "0" * 32, "0" * 16,
)  # fmt: skip


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def passed(self) -> bool:
        return time.monotonic() >= self.at


def bench_append(log: EventLog, appends: int, rounds: int, deadline: Deadline) -> float:
    """Median over rounds of the mean append cost, in microseconds."""
    append = log.append
    means: list[float] = []
    for _ in range(rounds):
        if deadline.passed():
            break
        start = time.perf_counter_ns()
        for _ in range(appends):
            append(ENTRY)
        means.append((time.perf_counter_ns() - start) / appends / 1000)
        log.flush(60)
    return statistics.median(means)


def bench_observe(appends: int, rounds: int, deadline: Deadline) -> float:
    """Median over rounds of the mean cost of the observer handler (map + append), in µs."""
    events = AgentEvents(AgentEventsConfig(capacity=appends, mutating=["order_create"]))
    payload = AfterToolCallEvent(
        toolCallId="c1",
        identifier="shop",
        apiName="order_create",
        args={"sku": "A-1", "qty": 2, "address": {"city": "Berlin", "zip": "10115"}},
        sessionKey="session-1",
        traceId="0" * 32,
        spanId="0" * 16,
    )
    observe = events.observe
    means: list[float] = []
    for _ in range(rounds):
        if deadline.passed():
            break
        start = time.perf_counter_ns()
        for _ in range(appends):
            observe(payload)
        means.append((time.perf_counter_ns() - start) / appends / 1000)
    return statistics.median(means)


def bench_wake(log: EventLog, samples: int, deadline: Deadline) -> list[float]:
    """Wake latencies in milliseconds: append -> response in the consumer's hands."""
    latencies: list[float] = []
    with EventLogServer([log], token=TOKEN) as server:
        http = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        url = f"{server.url}/v1/events"
        cursor = log.stats().head
        appended_at = 0.0
        for _ in range(samples):
            if deadline.passed():
                break
            got: list[float] = []

            def poll(since: int = cursor, into: list[float] = got) -> None:
                http.get(url, params={"mode": "wait", "since": since, "timeout": 10})
                into.append(time.perf_counter())

            poller = threading.Thread(target=poll)
            poller.start()
            while server.app.waiting == 0 and poller.is_alive():
                time.sleep(0.0005)
            time.sleep(0.001)  # the poll is parked in asyncio.wait
            appended_at = time.perf_counter()
            log.append(ENTRY)
            poller.join(10)
            cursor += 1
            if got:
                latencies.append((got[0] - appended_at) * 1000)
        http.close()
    return latencies


def bench_drain(
    make_log: Callable[[], EventLog], records: int, rounds: int, deadline: Deadline
) -> tuple[float, int]:
    """Median records/s of a full drain over HTTP, and the records each round read."""
    log = make_log()
    for _ in range(records):
        log.append(ENTRY)
    log.flush(120)
    rates: list[float] = []
    read = 0
    with EventLogServer([log], token=TOKEN) as server:
        for _ in range(rounds):
            if deadline.passed():
                break
            with EventLogClient(server.url, token=TOKEN, limit=1000) as client:
                start = time.perf_counter()
                read = len(client.drain())
                rates.append(read / (time.perf_counter() - start))
    log.close()
    return statistics.median(rates) if rates else 0.0, read


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--max-seconds", type=float, default=120)
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.appends, args.rounds, args.samples, args.records = 10_000, 3, 30, 10_000
    deadline = Deadline(args.max_seconds)
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "command": "python benchmarks/eventlog_bench.py " + " ".join(sys.argv[1:]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp)
        ring = RingEventLog(args.appends)
        results["append_ring_us"] = bench_append(ring, args.appends, args.rounds, deadline)
        durable = SqliteEventLog(db / "append.sqlite3", max_queue_size=args.appends + 1)
        results["append_durable_us"] = bench_append(durable, args.appends, args.rounds, deadline)
        durable.close()
        results["observe_us"] = bench_observe(args.appends, args.rounds, deadline)

        for name, log in (
            ("ring", RingEventLog(10_000)),
            ("durable", SqliteEventLog(db / "wake.sqlite3")),
        ):
            latencies = bench_wake(log, args.samples, deadline)
            log.close()
            results[f"wake_{name}_ms"] = {
                "samples": len(latencies),
                "p50": pct(latencies, 0.5) if latencies else None,
                "p99": pct(latencies, 0.99) if latencies else None,
            }

        makers: dict[str, Callable[[], EventLog]] = {
            "ring": lambda: RingEventLog(args.records),
            "durable": lambda: SqliteEventLog(
                db / "drain.sqlite3", max_queue_size=args.records + 1
            ),
        }
        for name, make in makers.items():
            rate, read = bench_drain(make, args.records, args.rounds, deadline)
            results[f"drain_{name}"] = {"records_per_s": rate, "records": read}
    results["deadline_hit"] = deadline.passed()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(report(results))
    return 0


def report(r: dict[str, Any]) -> str:
    def ms(d: dict[str, Any], key: str) -> str:
        return f"{d[key]:.2f}" if d[key] is not None else "n/a"

    wr, wd = r["wake_ring_ms"], r["wake_durable_ms"]
    lines = [
        f"`{r['command'].strip()}` on Python {r['python']}, {r['platform']}, {r['cpus']} CPUs",
        "",
        "| measure | in-memory ring | durable (SQLite WAL) |",
        "| --- | --- | --- |",
        f"| append, µs (median of rounds) | {r['append_ring_us']:.2f} | "
        f"{r['append_durable_us']:.2f} (queue hand-off) |",
        f"| observer handler (map + fingerprint + append), µs | {r['observe_us']:.2f} | |",
        f"| long-poll wake, ms p50 / p99 ({wr['samples']} / {wd['samples']} samples) | "
        f"{ms(wr, 'p50')} / {ms(wr, 'p99')} | {ms(wd, 'p50')} / {ms(wd, 'p99')} |",
        f"| drain over HTTP, records/s ({r['drain_ring']['records']} records, limit=1000) | "
        f"{r['drain_ring']['records_per_s']:,.0f} | {r['drain_durable']['records_per_s']:,.0f} |",
    ]
    if r["deadline_hit"]:
        lines.append("\n(the time bound was reached: some phases are partial)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
