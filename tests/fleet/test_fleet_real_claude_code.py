"""The real Claude Code CLI with its ``http`` hooks into ``serve --store postgresql://...`` while
PostgreSQL is stopped: Claude Code runs a tool whose hook answers anything but 2xx, so the guard
must still answer. A scripted Messages API asks for ``rm -rf victim`` (denied by a command
guard) and a harmless ``touch`` (allowed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from tests._postgres import PostgresCluster
from tests._realparts import require
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)
from tests.fleet._fleet import start_instance
from tests.reliability._serve_proc import INGEST

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).parent.parent.parent
CLAUDE = REPO / "tests" / "claude_code_cli" / "node_modules" / ".bin" / "claude"
GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""


def _tool_results(api: MessagesApi) -> dict[str, dict[str, Any]]:
    return {
        block["tool_use_id"]: block
        for body in api.requests
        for message in body.get("messages") or ()
        for block in (message.get("content") if isinstance(message.get("content"), list) else ())
        if block.get("type") == "tool_result"
    }


def test_claude_code_is_denied_by_the_guard_while_postgresql_is_stopped(
    tmp_path: Path, pg_url: str, cluster: PostgresCluster
) -> None:
    """It got ``503`` from serve, a non-blocking error: the ``rm -rf`` ran."""
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / "victim").mkdir()
    (project / "victim" / "keep.txt").write_text("precious")
    guard = tmp_path / "guard.yaml"
    guard.write_text(GUARD)
    proc = start_instance(tmp_path, pg_url, "--hooks", str(guard))
    try:
        install(project / ".claude" / "settings.json", http=proc.url)
        api = MessagesApi(
            [
                ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim", "description": "clean"}),
                ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "t"}),
            ]
        )
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(tmp_path / "home"),
            **OFFLINE_ENV,
            "OTELHOOKS_INGEST_TOKEN": INGEST,
        }
        cluster.stop()
        try:
            with serve_messages_api(api) as api_url:
                run = subprocess.run(
                    [
                        str(CLAUDE),
                        "-p",
                        "clean up",
                        *("--permission-mode", "bypassPermissions"),
                        *("--output-format", "json"),
                    ],
                    cwd=project,
                    env={**env, "ANTHROPIC_BASE_URL": api_url},
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
        finally:
            cluster.start()
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout)["session_id"]
    finally:
        proc.stop()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    results = _tool_results(api)
    assert results["toolu_rm"]["is_error"] is True
    assert "rm -rf is not allowed here" in str(results["toolu_rm"]["content"])
    assert (project / "harmless.txt").exists()  # the allowed call ran
    assert "the store cannot keep this claude-code session change" in proc.output()
