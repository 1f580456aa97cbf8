"""otelhooks benchmarks: the cost of a lifecycle event against the bare OTel SDK and the peers.

    python benchmarks/run.py [--quick] [--json results.json]

Runs, in this order, and prints one table per part:

1. Wall clock: every case built once in this one process, then driven in interleaved rounds (the
   case order rotates every round); per case the median microseconds per unit and the median of
   the per-round ratios to the floor measured in the same round.
2. Instructions (``valgrind --tool=callgrind``, stable from run to run here): per case
   ``(I(N) - I(0)) / N`` from two runs of ``_callgrind.py``, so start-up, set-up and warm-up
   cancel out. The ratio targets are judged on these.
3. Webhooks (``_webhooks.py``): delivery throughput to a local HTTP server on 127.0.0.1, the
   agent loop with a slow or dead endpoint against the same loop without webhooks, and the
   control-hook round trip.
4. Memory: ``_memory.py`` in a fresh process, resident memory over many lifecycle events with slow
   observers, and with the webhook endpoint down; drops read from the ``otelhooks.dropped``
   metric.

Peers run when ``benchmarks/.venv-peers`` exists (``python benchmarks/run.py --setup-peers``
creates it): the script then re-runs itself with that venv's interpreter, which sees the system
site-packages (otelhooks, the SDK) plus the peers, so everything is measured side by side.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _cases import CASES, Bench, Case  # noqa: E402
from _webhooks import print_webhooks, run_all  # noqa: E402

PEER_VENV = HERE / ".venv-peers"
PEER_PYTHON = PEER_VENV / "bin" / "python"
PEER_PACKAGES = ("openai-agents", "logfire", "openinference-instrumentation", "langfuse")
FLOORS = {"tool": "floor", "step": "floor_step"}
CALLGRIND_CASES = (
    "floor",
    "floor_event",
    "floor_distinct",
    "floor_observed",
    "oh_0",
    "oh_0_sdk_metrics",
    "oh_0_user_meter_provider",
    "oh_0_cold",
    "oh_0_nometrics",
    "oh_100",
    "oh_100_cold",
    "oh_100_nometrics",
    "oh_1_observer",
    "floor_step",
    "oh_step",
    "oh_step_nometrics",
)
# Ratios to the floor of the same run (issue "one engine": 0 hooks, SDK metrics, a user's own
# MeterProvider, 100 hooks warm and cold, one matching observer in total; its agent-thread share
# is reported apart).
TARGETS = {
    "oh_0": 1.25,
    "oh_0_sdk_metrics": 1.5,
    "oh_0_user_meter_provider": 1.5,
    "oh_100": 1.3,
    "oh_100_cold": 1.3,
    "oh_1_observer": 1.5,
}
# Cases compared with a floor of their own shape (a new span name per call costs the SDK too; an
# observed call's span carries otelhooks.hook.matched, which the SDK cleans and keeps).
FLOOR_OF = {
    "oh_0_cold": "floor_distinct",
    "oh_100_cold": "floor_distinct",
    "oh_1_observer": "floor_observed",
}
# The observer's share on the agent's thread: its extra there over 0 hooks.
AGENT_EXTRA_TARGET = 0.2


@dataclass
class Result:
    case: Case
    per_unit_us: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)

    @property
    def median_us(self) -> float:
        return statistics.median(self.per_unit_us)

    def quartiles(self) -> tuple[float, float]:
        if len(self.per_unit_us) < 2:
            return self.median_us, self.median_us
        q = statistics.quantiles(self.per_unit_us, n=4)
        return q[0], q[2]


# -- wall clock ----------------------------------------------------------------------------------


def _timed(bench: Bench, n: int) -> float:
    bench.round_start()
    gc.collect()
    start = time.perf_counter()
    bench.run(n)
    elapsed = time.perf_counter() - start
    bench.round_end()
    return elapsed / n * 1e6


def wall_clock(cases: list[Case], *, rounds: int, batch_ms: float) -> dict[str, Result]:
    benches: dict[str, Bench] = {}
    for case in cases:
        print(f"  building {case.key}", file=sys.stderr)
        benches[case.key] = case.make()
    # Calibrate: enough units per batch for ``batch_ms``, bounded both ways.
    sizes: dict[str, int] = {}
    for key, bench in benches.items():
        _timed(bench, 50)
        us = _timed(bench, 200)
        sizes[key] = max(50, min(20_000, int(batch_ms * 1000 / max(us, 0.1))))
    results = {c.key: Result(c) for c in cases}
    keys = list(benches)
    for r in range(rounds + 1):  # round 0 is a warm-up and is dropped
        order = keys[r % len(keys) :] + keys[: r % len(keys)]
        this_round = {k: _timed(benches[k], sizes[k]) for k in order}
        print(f"  round {r}/{rounds}", file=sys.stderr)
        if r == 0:
            continue
        for key, us in this_round.items():
            results[key].per_unit_us.append(us)
            floor = FLOORS[results[key].case.group]
            if floor in this_round:
                results[key].ratios.append(us / this_round[floor])
    for bench in benches.values():
        bench.close()
    return results


# -- callgrind -----------------------------------------------------------------------------------


def _instructions(key: str, n: int) -> tuple[int, int]:
    """(all threads, the agent's thread) instructions of one ``_callgrind.py`` run."""
    with tempfile.TemporaryDirectory() as out_dir:
        out_file = Path(out_dir) / "cg.out"
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                # Fair thread scheduling: with valgrind's default, the thread that holds its
                # lock may take it again and again, starving the observer worker until its
                # queue overflows (a third of the events dropped in one run seen alone).
                "--fair-sched=yes",
                f"--callgrind-out-file={out_file}",
                sys.executable,
                str(HERE / "_callgrind.py"),
                key,
                str(n),
            ],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        total = next(
            (
                int(line.rsplit(":", 1)[1])
                for line in out.stderr.splitlines()
                if "Collected :" in line
            ),
            None,
        )
        if total is None or out.returncode != 0:
            raise RuntimeError(f"callgrind run of {key} N={n} failed:\n{out.stderr[-2000:]}")
        # One file per thread (cg.out-01 is the main thread, the agent's); "totals:" per file.
        main = 0
        for path in Path(out_dir).glob("cg.out*-01"):
            for line in path.read_text().splitlines():
                if line.startswith(("totals:", "summary:")):
                    main = int(line.split()[1])
                    break
        return total, main


