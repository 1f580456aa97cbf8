"""The replay's phases, one per process, for instruction counts (benchmarks/README.md, "Replay,
twelfth pass").

    python benchmarks/replay_phases.py --make DIR --calls 2000   # recording and 20-hook policy
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/replay_phases.py DIR PHASE             # "Collected : N" instructions

PHASE is ``none`` (imports and the policy only: subtract it from the others), ``read`` (parse and
flatten), ``map`` (one read with the ancestry, spans to events), ``payload`` (and every payload
built), ``decide`` (map, then ``replay_events``: payloads and chains) or ``report`` (and the
report). Each adds one step to the one before it; the cyclic collector is off, as in a replay.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator
from pathlib import Path

from otelhooks import HooksEngine
from otelhooks.events import ToolCallEvent, ToolResultPersistEvent
from otelhooks.replay import (
    RecordedEvent,
    ReplayReport,
    SpanContext,
    iter_spans,
    recorded_events,
    replay_events,
)
from otelhooks.replay._stream import Spans  # the streamed read replay() does, ancestry and all

PHASES = ("none", "read", "map", "payload", "decide", "report")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("phase", nargs="?", choices=PHASES, default="none")
    parser.add_argument("--make", action="store_true", help="write the recording and policy")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    recording, policy = args.dir / "recording.jsonl", args.dir / "policy.yaml"
    if args.make:
        sys.path.insert(0, str(Path(__file__).parent))
        import bench_replay

        args.dir.mkdir(parents=True, exist_ok=True)
        (args.dir / "policy.py").write_text(bench_replay.POLICY_PY)
        policy.write_text(bench_replay.policy_yaml(False))
        bench_replay.write_recording(recording, args.calls, 1000)
        return 0
    engine = HooksEngine.from_files([str(policy)])
    # Both payload schemas built before any phase (pydantic builds them on first use).
    ToolCallEvent(toolCallId="c", identifier="", apiName="a")
    ToolResultPersistEvent(toolName="x")
    gc.disable()

    def events() -> Iterator[RecordedEvent]:
        context = SpanContext()
        return recorded_events(Spans([recording], context, []), context=context)

    if args.phase == "read":
        for _ in iter_spans(recording):
            pass
    elif args.phase == "map":
        for _ in events():
            pass
    elif args.phase == "payload":
        for event in events():
            _ = event.payload
    elif args.phase == "decide":
        for _ in replay_events(engine, events()):
            pass
    elif args.phase == "report":
        report = ReplayReport([h.id for h in engine.registry.hooks()])
        for outcome in replay_events(engine, events()):
            report.add(outcome)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
