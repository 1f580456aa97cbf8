"""The real Codex CLI with the ``files`` MCP server (``mcp_files_server.py``) and a guard.

What the Codex MCP tests share: the scripted model's steps (search for the tool, then call it in
its server's namespace), a guard file, and Codex's config naming the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from tests.coding_agents_cli._runs import codex_config

SERVER: Final = Path(__file__).parent / "mcp_files_server.py"
# Codex CLI 0.171's PreToolUse of server ``my-files``'s tool, as its hook received it
RENAMED_CALL = {
    "session_id": "01a24a82-0790-78b1-90fe-38b63c125f60",
    "turn_id": "01a24a82-07a4-7652-b8d3-378cd61ba818",
    "transcript_path": None,
    "cwd": "/project",
    "hook_event_name": "PreToolUse",
    "model": "gpt-5.5",
    "permission_mode": "bypassPermissions",
    "tool_name": "mcp__my_files__delete_file",
    "tool_input": {"path": "victim/keep.txt"},
    "tool_use_id": "call_del",
}


def mcp_steps(namespace: str = "mcp__files") -> list[dict[str, object]]:
    """Search for the tool, then call it in its server's namespace."""
    return [
        {"id": "call_search", "tool": "tool_search", "args": {"query": "delete file"}},
        {
            "id": "call_delete",
            "tool": "delete_file",
            "namespace": namespace,
            "args": {"path": "victim/keep.txt"},
        },
    ]


def guard_file(matcher: str) -> str:
    return (
        "hooks:\n  - id: keep-files\n    type: PreToolUse\n"
        f"    matcher: {json.dumps(matcher)}\n"
        "    command: \"echo 'files stay here' >&2; exit 2\"\n"
    )


def configure_codex(
    project: Path,
    home: Path,
    name: str = "files",
    *,
    code_mode: bool = False,
    tool: str | None = None,
) -> None:
    """Codex's config with the ``files`` MCP server (stdio) named ``name``, rooted at
    ``project``; its one tool is ``tool`` (default ``delete_file``).

    Codex starts MCP servers beside the turn: a ``tool_search`` made before the server listed
    its tools finds nothing (an empty search, then an unsupported call, under a loaded
    machine), so the run waits for the server's startup (``mcp_optional_startup_grace_ms``)."""
    config = codex_config(home, trusted=project) / "config.toml"
    server = [str(SERVER), str(project), *([tool] if tool else [])]
    table = f"\n[mcp_servers.{json.dumps(name)}]\ncommand = {json.dumps(sys.executable)}\n"
    top = "mcp_optional_startup_grace_ms = 30000\n"
    text = config.read_text()
    if code_mode:  # the model's JavaScript calls the tools (``exec``)
        text = text.replace("[features]\n", "[features]\ncode_mode = true\n")
    config.write_text(top + text + table + f"args = {json.dumps(server)}\n")
