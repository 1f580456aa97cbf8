"""Replay benchmark: recorded tool calls through a 20-hook Python policy (``otelhooks replay``).

Run from the repository root::

    python benchmarks/bench_replay.py               # 100,000 tool calls (the issue's target)
    python benchmarks/bench_replay.py --calls 5000  # a smoke run

The recording is generated in a temporary folder: OTLP JSON lines as ``--traces-out`` writes them
with content capture on (``execute_tool`` spans with arguments and results, under one
``invoke_agent`` span per run of ``--calls-per-run`` calls), 512 spans per line. Ten tools.

The policy is one YAML file of 20 ``script:`` hooks on ``beforeToolCall`` (Python functions in a
policy file): 10 on one tool each, 5 on an identifier (``^fs/``...), 3 on every tool (argument
checks), 2 ``tool_result_persist`` hooks on every tool; about one in ten calls is denied, one in
ten mocked, one in ten rewritten. Each call meets 5-7 hooks of the 20. ``--all-match`` makes all
20 hooks ``beforeToolCall`` hooks without matchers: the worst case.

Phases, each timed once (wall clock and this process's CPU time, seconds): read the file
(``read_recording``, as ``replay()`` does it: without the cyclic GC, then frozen), map spans to
events and decide them (``recorded_events`` into ``replay_events`` + ``ReplayReport.add``), and
the whole ``otelhooks.replay.replay()`` call without and with ``--otlp-out`` (what ``otelhooks
replay RECORDING --hooks POLICY [--otlp-out FILE]`` runs), and the ratio of the replay's CPU time
to the read's (the target of issue #28: at most 3).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from otelhooks import HooksEngine
from otelhooks.replay import (
    ReplayReport,
    loaded_once,
    read_recording,
    recorded_events,
    replay,
    replay_events,
)

TOOLS = [
    ("fs", "readFile"), ("fs", "writeFile"), ("fs", "deleteFile"), ("web", "search"),
    ("web", "fetch"), ("shell", "exec"), ("calc", "evaluate"), ("db", "query"),
    ("mail", "send"), ("git", "commit"),
]  # fmt: skip

POLICY_PY = """
from otelhooks import Block

def deny_secret_paths(event):
    if "secret" in str(event.args.get("path", "")):
        return Block("secret paths are off limits")

def mock_search(event):
    if event.args.get("n", 0) % 10 == 1:
        event.mock({"content": "cached"})

def rewrite_shell(event):
    if event.args.get("n", 0) % 10 == 2:
        return {"args": {**event.args, "cmd": "echo " + str(event.args.get("cmd", ""))}}

def check_size(event):
    if len(event.args) > 50:
        return Block("too many arguments")

def allow(event):
    return None

def redact(event):
    result = event.result
    if isinstance(result, dict) and "password" in str(result.get("content", "")):
        return {"result": {**result, "content": "[REDACTED]"}}
    return event  # unchanged (None would block: the kernel's intercept contract)
