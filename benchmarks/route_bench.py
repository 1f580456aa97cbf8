"""CPU per Claude Code hook event on ``serve``'s hook route, without HTTP or a load generator.

``python benchmarks/route_bench.py`` (about ten seconds): the route ``serve`` builds
(``claude_code_routes`` around a ``HookSpanProcessor``, sessions in memory) with the guard of
``claude_code_bench.py`` (a script hook blocking ``rm -rf`` on ``PreToolUse``), driven through
its ASGI interface on one event loop: ``--sessions`` sessions at once, each posting
``--turns`` turns of ``claude_code_bench.py``'s events one after the other, as fast as answered.
Reported: the process's CPU time (all threads, ``time.process_time``) per event, the road's
cost without uvicorn's HTTP parsing and without a load generator on the same cores, so before
and after a change of the route compare with less noise than the end-to-end benchmark.

``--sync``: the bridge alone, each event handed to the route's ``_decide`` on one thread, one
after the other (no event loop, no runner, no thread hop): the CPU a deciding thread spends.
``--log``: with serve's default event log installed (its observers watch every tool use's end),
as ``otelhooks serve`` runs.

Measures the checkout it sits in (as ``claude_code_bench.py``): for before, copy this file into
the ``benchmarks/`` of another checkout and run it there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

# claude_code_bench puts this checkout first on sys.path
from claude_code_bench import GUARD, _session_events

from otelhooks import AgentEvents, AgentEventsConfig, HookSpanProcessor, load_config
from otelhooks.integrations.claude_code._serve import claude_code_routes
from otelhooks.integrations.coding_agents._input import parse_input


async def _post(route: Any, body: bytes) -> int:
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client waits for its answer (as uvicorn's receive)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await route({"type": "http", "method": "POST", "path": "/v1/hooks/claude-code"}, receive, send)
    return int(sent[0]["status"])


async def _session(route: Any, name: str, turns: int, tools: int) -> int:
    posted = 0
    for turn in range(turns):
        for event in _session_events(f"{name}-{turn}", tools):
            status = await _post(route, json.dumps(event).encode())
            assert status in (200, 409), status
            posted += 1
    return posted


async def _burst(route: Any, sessions: int, turns: int, tools: int, tag: str) -> int:
    counts = await asyncio.gather(
        *(_session(route, f"{tag}-{n}", turns, tools) for n in range(sessions))
    )
    return sum(counts)


def _in_turn(route: Any, sessions: int, turns: int, tools: int, tag: str) -> int:
    posted = 0
    for turn in range(turns):
        for n in range(sessions):
            for event in _session_events(f"{tag}-{n}-{turn}", tools):
                route._decide(parse_input(json.dumps(event).encode()), 8.0)
                posted += 1
    return posted


def run(sessions: int, turns: int, tools: int, *, sync: bool, log: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "guard.py").write_text(GUARD)
        hooks = Path(tmp) / "hooks.yaml"
        hooks.write_text(
            "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
            f"    script: {Path(tmp) / 'guard.py'}:guard\n"
        )
        processor = HookSpanProcessor()
        processor.engine.register(load_config([str(hooks)]).hooks)
        recorders = AgentEvents(AgentEventsConfig()).install(processor) if log else []
        try:
            serving = claude_code_routes(processor, recorders=recorders)
        except TypeError:  # a checkout before the zero-hop road: its route takes no recorders
            serving = claude_code_routes(processor)
        route = serving.route
        try:
            if sync:
                _in_turn(route, sessions, 1, tools, "warm")
                cpu, wall = time.process_time(), time.perf_counter()
                events = _in_turn(route, sessions, turns, tools, "run")
            else:
                asyncio.run(_burst(route, sessions, 1, tools, "warm"))
                cpu, wall = time.process_time(), time.perf_counter()
                events = asyncio.run(_burst(route, sessions, turns, tools, "run"))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            route.close()
            serving.sessions.close()
            processor.shutdown()
    return {
        "road": "sync" if sync else "asgi",
        "event_log": log,
        "sessions": sessions,
        "events": events,
        "cpu_us_per_event": round(cpu / events * 1e6, 1),
        "events_per_s": round(events / wall),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tools", type=int, default=8)
    parser.add_argument("--sync", action="store_true", help="the bridge alone, on one thread")
    parser.add_argument("--log", action="store_true", help="with serve's default event log")
    args = parser.parse_args()
    print(json.dumps(run(args.sessions, args.turns, args.tools, sync=args.sync, log=args.log)))


if __name__ == "__main__":
    main()
