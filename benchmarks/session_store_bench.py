"""The Claude Code session store alone: CPU and wall time per PreToolUse + PostToolUse pair.

What the bridge asks of its store for one tool use, without hooks, HTTP or spans: at
``PreToolUse`` ``begin_tool`` (the tool use started in its turn) and ``set_tool_attributes``
(its verdict kept); at ``PostToolUse`` ``end_tool`` (which is also the route's open-tool check).
``time.process_time`` is this process's CPU (for PostgreSQL the client's side only; the server's
is not in it). Run from the repository root (PostgreSQL: Debian's ``postgresql`` package, a
throwaway cluster)::

    python benchmarks/session_store_bench.py --pairs 2000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pairs(state: Any, count: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per pair, over ``count`` pairs in one session (8 tool names)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for n in range(count):
        tool = state.begin_tool("bench-session", f"toolu_{n}", f"Tool{n % 8}", {"command": "ls"})
        state.set_tool_attributes(tool, {"otelhooks.hook.decision": "allow"})
        assert state.end_tool("bench-session", f"toolu_{n}") is not None
    return (
        (time.process_time() - cpu0) * 1e6 / count,
        (time.perf_counter() - wall0) * 1e6 / count,
    )


class PerEvent:
    """The command bridge as Claude Code runs it: each hook event a process of its own, which
    opens the state file, makes its changes and closes it."""

    def __init__(self, path: Path) -> None:
        from otelhooks.integrations.coding_agents._state import BridgeState

        self.path = path
        self.make = BridgeState

    def begin_tool(self, *args: Any) -> Any:
        self.pre = self.make(self.path)  # PreToolUse's process: its two changes
        return self.pre.begin_tool(*args)

    def set_tool_attributes(self, *args: Any) -> None:
        self.pre.set_tool_attributes(*args)
        self.pre.close()

    def end_tool(self, *args: Any) -> Any:
        post = self.make(self.path)  # PostToolUse's process
        try:
            return post.end_tool(*args)
        finally:
            post.close()


@contextmanager
def stores(with_pg: bool) -> Iterator[list[tuple[str, Callable[[], Any]]]]:
    from otelhooks.integrations.coding_agents._sessions import ServerSessions
    from otelhooks.integrations.coding_agents._state import BridgeState

    folder = Path(tempfile.mkdtemp(prefix="otelhooks-bench-"))
    made = [
        ("state file, one process", lambda: BridgeState(folder / "state.sqlite3")),
        ("state file, a process per event", lambda: PerEvent(folder / "per-event.sqlite3")),
        ("serve, in memory", ServerSessions),
        ("serve, SQLite file", lambda: ServerSessions(folder / "serve.sqlite3")),
    ]
    if not with_pg:
        yield made
        return
    from otelhooks._store._open import open_store
    from tests._postgres import postgres_cluster

    with postgres_cluster() as cluster:
        store = open_store(cluster.url)
        try:
            made.append(("PostgreSQL", store.claude_code_sessions))  # type: ignore[attr-defined]
            yield made
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with stores(not args.no_postgres) as made:
        print(f"{'store':30} {'CPU µs/pair':>12} {'wall µs/pair':>13}  (median of rounds)")
        for name, make in made:
            state = make()
            pairs(state, 50)  # warm: schema, connections, caches
            runs = [pairs(state, args.pairs) for _ in range(args.rounds)]
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            print(f"{name:30} {cpu:12.0f} {wall:13.0f}")


if __name__ == "__main__":
    main()
