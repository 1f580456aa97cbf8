"""A tool call whose arguments nest deeper than Python's recursion limit, under ``fail_closed``.

The scripted model calls an MCP tool of the application's own (the SDK's in-process server,
whose schema takes any extra field) with ``{"path": "victim", "x": [[[...]]]}`` nested 700
deep: the SDK reads it (``json`` goes that deep), but ``hooks_for``'s callback raised
``RecursionError`` before its bridge saw the call, and a callback that raises lets the CLI run
the tool: with ``fail_closed=True`` and a guard denying the tool, the folder was deleted. Now
such a failure is the deny ``fail_closed`` promises.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import _run, _sdk
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api

pytestmark = pytest.mark.timeout(120)

NO_DELETE = [
    {
        "id": "no-delete",
        "type": "PreToolUse",
        "matcher": "mcp__files__delete",
        "command": "echo 'no deleting' >&2; exit 2",
    }
]


@pytest.mark.parametrize("depth", [10, 700], ids=["shallow", "deep"])
def test_fail_closed_denies_a_call_too_deep_to_judge(tmp_path: Path, depth: int) -> None:
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")

    @sdk.tool("delete", "delete a folder", {"type": "object", "properties": {"path": {}}})
    async def delete(args: dict[str, Any]) -> dict[str, Any]:
        shutil.rmtree(project / str(args["path"]))
        return {"content": [{"type": "text", "text": "deleted"}]}

    server = sdk.create_sdk_mcp_server("files", tools=[delete])
    deep = json.loads("[" * depth + "]" * depth)
    api = MessagesApi([ToolStep("toolu_rm", "mcp__files__delete", {"path": "victim", "x": deep})])
    oh = otelhooks.configure(hooks=NO_DELETE, otlp=False, set_global=False)
    try:
        hooks = hooks_for(oh, state=tmp_path / "s.sqlite3", fail_closed=True)
        with serve_messages_api(api) as url, hooks:
            _run(project, tmp_path / "home", url, hooks, mcp_servers={"files": server})
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    result = json.dumps(api.requests[-1]["messages"][-1])
    assert ("RecursionError" if depth > 100 else "no deleting") in result
