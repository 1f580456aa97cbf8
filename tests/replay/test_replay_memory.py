"""Replay memory that does not grow like the recording: the report spools the events it lists
(nothing of an outcome is kept), and the ancestry keeps one entry per span without facts of its
own. Also the ancestry's answers in the orders a recording can list spans."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from otelhooks import Block, HooksEngine
from otelhooks.replay import SpanContext, replay


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _recording(path: Path, calls: int) -> None:
    """Runs of 100 tool calls, each run's agent span written after its calls (as it ends)."""
    with path.open("w") as file:
        for run in range(calls // 100):
            trace, agent = f"{run + 1:032x}", f"{run + 1:08x}00000000"
            spans = [
                {
                    "traceId": trace,
                    "spanId": f"{run + 1:08x}{n + 1:08x}",
                    "parentSpanId": agent,
                    "name": "execute_tool rm",
                    "attributes": [
                        _kv("gen_ai.operation.name", "execute_tool"),
                        _kv("gen_ai.tool.name", "rm"),
                        _kv("gen_ai.tool.call.id", f"call_{n}"),
                        _kv("otelhooks.tool.identifier", "fs"),
                        _kv("otelhooks.tool.matcher_value", "fs/rm"),
                        _kv("gen_ai.tool.call.arguments", json.dumps({"path": f"f{n}"})),
                    ],
                }
                for n in range(100)
            ]
            spans.append(
                {
                    "traceId": trace,
                    "spanId": agent,
                    "name": "invoke_agent a",
                    "attributes": [
                        _kv("gen_ai.operation.name", "invoke_agent"),
                        _kv("gen_ai.agent.name", f"agent-{run}"),
                    ],
                }
            )
            scope = {"scope": {"name": "otelhooks"}, "spans": spans}
            file.write(json.dumps({"resourceSpans": [{"scopeSpans": [scope]}]}) + "\n")


def _peak(folder: Path, calls: int) -> int:
    """tracemalloc's peak while ``calls`` recorded calls are replayed, every one denied (and so
    listed by the report)."""
    path = folder / f"calls-{calls}.jsonl"
    _recording(path, calls)
    engine = HooksEngine(
        [{"id": "no-rm", "type": "beforeToolCall", "handler": lambda event: Block("no")}]
    )
    try:
        replay([path], engine)  # once untraced: what is built on first use is built
        tracemalloc.start()
        try:
            report = replay([path], engine)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        engine.shutdown(1.0)
    assert report.changes["deny"] == calls
    assert sum(1 for _ in report.listed()) == calls
    return peak


def test_twice_the_listed_events_do_not_take_twice_the_memory(tmp_path: Path) -> None:
    # Each listed event kept as its outcome (span, payload fields, steps) would add about 5 KB;
    # a spooled one adds nothing, and each span about a hundred bytes of ancestry.
    small, large = _peak(tmp_path, 2_000), _peak(tmp_path, 4_000)
    assert (large - small) / 2_000 < 1_000, (small, large)


def test_a_span_without_facts_stands_for_its_parent_in_every_order() -> None:
    context = SpanContext()
    grandchild = {"traceId": "t", "spanId": "g", "parentSpanId": "c"}
    child = {"traceId": "t", "spanId": "c", "parentSpanId": "r"}
    root = {"traceId": "t", "spanId": "r", "attributes": {"gen_ai.agent.name": "x"}}
    context.add(grandchild)  # written first: its parent ends after it
    assert context.waiting_for(grandchild) == ("t", "c")
    context.add(child)
    assert context.waiting_for(grandchild) == ("t", "r")
    context.add({**child, "parentSpanId": "elsewhere"})  # a retried export: the first wins
    assert context.waiting_for(child) == ("t", "r")
    context.add(root)
    assert context.complete(grandchild)
    assert context.of(grandchild) == context.of(child) == {"agent": "x"}
    # A child written after its parent (another process's batch), below a span without facts.
    late = {
        "traceId": "t",
        "spanId": "l",
        "parentSpanId": "g",
        "attributes": {"otelhooks.user.id": "u"},
    }
    context.add(late)
    assert context.complete(late)
    assert context.of(late) == {"agent": "x", "userId": "u"}
    # The same span ids in another trace are other spans.
    other = {"traceId": "u", "spanId": "g", "parentSpanId": "c"}
    assert not context.complete(other)
    assert context.of(other) == {}


def test_otlp_ids_and_a_cycle_in_a_malformed_file() -> None:
    context = SpanContext()
    trace, parent, child = "ab" * 16, "01" * 8, "02" * 8
    context.add({"traceId": trace, "spanId": child, "parentSpanId": parent})
    assert context.waiting_for({"traceId": trace, "spanId": child}) == (trace, parent)
    context.add({"traceId": "t", "spanId": "a", "parentSpanId": "b"})
    context.add({"traceId": "t", "spanId": "b", "parentSpanId": "a"})
    assert context.complete({"traceId": "t", "spanId": "a"})
    assert context.of({"traceId": "t", "spanId": "b"}) == {}


def test_a_line_too_long_to_be_a_request_is_named_not_read_whole(tmp_path: Path) -> None:
    """A recording whose first line runs for 130 MiB (a torn file, a line never ended) was read
    whole and decoded: about three times its size in memory (844 MB at 256 MiB, 1.6 GB at
    512 MiB; a 2 GiB line takes the memory of a small machine). Such a line is now passed over
    a MiB at a time, named, and the rest replayed."""
    import os
    import subprocess
    import sys

    recording = tmp_path / "long.jsonl"
    with recording.open("wb") as file:
        file.write(b'{"resourceSpans": [], "note": "')
        chunk = b"a" * (1 << 20)
        for _ in range(130):
            file.write(chunk)
        file.write(b'"}\n')
    _recording(tmp_path / "calls.jsonl", 100)
    with recording.open("ab") as file:
        file.write((tmp_path / "calls.jsonl").read_bytes())
    (tmp_path / "policy.yaml").write_text(
        "hooks:\n  - id: no-rm\n    type: beforeToolCall\n    matcher: fs/rm\n    command: exit 2\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    # the replay's own peak, said as it exits: VmHWM is this process image's, where ru_maxrss
    # keeps the peak of the pytest worker it was started from (680 MB late in a full run)
    measured = (
        "import atexit, runpy, sys; atexit.register(lambda: print('peak', [line.split()[1] "
        "for line in open('/proc/self/status') if line.startswith('VmHWM:')][0], "
        "file=sys.stderr)); "
        "sys.argv[0] = 'otelhooks'; runpy.run_module('otelhooks', run_name='__main__')"
    )
    done = subprocess.run(
        [
            *(sys.executable, "-c", measured, "replay", str(recording)),
            *("--hooks", "policy.yaml", "--format", "json"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "long.jsonl:1: a line over 67108864 bytes: not read" in done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["changes"] == {"deny": 100}  # the lines after it are replayed
    peak_kb = int(done.stderr.rsplit("peak ", 1)[1].split()[0])
    assert peak_kb < 300_000, peak_kb  # 190 MB; the line read whole: 450 MB
