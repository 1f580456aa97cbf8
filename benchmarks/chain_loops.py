"""A chain's cost per dry run, one loop per process, for instruction counts (benchmarks/README.md,
"Replay, thirteenth pass").

    python benchmarks/replay_phases.py --make DIR                 # the 20-hook policy
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/chain_loops.py DIR CASE N              # "Collected : N" instructions

Run each CASE at N and at 0 and divide the difference by N. CASE is ``trivial1`` or
``trivial6`` (1 or 6 ``lambda event: None`` hooks on ``before_tool_call``), ``persist`` (the
policy's ``tool_result_persist``: 2 ``redact`` hooks) or ``dbquery`` (the policy's
``before_tool_call`` of ``db/query``: 5 hooks). Every case is ``HooksEngine.dry_run(...,
inline=True)`` of one payload, as replay runs it.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from otelhooks import HooksEngine
from otelhooks.events import ToolCallEvent, ToolResultPersistEvent


def main() -> int:
    directory, case, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    if case.startswith("trivial"):
        hooks = int(case[len("trivial") :])
        engine = HooksEngine(
            [
                {"id": f"t{i}", "type": "beforeToolCall", "handler": lambda event: None}
                for i in range(hooks)
            ]
        )
    else:
        engine = HooksEngine.from_files([str(directory / "policy.yaml")])
    if case == "persist":
        event: str = "tool_result_persist"
        payload: object = ToolResultPersistEvent(toolName="db/query", result={"content": "rows: 3"})
    else:
        event = "before_tool_call"
        payload = ToolCallEvent(
            toolCallId="c1", identifier="db", apiName="query", args={"n": 5, "q": "select 1"}
        )
    for _ in range(200):  # warm: schemas, the registry's match cache, the steps
        engine.dry_run(event, payload, inline=True)  # type: ignore[arg-type]
    gc.disable()
    for _ in range(n):
        engine.dry_run(event, payload, inline=True)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
