"""A real ``otelhooks serve``: a Claude Code ``PreToolUse`` larger than the route's body limit
(4 MiB: a ``Bash`` command padded past it, a ``Write`` of a large file) that a guard would
judge is denied, naming the guard that could not check it. Before, it was answered 413, which
Claude Code takes for a non-blocking error: the tool ran and no guard saw it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(60)

AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""
PAD = "#" * (5 * 1024 * 1024)  # past the 4 MiB limit


def _event(name: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-big",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_{tool}",
        **extra,
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProc]:
    tmp = tmp_path_factory.mktemp("oversized")
    policy = tmp / "policy.yaml"
    policy.write_text(POLICY)
    proc = ServeProc(tmp, "--hooks", str(policy), "--no-web")
    try:
        yield proc
    finally:
        proc.stop()


def _post(server: ServeProc, body: dict[str, Any]) -> httpx.Response:
    url = server.url + "/v1/hooks/claude-code"
    return httpx.post(url, json=body, headers=AUTH, timeout=30)


def test_an_oversized_guarded_pre_tool_use_is_denied_not_413(server: ServeProc) -> None:
    answer = _post(server, _event("PreToolUse", "Bash", {"command": f"rm -rf ~/work {PAD}"}))
    assert answer.status_code == 200, answer.text  # was 413: Claude Code ran rm -rf
    decision = answer.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    reason = decision["permissionDecisionReason"]
    assert "larger than 4194304 bytes" in reason, reason
    assert "no-rm" in reason, reason


def test_an_oversized_event_no_guard_judges_stays_413(server: ServeProc) -> None:
    # no guard matches Read, and a PostToolUse's hooks here block nothing: the documented 413
    read = _post(server, _event("PreToolUse", "Read", {"file_path": f"/tmp/{PAD}"}))
    assert read.status_code == 413, read.text
    post = _post(
        server, _event("PostToolUse", "Bash", {"command": "ls"}, tool_response={"stdout": PAD})
    )
    assert post.status_code == 413, post.text
