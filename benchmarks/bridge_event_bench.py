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

``--instance``: the work ``serve_cpu_bench.py``'s server does per hook event, minus HTTP. A
server is built as that benchmark starts ``otelhooks serve`` (``claude_code_bench.instance_files``:
the ``PreToolUse`` guard script, the durable ``agent_events`` log, so the sessions are in a
SQLite file beside it; not started, no web view), and each event's JSON body goes the road
of the hook route's ASGI handler: ``parse_input``, then answered inline or, for an event a
hook may decide, on this same thread as the deciding thread would (``--hop``: through the
route's ``FairRunner`` from an event loop, as served). The turn is ``serve_cpu_bench.py``'s
(``--tools`` tools, every fourth one an ``rm -rf`` the guard denies, no ``PostToolUse`` after
it), one fresh session per turn. Prints the CPU time per event and per kind of event
(``time.process_time``: the event log's writer and the exporters' threads included).
Instructions by kind: the callgrind difference of ``--tools 0`` (``UserPromptSubmit`` and
``Stop``), ``--tools 1`` (one denied ``PreToolUse`` more) and ``--tools 2`` (an allowed
``PreToolUse`` and its ``PostToolUse`` more), each against ``--turns 0``.

``--hop-only``: the hop alone, ``FairRunner.run`` of a call doing nothing from an event loop
(the futures, the two timers, the wake-ups of a thread), CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from otelhooks import HookSpanProcessor
from otelhooks.integrations.claude_code._serve import claude_code_routes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from claude_code_bench import TOKEN, _session_events, instance_files  # noqa: E402


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


def _served(route: Any, raw: bytes) -> tuple[int, bytes]:
    """What the hook route's ASGI handler does with a body, minus HTTP and the thread hop."""
    from otelhooks._dispatch._calls import waited_within
    from otelhooks.integrations.coding_agents._answers import ANSWERING_EVENTS
    from otelhooks.integrations.coding_agents._input import parse_input

    payload = parse_input(raw)
    event = str(payload.get("hook_event_name") or "")
    quiet = event not in ANSWERING_EVENTS or route._quiet(payload)
    if quiet and route._local:
        with waited_within(route.decision_timeout_s, only=route._recorder_ids):
            return route.answer(payload)  # type: ignore[no-any-return]
    deadline_s = route._deadline_s() if not quiet else route.decision_timeout_s
    only = route._recorder_ids if quiet else None
    return route._decide(payload, deadline_s, only)  # type: ignore[no-any-return]


async def _hopped(route: Any, raw: bytes) -> tuple[int, bytes]:
    """The ASGI handler's own road: the deciding events through the route's runner."""
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await route({"type": "http"}, receive, send)
    return sent[0]["status"], sent[1]["body"]


def _instance(args: argparse.Namespace) -> None:
    from otelhooks._eventlog._server import serve
    from otelhooks.integrations.coding_agents._http import HOOK_ROUTE

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        instance_files(tmp)
        hooks = [tmp / "events.yaml", tmp / "hooks.yaml"]
        server = serve(hooks, token=TOKEN, start=False, web=False)
        route = server.app.routes[HOOK_ROUTE]
        loop = asyncio.new_event_loop()

        def one(raw: bytes) -> tuple[int, bytes]:
            if args.hop:
                return loop.run_until_complete(_hopped(route, raw))
            return _served(route, raw)

        def turn(name: str, tools: int = args.tools) -> list[tuple[str, bytes]]:
            events = _session_events(name, tools)
            return [(e["hook_event_name"], json.dumps(e).encode()) for e in events]

        for n in range(50):  # the same warm-up whatever --tools: one --turns 0 for all
            for _, raw in turn(f"warm-{n}", 4):
                assert one(raw)[0] == 200
        turns = [turn(f"s-{n}") for n in range(args.turns)]
        spent: dict[str, list[float]] = {}
        # this thread's CPU: not the time sqlite3 and the GIL hand to the other threads
        profile = cProfile.Profile(time.thread_time) if args.profile else None
        if profile is not None:
            profile.enable()
        started, started_here = time.process_time(), time.thread_time()
        clock = time.process_time
        for events in turns:
            for kind, raw in events:
                t0 = clock()
                one(raw)
                took = clock() - t0
                spent.setdefault(kind, [0.0, 0])
                spent[kind][0] += took
                spent[kind][1] += 1
        total, here = time.process_time() - started, time.thread_time() - started_here
        if profile is not None:
            profile.disable()
            pstats.Stats(profile).sort_stats(args.sort).print_stats(args.lines)
        count = sum(n for _, n in spent.values())
        if count:
            by_kind = {k: round(s / n * 1e6, 1) for k, (s, n) in spent.items()}
            print(
                json.dumps(
                    {
                        "us_per_event": round(total / count * 1e6, 1),
                        "this_thread": round(here / count * 1e6, 1),  # the rest: other threads
                        "by_kind": by_kind,
                    }
                ),
                file=sys.stderr,
            )
        loop.close()
        server.stop()


def _hop_only(args: argparse.Namespace) -> None:
    from otelhooks.integrations.coding_agents._fair import FairRunner

    runner = FairRunner(workers=64)

    async def calls(n: int) -> None:
        for i in range(n):
            await runner.run(f"s{i % 16}", int, timeout_s=8.0)

    asyncio.run(calls(200))
    started = time.process_time()
    asyncio.run(calls(args.turns * 10))
    if args.turns:
        spent = (time.process_time() - started) / (args.turns * 10)
        print(f"{spent * 1e6:.1f} us CPU per hop", file=sys.stderr)
    runner.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime", help="cProfile's order (--profile)")
    parser.add_argument("--lines", type=int, default=40, help="cProfile's rows (--profile)")
    parser.add_argument("--instance", action="store_true", help="serve_cpu_bench's server")
    parser.add_argument("--tools", type=int, default=4, help="tools per turn (--instance)")
    parser.add_argument("--hop", action="store_true", help="deciding events hop (--instance)")
    parser.add_argument("--hop-only", action="store_true", help="FairRunner.run of a no-op")
    args = parser.parse_args()
    if args.instance:
        return _instance(args)
    if args.hop_only:
        return _hop_only(args)
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
