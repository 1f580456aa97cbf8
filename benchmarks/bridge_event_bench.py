"""The Claude Code bridge's own work per hook event, in process (issue #33 point 5).

``python benchmarks/bridge_event_bench.py [--turns 500] [--profile]``: serve's hook route
(``claude_code_routes``: sessions in memory, no hook, no HTTP, one thread) answers
``fleet_bench.py``'s turn (``UserPromptSubmit``, 4 x (``PreToolUse`` + ``PostToolUse``),
``Stop``: 10 events) for 16 sessions in turn, after 50 warm-up turns; prints the CPU time per
event (``time.process_time``). ``--profile`` prints cProfile's top functions instead.

Instructions per event, stable on a loaded machine: run it under callgrind twice, with
``--turns 200`` and ``--turns 0``, and divide the difference by 2,000::

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/bridge_event_bench.py --turns 200

(``PYTHONPATH=<another checkout>`` measures that checkout's code: the "before".)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from typing import Any

from otelhooks import HookSpanProcessor
from otelhooks.integrations.claude_code._serve import claude_code_routes


def _turn(n: int) -> list[dict[str, Any]]:
    common = {"session_id": f"s{n % 16}", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}
    events: list[dict[str, Any]] = [
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "clean up"}
    ]
    for i in range(4):
        tool = {
            "tool_name": "Bash",
            "tool_input": {"command": f"ls dir{i}"},
            "tool_use_id": f"t{n}_{i}",
        }
        events.append({**common, **tool, "hook_event_name": "PreToolUse"})
        events.append({**common, **tool, "hook_event_name": "PostToolUse", "tool_response": "ok"})
    events.append({**common, "hook_event_name": "Stop"})
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    route = claude_code_routes(HookSpanProcessor()).route
    for n in range(50):
        for event in _turn(n):
            assert route.answer(event)[0] == 200
    turns = [_turn(n) for n in range(1000, 1000 + args.turns)]
    profile = cProfile.Profile() if args.profile else None
    if profile is not None:
        profile.enable()
    started = time.process_time()
    for events in turns:
        for event in events:
            route.answer(event)
    spent = time.process_time() - started
    if profile is not None:
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
    if args.turns:
        print(f"{spent / (args.turns * 10) * 1e6:.1f} us CPU per hook event", file=sys.stderr)
    route.close()


if __name__ == "__main__":
    main()
