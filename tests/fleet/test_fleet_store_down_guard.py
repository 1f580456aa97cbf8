"""A guard's deny reaches Claude Code while ``otelhooks serve``'s PostgreSQL store is down.

The guard's decision does not need the store; the session's record does. Claude Code takes a 503
for a non-blocking error and runs the tool, so the route answers the guard's decision and says
in its log that the record is lost. A real serve, a real cluster stopped with ``pg_ctl stop -m
immediate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._postgres import PostgresCluster
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def _event(name: str, use_id: str = "", **fields: Any) -> dict[str, Any]:
    body = {
        "session_id": "sess-store-down",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }
    if use_id:
        body["tool_use_id"] = use_id
    return body


def test_a_guards_deny_reaches_claude_code_with_postgresql_down(
    tmp_path: Path, pg_url: str, cluster: PostgresCluster
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    serve = ServeProc(tmp_path, "--store", pg_url, "--hooks", str(policy), "--no-web")
    url = serve.url + "/v1/hooks/claude-code"
    try:
        ls = _event("PreToolUse", "toolu_ls", tool_name="Bash", tool_input={"command": "ls"})
        assert httpx.post(url, json=ls, headers=AUTH, timeout=30).status_code == 200
        cluster.stop()
        try:
            rm = _event(
                "PreToolUse", "toolu_rm", tool_name="Bash", tool_input={"command": "rm -rf ~/w"}
            )
            answer = httpx.post(url, json=rm, headers=AUTH, timeout=30)
        finally:
            cluster.start()
    finally:
        serve.stop()
    # the session change was made without the store, and serve said so
    assert "the store cannot keep this claude-code session change" in serve.output()
    assert answer.status_code == 200, answer.text
    decision = answer.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"] == "rm -rf is not allowed here"
