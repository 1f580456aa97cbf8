"""What a Claude Code ``PreToolUse`` pays to read its session's spend for a budget guard.

``python benchmarks/spend_read_bench.py N [--file | --store URL] [--hooks budget|script]``:
serve's hook route (``claude_code_routes`` around a ``HookSpanProcessor``, sessions in memory,
with ``--file`` in a SQLite file as beside a durable event log, with ``--store`` in a
PostgreSQL store) with one ``PreToolUse`` guard: a
``session_usd`` budget (whose payload reads the spend) or ``claude_code_bench.py``'s script
guard blocking ``rm -rf`` (``script``: its payload reads the spend too, since every
``before_tool_call`` payload under serve carries it). One session has one priced model call (a
received ``api_request``); each unit is its ``PreToolUse`` and ``PostToolUse`` handed to the
route's ``_decide`` on this thread. Prints the CPU and wall time per unit; under ``valgrind
--tool=callgrind`` run it with N and with 0 and divide the difference by N.

Measures the checkout it sits in: for before, copy this file into another checkout's
``benchmarks/`` and run it there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from otelhooks import HookSpanProcessor, load_config
from otelhooks._eventlog._otlp_signals import ReceivedLog
from otelhooks._store._open import open_store
from otelhooks.integrations.claude_code._serve import claude_code_routes
from otelhooks.integrations.coding_agents._input import parse_input

GUARD = """\
from otelhooks import Block


def guard(event):
    if "rm -rf" in str(getattr(event, "args", "")):
        return Block("rm -rf is not allowed here")
    return event
"""
HOOKS = {
    "budget": "hooks:\n  - id: cap\n    type: beforeToolCall\n    budget: {{session_usd: 5}}\n",
    "script": "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
    "    script: {folder}/guard.py:guard\n",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--file", action="store_true", help="sessions in a SQLite file")
    parser.add_argument("--store", help="sessions in this PostgreSQL store")
    parser.add_argument("--hooks", choices=sorted(HOOKS), default="budget")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hooks = Path(tmp) / "hooks.yaml"
        (Path(tmp) / "guard.py").write_text(GUARD)
        hooks.write_text(HOOKS[args.hooks].format(folder=tmp))
        processor = HookSpanProcessor()
        processor.engine.register(load_config([str(hooks)]).hooks)
        path = Path(tmp) / "sessions.sqlite3" if args.file else None
        sessions = open_store(args.store).claude_code_sessions() if args.store else None
        serving = claude_code_routes(processor, sessions_path=path, sessions=sessions)
        cost = {"model": "claude-sonnet-4-5", "cost_usd": 0.01}
        session = f"s-{os.getpid()}"  # a session of its own in a store that outlives the run
        cost["session.id"] = session
        serving.span_processor.on_logs([ReceivedLog("api_request", cost, "", 0, 0, 0)])
        common = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}

        def unit(i: int) -> None:
            tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": f"t{i}"}
            for name in ("PreToolUse", "PostToolUse"):
                body = {**common, **tool, "hook_event_name": name, "tool_response": "ok"}
                serving.route._decide(parse_input(json.dumps(body).encode()), 8.0)

        for i in range(200):  # warm
            unit(-1 - i)
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(args.n):
            unit(i)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        n = max(args.n, 1)
        sys.stdout.write(f"cpu {cpu / n * 1e6:.1f} us/unit, wall {wall / n * 1e6:.1f} us/unit\n")
        sys.stdout.flush()
    os._exit(0)  # no teardown: its cost would not depend on N


if __name__ == "__main__":
    main()
