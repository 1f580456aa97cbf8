"""A tool call whose arguments nest deeper than Python's recursion limit, under ``fail_closed``.

The scripted model calls an MCP tool of the application's own (the SDK's in-process server,
whose schema takes any extra field) with ``{"path": "victim", "x": [[[...]]]}`` nested 700
deep: the SDK reads it (``json`` goes that deep), but ``hooks_for``'s callback raised
``RecursionError`` before its bridge saw the call (making lone surrogates whole, recursively),
and a callback that raises lets the CLI run the tool: a guard denying the tool said nothing and
the folder was deleted, ``fail_closed=True`` or not. Now the guard judges the call (the bridge
takes JSON as deep as the SDK reads), and under ``fail_closed`` any failure of the callback
before the bridge answers is a deny.
"""

from __future__ import annotations

import asyncio
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


@pytest.mark.parametrize(
    ("depth", "fail_closed"),
    [(10, True), (700, True), (700, False)],
    ids=["shallow", "deep-fail-closed", "deep-default"],
)
def test_the_guard_judges_a_call_whose_arguments_nest_deep(
    tmp_path: Path, depth: int, fail_closed: bool
) -> None:
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
        hooks = hooks_for(oh, state=tmp_path / "s.sqlite3", fail_closed=fail_closed)
        with serve_messages_api(api) as url, hooks:
            _run(project, tmp_path / "home", url, hooks, mcp_servers={"files": server})
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "no deleting" in json.dumps(api.requests[-1]["messages"][-1])


def test_fail_closed_denies_a_call_its_callback_fails_on_before_the_bridge(
    tmp_path: Path,
) -> None:
    """An input the callback cannot read (not a JSON object): a deny naming the failure."""
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(hooks=NO_DELETE, otlp=False, set_global=False)
    try:
        with hooks_for(oh, state=tmp_path / "s.sqlite3", fail_closed=True) as hooks:
            [matcher] = hooks["PreToolUse"]
            answer = asyncio.run(matcher.hooks[0](None, "toolu_1", None))
    finally:
        oh.shutdown()
    specific = answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "TypeError" in specific["permissionDecisionReason"]
