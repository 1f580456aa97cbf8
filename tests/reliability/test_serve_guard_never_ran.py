"""A real ``otelhooks serve``: a ``PreToolUse`` whose guard never got to run before serve's hook
deadline (its call waited behind the session's other deciding calls, as under CPU starvation it
waits for a thread) is denied, naming why, never answered HTTP 500 (Claude Code takes a 500 for a
non-blocking error and runs the tool). Before, the late-answer rule counted the time since the
call arrived as the time its guards had, so a guard quicker than the deadline looked as if it had
had its time and failed: 500, and ``rm -rf`` ran unchecked."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(90)

AUTH = {"Authorization": f"Bearer {INGEST}"}
# two slow reads hold the session's two deciding slots past serve's 3 s deadline (each is
# given up on then, and keeps its slot for as long again); the Bash guard needs 2 s at most
POLICY = """\
hooks:
  - id: slow-read-audit
    type: PreToolUse
    matcher: Read
    timeout: 8
    command: echo started >> STARTED; sleep 8
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    timeout: 1
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def _pre(tool: str, tool_input: dict[str, Any], use_id: str) -> dict[str, Any]:
    return {
        "session_id": "sess-busy",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": use_id,
    }


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProc]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace("STARTED", str(tmp_path / "started")))
    proc = ServeProc(tmp_path, "--hooks", str(policy), "--no-web", "--hook-timeout", "3")
    try:
        yield proc
    finally:
        proc.stop()


def test_a_guard_that_never_ran_before_the_deadline_is_a_deny_not_a_500(
    server: ServeProc, tmp_path: Path
) -> None:
    url = server.url + "/v1/hooks/claude-code"
    reads: list[httpx.Response] = []

    def read(n: int) -> None:
        body = _pre("Read", {"file_path": f"/tmp/f{n}"}, f"toolu_read_{n}")
        reads.append(httpx.post(url, json=body, headers=AUTH, timeout=30))

    holders = [threading.Thread(target=read, args=(n,)) for n in range(2)]
    for thread in holders:
        thread.start()
    # both reads run (their guards' processes started) before the Bash call arrives
    started = tmp_path / "started"
    deadline = time.monotonic() + 20
    while not (started.exists() and started.read_text().count("started") == 2):
        assert time.monotonic() < deadline, "the reads' guards did not start"
        time.sleep(0.02)
    answer = httpx.post(
        url, json=_pre("Bash", {"command": "rm -rf ~/work"}, "toolu_rm"), headers=AUTH, timeout=30
    )
    for thread in holders:
        thread.join(30)
    assert answer.status_code == 200, answer.text  # was 500: Claude Code ran rm -rf
    decision = answer.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    reason = decision["permissionDecisionReason"]
    assert "no-rm" in reason, reason
    assert "never ran" in reason, reason
    assert "claude-code hook gave no answer in time" in server.output()
    # the slow reads themselves were cut short (9 s guards, a 3 s deadline): denied as before
    assert [r.json()["hookSpecificOutput"]["permissionDecision"] for r in reads] == ["deny"] * 2
