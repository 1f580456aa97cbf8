"""A ``permissive`` hook of the operation a Claude Agent SDK app runs in decides nothing.

``mode: permissive`` records what a hook would decide and never enforces it. The bridge passed
on a command hook's answer unless the hook was permissive among the global hooks, or among the
operation's when the caller named the operation (only ``before_tool_call`` and
``before_agent_start`` do); an event dispatched with the turn's id from its payload alone
(``PostToolUse``'s ``tool_result_persist``, a ``Stop``'s ``on_complete``) took a permissive hook
of the operation for an enforcing one: its block withheld the tool's output. The callbacks are
called as the SDK calls them, inside the application's operation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import _sdk

pytestmark = pytest.mark.timeout(120)

WOULD_WITHHOLD = {
    "id": "would-withhold",
    "type": "PostToolUse",
    "mode": "permissive",
    "command": "echo 'would withhold' >&2; exit 2",
}


@pytest.mark.parametrize("where", ["global", "operation"])
def test_a_permissive_hook_of_the_operation_decides_nothing(tmp_path: Path, where: str) -> None:
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    own = [WOULD_WITHHOLD] if where == "global" else []
    oh = otelhooks.configure(hooks=own, otlp=False, set_global=False, structured_logging=False)
    call = {"session_id": "s-1", "tool_name": "Bash", "tool_input": {"command": "ls"}}

    async def main(hooks: Any) -> Any:
        def callback(event: str) -> Any:
            return hooks[event][0].hooks[0]

        scoped = [WOULD_WITHHOLD] if where == "operation" else []
        async with oh.operation("app", hooks=scoped):
            await callback("UserPromptSubmit")({"session_id": "s-1", "prompt": "go"}, None, None)
            await callback("PreToolUse")(dict(call), "toolu_1", None)
            done = {**call, "tool_response": {"stdout": "a.txt"}}
            return await callback("PostToolUse")(done, "toolu_1", None)

    try:
        with hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks:
            answer = asyncio.run(main(hooks))
    finally:
        oh.shutdown()
    assert answer == {}  # the output reaches the model; the would-be block is only recorded