"""


def policy_yaml(all_match: bool) -> str:
    if all_match:
        hooks = [
            {"id": f"h{i:02}", "type": "beforeToolCall", "script": "policy.py:allow"}
            for i in range(17)
        ]
        hooks += [
            {
                "id": "deny-secret",
                "type": "beforeToolCall",
                "script": "policy.py:deny_secret_paths",
            },
            {"id": "mock-search", "type": "beforeToolCall", "script": "policy.py:mock_search"},
            {"id": "rewrite-shell", "type": "beforeToolCall", "script": "policy.py:rewrite_shell"},
        ]
        return json.dumps({"hooks": hooks})
    hooks: list[dict[str, Any]] = []
    for identifier, api in TOOLS:  # 10: one tool each
        fn = {"web": "mock_search", "shell": "rewrite_shell", "fs": "deny_secret_paths"}.get(
            identifier, "allow"
        )
        hooks.append(
            {
                "id": f"tool-{identifier}-{api}",
                "type": "beforeToolCall",
                "matcher": f"^{identifier}/{api}$",
                "script": f"policy.py:{fn}",
            }
        )
    for identifier in ("fs", "web", "shell", "db", "mail"):  # 5: one identifier each
        hooks.append(
            {
                "id": f"ns-{identifier}",
                "type": "beforeToolCall",
                "matcher": f"^{identifier}/",
                "script": "policy.py:allow",
            }
        )
    for i in range(3):  # 3: every tool
        hooks.append(
            {"id": f"args-check-{i}", "type": "beforeToolCall", "script": "policy.py:check_size"}
        )
    for i in range(2):  # 2: every persisted result
        hooks.append(
            {
                "id": f"redact-{i}",
                "type": "tool_result_persist",
                "intercept": True,
                "script": "policy.py:redact",
            }
        )
    assert len(hooks) == 20
    return json.dumps({"hooks": hooks})


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def write_recording(path: Path, calls: int, per_run: int) -> int:
    """``calls`` execute_tool spans under invoke_agent spans; returns the number of spans."""
    rng = random.Random(7)
    spans: list[dict[str, Any]] = []
    total = 0
    resource = {"attributes": [_kv("service.name", "bench-agent")]}

    def flush(file: Any) -> None:
        request = {
            "resourceSpans": [
                {
                    "resource": resource,
                    "scopeSpans": [{"scope": {"name": "otelhooks"}, "spans": spans}],
                }
            ]
        }
        file.write(json.dumps(request, separators=(",", ":")) + "\n")
        spans.clear()

    with open(path, "w") as file:
        n = 0
        while n < calls:
            trace_id = f"{rng.getrandbits(128):032x}"
            root = f"{rng.getrandbits(64):016x}"
            op = f"op_{rng.getrandbits(64):016x}"
            start = 1_790_000_000_000_000_000 + n * 1_000_000
            for _ in range(min(per_run, calls - n)):
                identifier, api = TOOLS[rng.randrange(len(TOOLS))]
                args: dict[str, Any] = {"n": n, "path": "secret.txt" if n % 10 == 3 else f"f{n}"}
                if identifier == "shell":
                    args["cmd"] = "ls -la"
                text = json.dumps(args, separators=(",", ":"), sort_keys=True)
                result = "password=x" if n % 50 == 0 else "ok result"
                attrs = [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", api),
                    _kv("gen_ai.tool.call.id", f"call_{n}"),
                    _kv("gen_ai.tool.type", "function"),
                    _kv("otelhooks.tool.identifier", identifier),
                    _kv("otelhooks.tool.matcher_value", f"{identifier}/{api}"),
                    _kv("otelhooks.tool.args_fp", f"{n:016x}"),
                    _kv("otelhooks.tool.args_size", len(text)),
                    _kv("gen_ai.tool.call.arguments", text),
                    _kv("otelhooks.tool.outcome", "success"),
                    # as recorded: the size of the result beside it (a shorter one was cut)
                    _kv("otelhooks.tool.result_size", len(result)),
                    _kv("gen_ai.tool.call.result", result),
                ]
                spans.append(
                    {
                        "traceId": trace_id,
                        "spanId": f"{rng.getrandbits(64):016x}",
                        "parentSpanId": root,
                        "name": f"execute_tool {api}",
                        "kind": 1,
                        "startTimeUnixNano": str(start + n * 1000),
                        "endTimeUnixNano": str(start + n * 1000 + 500),
                        "attributes": attrs,
                        "status": {},
                    }
                )
                n += 1
                total += 1
                if len(spans) == 512:
                    flush(file)
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": root,
                    "name": "invoke_agent bench-agent",
                    "kind": 1,
                    "startTimeUnixNano": str(start),
                    "endTimeUnixNano": str(start + 10**9),
                    "attributes": [
                        _kv("gen_ai.operation.name", "invoke_agent"),
                        _kv("gen_ai.agent.name", "bench-agent"),
                        _kv("gen_ai.agent.id", "bench-agent"),
                        _kv("otelhooks.operation.id", op),
                    ],
                    "status": {},
                }
            )
            total += 1
        if spans:
            flush(file)
    return total


class _Clock:
    """Wall and CPU seconds since the last lap (CPU: this process, every thread). On a shared
    machine the wall clock includes waiting for a core; the CPU time is the work itself."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self) -> dict[str, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        lap = {"wall_s": round(wall - self._wall, 2), "cpu_s": round(cpu - self._cpu, 2)}
        self._wall, self._cpu = wall, cpu
        return lap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--calls-per-run", type=int, default=1_000)
    parser.add_argument("--all-match", action="store_true", help="all 20 hooks match every call")
    parser.add_argument(
        "--pooled", action="store_true", help="hooks on the handler pool (replay --pooled)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="otelhooks-bench-replay-") as tmp:
        root = Path(tmp)
        (root / "policy.py").write_text(POLICY_PY)
        policy = root / "policy.yaml"
        policy.write_text(policy_yaml(args.all_match))
        recording = root / "recording.jsonl"
        spans_written = write_recording(recording, args.calls, args.calls_per_run)

        results: dict[str, Any] = {
            "calls": args.calls,
            "spans": spans_written,
            "all_match": args.all_match,
            "pooled": args.pooled,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        clock = _Clock()
        with loaded_once():  # as replay() reads
            spans = read_recording(recording)
        results["read"] = clock.lap()
        engine = HooksEngine.from_files([policy])
        report = ReplayReport([h.id for h in engine.registry.hooks()])
        events = 0
        for outcome in replay_events(engine, recorded_events(spans), pooled=args.pooled):
            report.add(outcome)
            events += 1
        results["map_and_decide"] = clock.lap()
        engine.shutdown(1.0)
        results["events"] = events
        results["hooks_run"] = sum(t.seen for t in report.hooks.values())
        results["changes"] = dict(report.changes)
        del spans, report
        gc.unfreeze()

        clock.lap()
        plain = replay([recording], [policy], pooled=args.pooled)
        results["replay"] = replayed = clock.lap()
        whole = replay([recording], [policy], otlp_out=root / "annotated.jsonl", pooled=args.pooled)
        results["replay_with_otlp_out"] = total = clock.lap()
        results["us_per_call"] = {k: round(v / args.calls * 1e6, 1) for k, v in total.items()}
        # the measure: `otelhooks replay REC --hooks POLICY` against reading REC
        results["replay_over_read_cpu"] = round(replayed["cpu_s"] / results["read"]["cpu_s"], 2)
        results["plain_changes"] = dict(plain.changes)
        results["whole_changes"] = dict(whole.changes)
        results["load_avg_1m_after"] = round(os.getloadavg()[0], 2)

    for key, value in results.items():
        print(f"{key:>24}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
