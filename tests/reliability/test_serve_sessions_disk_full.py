"""A guard's deny reaches Claude Code while ``otelhooks serve``'s SQLite session file cannot be
written (its disk full: a file size limit set on the running serve stands in for it).

The guard's decision does not need the session file; the session's record does. Before, the
file's error went up through the bridge and the route answered HTTP 500, which Claude Code takes
for a non-blocking error: the denied ``rm -rf`` ran. A real serve with a durable event log,
whose sessions are kept in a SQLite file beside it."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(90)

LIMIT = 8 * 1024  # serve's log files stay below it, its SQLite files are past it
AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def _pre(use_id: str, command: str) -> dict[str, Any]:
    return {
        "session_id": "sess-disk-full",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        # tool inputs are kept with the open tool use: each call grows the file
        "tool_input": {"command": command, "description": "x" * 1000},
        "tool_use_id": use_id,
    }


def _written_at(db: Path) -> int:
    """When the SQLite file (or its write-ahead log) was last written."""
    files = [db, db.with_name(db.name + "-wal")]
    return max(f.stat().st_mtime_ns for f in files if f.exists())


def test_a_guards_deny_reaches_claude_code_when_the_session_file_cannot_grow(
    tmp_path: Path,
) -> None:
    db = tmp_path / "events.sqlite3"
    policy, log = tmp_path / "policy.yaml", tmp_path / "events.yaml"
    policy.write_text(POLICY)
    log.write_text(f"kind: agent_events\ndurable: true\npath: {db}\n")
    serve = ServeProc(tmp_path, "--hooks", str(policy), "--hooks", str(log), "--no-web")
    url = serve.url + "/v1/hooks/claude-code"
    answers = []
    try:
        assert httpx.post(url, json=_pre("toolu_ls", "ls"), headers=AUTH).status_code == 200
        sessions = db.with_name(f"{db.name}.claude-sessions.sqlite3")
        assert sessions.exists()
        # the disk is full: no file of serve's grows any more
        unlimited = resource.RLIM_INFINITY
        resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE, (LIMIT, unlimited))
        for n in range(3):
            answers.append(
                httpx.post(url, json=_pre(f"toolu_rm_{n}", "rm -rf ~/work"), headers=AUTH)
            )
        # room again: the file is tried again after 5 s and takes the session changes
        resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE, (unlimited, unlimited))
        time.sleep(5.5)
        failures = serve.output().count("the state file cannot be used")
        written = _written_at(sessions)
        assert httpx.post(url, json=_pre("toolu_pwd", "pwd"), headers=AUTH).text == "{}"
        assert serve.output().count("the state file cannot be used") == failures
        assert _written_at(sessions) > written  # the file took the change
    finally:
        serve.stop()
    for answer in answers:
        assert answer.status_code == 200, answer.text  # was 500: Claude Code ran rm -rf
        decision = answer.json()["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert decision["permissionDecisionReason"] == "rm -rf is not allowed here"
    # and it says so: the session changes are in memory only
    assert "the state file cannot be used" in serve.output()
    assert "disk I/O error" in serve.output()