def callgrind(keys: list[str], sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """(all threads, agent's thread) instructions per unit for each case, two valgrind runs at a
    time (2 cores here)."""
    jobs = [(k, m) for k in keys for m in (0, sizes[k])]
    with ThreadPoolExecutor(2) as pool:
        totals = dict(zip(jobs, pool.map(lambda j: _instructions(*j), jobs), strict=True))
    return {
        k: (
            (totals[(k, sizes[k])][0] - totals[(k, 0)][0]) // sizes[k],
            (totals[(k, sizes[k])][1] - totals[(k, 0)][1]) // sizes[k],
        )
        for k in keys
    }


# -- memory --------------------------------------------------------------------------------------


def memory(events: int, sink: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(HERE / "_memory.py"), "--events", str(events), "--sink", sink],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    raise RuntimeError(f"memory case failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


# -- output --------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from opentelemetry.sdk.version import __version__ as sdk_version

    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "opentelemetry_sdk": sdk_version,
        "platform": platform.platform(),
    }


def print_wall(results: dict[str, Result]) -> None:
    print("\nWall clock: median per unit over interleaved rounds; x floor = median per-round ratio")
    print(f"{'case':52} {'unit':5} {'us':>8} {'p25-p75':>15} {'x floor':>8}")
    for res in results.values():
        lo, hi = res.quartiles()
        ratio = statistics.median(res.ratios) if res.ratios else float("nan")
        print(
            f"{res.case.label:52} {res.case.group:5} {res.median_us:8.1f} "
            f"{f'{lo:.1f}-{hi:.1f}':>15} {ratio:8.2f}"
        )


def print_callgrind(instr: dict[str, tuple[int, int]], labels: dict[str, Case], n: int) -> None:
    print(
        f"\nInstructions per unit (callgrind, (I(N) - I(0)) / N, N={n} tool calls, {n // 4} steps;"
        " 'agent' = the calling thread alone)"
    )
    print(f"{'case':60} {'unit':5} {'instr':>10} {'x floor':>8} {'agent x':>8} {'target':>10}")
    for key, (count, agent) in instr.items():
        case = labels[key]
        floor_key = FLOOR_OF.get(key, FLOORS[case.group])
        floor, floor_agent = instr.get(floor_key, (0, 0))
        ratio = count / floor if floor else float("nan")
        agent_ratio = agent / floor_agent if floor_agent else float("nan")
        target = TARGETS.get(key)
        mark = "" if target is None else f"<={target}{' ok' if ratio <= target else ' MISS'}"
        print(
            f"{case.label:60} {case.group:5} {count:10,} {ratio:8.2f} {agent_ratio:8.2f} {mark:>10}"
        )
    print_observer_share(instr)


def print_observer_share(instr: dict[str, tuple[int, int]]) -> None:
    """The observer's extra on the agent's thread over 0 hooks, against both floors: the plain
    one, and the observed shape's (net of what the SDK spends on the one more attribute)."""
    if not {"floor", "floor_observed", "oh_0", "oh_1_observer"} <= set(instr):
        return
    floor, floor_agent = instr["floor"]
    shaped, shaped_agent = instr["floor_observed"]
    extra = instr["oh_1_observer"][1] - instr["oh_0"][1]
    net = extra - (shaped_agent - floor_agent)
    target = AGENT_EXTRA_TARGET
    print(
        f"one observer, its extra on the agent's thread over 0 hooks: {extra:,} instructions,"
        f" {extra / floor:.3f} x floor; net of the SDK's cost of otelhooks.hook.matched"
        f" ({shaped_agent - floor_agent:,}) {net / shaped:.3f} x floor_observed"
        f" (target <= {target}{' ok' if net / shaped <= target else ' MISS'});"
        f" all threads {instr['oh_1_observer'][0] / floor:.3f} x floor"
    )


def print_memory(mem: dict[str, Any]) -> None:
    print(f"\nMemory ({mem['sink']}: {mem['sink_description']})")
    for key in (
        "lifecycle_events",
        "submissions",
        "seconds",
        "rss_before_mb",
        "rss_after_mb",
        "rss_peak_mb",
        "rss_growth_mb",
        "dropped_during_run",
        "queue_dropped_counter",
        "queue_left",
        "dropped_after_shutdown",
    ):
        print(f"  {key:22} {mem[key]}")


# -- main ----------------------------------------------------------------------------------------


def setup_peers() -> None:
    """Create ``.venv-peers`` with the system site-packages visible and the peers installed,
    holding the OTel SDK, pydantic and httpx at the versions the project runs with."""
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    keep = ("opentelemetry", "pydantic", "httpx", "protobuf")
    pins = [line for line in freeze.splitlines() if line.lower().startswith(keep)]
    constraints = PEER_VENV.with_suffix(".constraints.txt")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(PEER_VENV)], check=True
    )
    constraints.write_text("\n".join(pins) + "\n")
    subprocess.run(
        [str(PEER_PYTHON), "-m", "pip", "install", "-q", "-c", str(constraints), *PEER_PACKAGES],
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="otelhooks benchmarks (see benchmarks/README.md)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, N and events")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer libraries")
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-webhooks", action="store_true", help="skip the webhook cases")
    parser.add_argument("--cases", help="comma-separated case keys (default: all)")
    parser.add_argument("--setup-peers", action="store_true", help=f"create {PEER_VENV.name}")
    args = parser.parse_args()
    if args.setup_peers:
        setup_peers()
        return
    in_peer_venv = Path(sys.prefix).resolve() == PEER_VENV.resolve()
    if not args.no_peers and not in_peer_venv and PEER_PYTHON.exists():
        os.execv(str(PEER_PYTHON), [str(PEER_PYTHON), __file__, *sys.argv[1:]])

    # N = 6,000 tool calls under callgrind: enough to span several garbage-collector cycles, so
    # where one lands no longer moves the count per unit by ~5 % as it did at N = 2,000.
    rounds, batch_ms, n, events = (
        (5, 20.0, 500, 100_000) if args.quick else (15, 60.0, 6000, 1_000_000)
    )
    cases = list(CASES)
    missing: dict[str, str] = {}
    if not args.no_peers:
        from _peers import available_peers

        peers, missing = available_peers()
        cases += peers
        if not in_peer_venv:
            missing["all peers"] = f"no {PEER_VENV.name}: run with --setup-peers first"
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c.key in wanted or c.key in FLOORS.values()]
    labels = {c.key: c for c in cases}
    report: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "peers_missing": missing,
    }

    print("wall clock ...", file=sys.stderr)
    results = wall_clock(cases, rounds=rounds, batch_ms=batch_ms)
    report["wall_clock"] = {
        k: {
            "label": r.case.label,
            "unit": r.case.group,
            "median_us": round(r.median_us, 2),
            "p25_p75_us": [round(x, 2) for x in r.quartiles()],
            "x_floor": round(statistics.median(r.ratios), 3) if r.ratios else None,
            "rounds": len(r.per_unit_us),
        }
        for k, r in results.items()
    }
    print_wall(results)

    if not args.no_callgrind:
        keys = [k for k in CALLGRIND_CASES if k in labels]
        keys += [c.key for c in cases if c.peer]
        print("\ncallgrind ...", file=sys.stderr)
        # A step is five spans: a quarter of the units gives the same precision in less time.
        sizes = {k: n // 4 if labels[k].group == "step" else n for k in keys}
        instr = callgrind(keys, sizes)
        report["callgrind"] = {
            "n": sizes,
            "instructions_per_unit": {k: v[0] for k, v in instr.items()},
            "agent_thread_instructions_per_unit": {k: v[1] for k, v in instr.items()},
        }
        print_callgrind(instr, labels, n)

    if not args.no_webhooks:
        print("\nwebhooks ...", file=sys.stderr)
        report["webhooks"] = run_all(quick=args.quick)
        print_webhooks(report["webhooks"])

    if not args.no_memory:
        print("\nmemory ...", file=sys.stderr)
        mem = memory(events, "slow-observer")
        report["memory"] = mem
        print_memory(mem)
        if not args.no_webhooks:
            mem = memory(events, "webhook-down")
            report["memory_webhook_down"] = mem
            print_memory(mem)

    if missing:
        print("\npeers not measured: " + "; ".join(f"{k} ({v})" for k, v in missing.items()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
