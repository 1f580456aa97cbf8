"""A list the server changed while a guard decided a call: the call was judged by the schema
listed before (``rm``'s ``force`` a string, so ``"true"`` is no forced removal), the server
then ran it by its new one (a boolean: ``"true"`` is ``True``), and the forced removal ran past
a guard denying ``force is True``. Now a call whose session's tools changed while its hooks
decided is judged again by the list the server gives then.

Real processes: the SDK's low-level server listing per session (``per_session_server.py``),
``otelhooks mcp --listen --upstream`` and the SDK's client making two calls at once (as a model's
parallel tool calls are made)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp._harness import calls, http_gateway, http_session, write_hooks

pytestmark = pytest.mark.timeout(120)

SLOW_NO_FORCE = """
hooks:
  - id: no-force
    type: beforeToolCall
    matcher: "^testsrv/rm$"
    script: hooks.py:no_force
"""
SLOW_NO_FORCE_SCRIPT = """
import time

from otelhooks import Block

def no_force(event):
    time.sleep(3.0)  # the client's other call changes the server's list meanwhile
    if event.args.get("force") is True:
        return Block("no forced removal")
    return None
"""


def test_a_list_changed_while_the_hooks_decide_judges_the_call_again(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, SLOW_NO_FORCE, SLOW_NO_FORCE_SCRIPT)
    app = Path(__file__).with_name("per_session_server.py")
    texts: dict[str, str] = {}

    async def scenario(url: str) -> None:
        async with http_session(url) as session:
            await session.list_tools()  # rm's force: a string

            async def call(name: str, args: dict[str, Any], delay: float) -> None:
                await anyio.sleep(delay)
                result = await session.call_tool(name, args)
                texts[name] = getattr(result.content[0], "text", "")

            async with anyio.create_task_group() as group:
                group.start_soon(call, "rm", {"path": "/a", "force": "true"}, 0.0)
                group.start_soon(call, "arm", {}, 0.5)  # rm's force: a boolean from now on

    with http_gateway(tmp_path, [hooks], app=app) as url:
        anyio.run(scenario, url)
    assert texts["arm"] == "armed"
    assert texts["rm"] == (
        "otelhooks refused the call: arguments.force is string where the tool's inputSchema "
        "says boolean"
    )
    assert calls(tmp_path) == []  # the forced removal never ran
