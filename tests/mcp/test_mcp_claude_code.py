"""A real MCP client: the Claude Code CLI, run non-interactively against a scripted Messages API
on 127.0.0.1, with ``otelhooks mcp`` wrapping the SDK server in its ``mcpServers`` config.

Needs the CLI (``npm install @anthropic-ai/claude-code``): its path in ``OTELHOOKS_CLAUDE_BIN``
or ``claude`` on ``PATH``; skipped without it (a failure under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks import read_otlp_json_lines
from tests._realparts import require
from tests.claude_code_cli._messages_api import OFFLINE_ENV
from tests.mcp._fake_anthropic import fake_anthropic
from tests.mcp._harness import ROOT, SERVER_APP, calls, write_hooks

pytestmark = pytest.mark.timeout(150)

# the CLI `.ci/run` installs (tests/claude_code_cli/package-lock.json), else one of your own
_PINNED = (
    Path(__file__).resolve().parents[1] / "claude_code_cli" / "node_modules" / ".bin" / "claude"
)
CLAUDE = (
    os.environ.get("OTELHOOKS_CLAUDE_BIN")
    or (str(_PINNED) if _PINNED.exists() else None)
    or shutil.which("claude")
)

HOOKS = """
hooks:
  - id: notes-policy
    type: beforeToolCall
    matcher: "testsrv/write_note"
    script: hooks.py:notes
"""
SCRIPT = """
from otelhooks import Block

def notes(event):
    if event.args.get("text") == "secret":
        return Block("no secrets in notes")
"""


def test_claude_code_gets_the_denial_and_the_server_never_sees_the_call(tmp_path: Path) -> None:
    require("Claude Code CLI", CLAUDE is not None)
    assert CLAUDE is not None
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    gateway = ["-m", "otelhooks", "mcp", "--hooks", str(hooks),
               "--traces-out", str(tmp_path / "traces.jsonl"),
               "--", sys.executable, str(SERVER_APP)]  # fmt: skip
    server_env = {"PYTHONPATH": str(ROOT), "MCP_TEST_LOG": str(tmp_path / "calls.jsonl")}
    config = {"mcpServers": {"testsrv": {"command": sys.executable, "args": gateway,
                                         "env": server_env}}}  # fmt: skip
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    (tmp_path / "home").mkdir()
    with fake_anthropic("mcp__testsrv__write_note", {"text": "secret"}) as (api, url):
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": url,
            **OFFLINE_ENV,
        }
        run = subprocess.run(
            [CLAUDE, "-p", "write a secret note", "--permission-mode", "bypassPermissions",
             "--output-format", "json", "--mcp-config", str(tmp_path / "mcp.json"),
             "--strict-mcp-config"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        result = api.tool_result()
    assert run.returncode == 0, run.stderr
    assert result is not None, "Claude Code never called the MCP tool"
    assert result["is_error"] is True
    assert "no secrets in notes" in json.dumps(result["content"])
    assert calls(tmp_path) == []  # the server never saw it
    spans = read_otlp_json_lines(tmp_path / "traces.jsonl")
    (call,) = [s for s in spans if s["name"] == "tools/call write_note"]
    assert call["attributes"]["otelhooks.hook.decision"] == "deny"
    assert call["attributes"]["otelhooks.mcp.server.name"] == "testsrv"
    assert "mcp.session" in {s["name"] for s in spans}  # exported before Claude Code's kill
