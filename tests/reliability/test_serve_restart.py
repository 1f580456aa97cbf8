"""A serve stopped (a rolling restart) while it holds Claude Code's deciding call for a person:
the client gets an answer that names the restart, a deny under ``--fail-closed``, never
uvicorn's bare 500. A real serve on 127.0.0.1, a real HTTP client held on it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from otelhooks import serve

pytestmark = pytest.mark.timeout(60)

TOKEN = "restart-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
APPROVAL = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval:
      timeout: 60
      default: allow
"""
# a slow guard that lets the call through when it fails: the documented fail-open
SLOW = """\
hooks:
  - id: slow-guard
    type: PreToolUse
    matcher: Bash
    on_error: continue
    timeout: 20
    command: "sleep 7"
"""
EVENT = {
    "session_id": "sess-restart",
    "transcript_path": "/tmp/t.jsonl",
    "cwd": "/tmp",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf victim"},
    "tool_use_id": "toolu_restart",
}


def _held_then_stopped(tmp_path: Path, text: str, *, fail_closed: bool) -> httpx.Response:
    hooks = tmp_path / "otelhooks.yaml"
    hooks.write_text(text)
    server = serve([hooks], token=TOKEN, fail_closed=fail_closed)
    got: list[httpx.Response] = []
    url = server.url + "/v1/hooks/claude-code"
    post = threading.Thread(
        target=lambda: got.append(httpx.post(url, json=EVENT, headers=AUTH, timeout=30))
    )
    try:
        # the process's inbox outlives each serve: a card an earlier test left (the other
        # parametrization's, its asker stopped with its serve) is not this call's
        before = _pending(server.url)
        post.start()
        deadline = time.monotonic() + 20
        while text == APPROVAL and not _pending(server.url) - before:
            assert time.monotonic() < deadline, "no card"
            time.sleep(0.02)
        time.sleep(0.5)  # the call held
    finally:
        server.stop()
    post.join(30)
    (response,) = got
    return response


def _pending(url: str) -> set[str]:
    listing = httpx.get(f"{url}/v1/approvals", params={"args": 0}, headers=AUTH).json()
    return {item["id"] for item in listing["pending"]}


@pytest.mark.parametrize(
    ("text", "fail_closed"),
    [(APPROVAL, False), (APPROVAL, True), (SLOW, True)],
    ids=["approval", "approval-fail-closed", "slow-fail-closed"],
)
def test_a_restart_denies_a_held_call_that_must_not_fail_open(
    tmp_path: Path, text: str, fail_closed: bool
) -> None:
    # before: uvicorn's bare 500 ("Internal Server Error"), and Claude Code ran the tool; an
    # approval blocks when it fails, --fail-closed denies whatever failed
    response = _held_then_stopped(tmp_path, text, fail_closed=fail_closed)
    assert response.status_code == 200, response.text
    output = response.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "serve stopped" in output["permissionDecisionReason"]


def test_a_restart_answers_a_held_call_with_its_reason(tmp_path: Path) -> None:
    # without --fail-closed a guard that continues when it fails gets the documented
    # fail-open (a 500), but one that says why
    response = _held_then_stopped(tmp_path, SLOW, fail_closed=False)
    assert response.status_code == 500
    assert "serve stopped" in json.loads(response.text)["message"]
