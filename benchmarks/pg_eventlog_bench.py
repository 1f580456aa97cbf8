"""The PostgreSQL event log's write cost: serve CPU per record, records trickling in (one
every 2 ms, as hook events arrive: batches of one to a few) and in bursts of 500 (an OTLP
request's).

``python benchmarks/pg_eventlog_bench.py`` (about a minute) starts a throwaway cluster (Debian's
``postgresql``, as tests/fleet do) and appends records of a span through ``PostgresEventLog``;
CPU is this process's own (``time.process_time``: the writer thread and the caller; sleeping
costs none), PostgreSQL's is not counted. The same script run against an older checkout
(``PYTHONPATH=<checkout>``) gives the before.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

from otelhooks import EventEntry  # noqa: E402


def _entry(n: int) -> object:
    return EventEntry(1_700_000_000_000 + n, "bench", "s", None, "Bash", "after_tool_result",
                      False, True, f"{n:016x}", "ok", f"{n + 1:032x}", f"{n + 1:016x}")  # fmt: skip


def measure(url: str, *, records: int, burst: int, rounds: int) -> dict[str, float]:
    """Median CPU per record over ``rounds``; ``burst`` 1 is the trickle (no wait for commits
    but the last: the writer batches what arrived meanwhile)."""
    from otelhooks import AgentEventsConfig
    from otelhooks._store._open import open_store

    store = open_store(url)
    name = f"bench{burst}_{time.monotonic_ns()}"
    log = store.event_log(AgentEventsConfig(name=name, durable=True, path="x"))
    try:
        # made beforehand: what is measured is the log's cost, not building the records
        entries = [_entry(n) for n in range(records * rounds)]
        per_record: list[float] = []
        n = 0
        for _ in range(rounds):
            started = time.process_time()
            for _ in range(records // burst):
                for _ in range(burst):
                    log.append(entries[n % len(entries)])  # type: ignore[arg-type]
                    n += 1
                if burst == 1:
                    time.sleep(0.002)
                else:
                    log.flush(30)
            log.flush(30)
            per_record.append((time.process_time() - started) / records * 1e6)
        return {"burst": burst, "cpu_us_per_record": round(statistics.median(per_record), 1)}
    finally:
        log.close()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from tests._postgres import postgres_cluster

    results = []
    with postgres_cluster() as cluster:
        for burst in (1, 500):
            results.append(
                measure(cluster.url, records=args.records, burst=burst, rounds=args.rounds)
            )
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
