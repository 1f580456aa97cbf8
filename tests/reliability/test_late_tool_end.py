"""A ``PostToolUse`` that a hook which blocks when it fails (``on_error: block``) did not decide
within serve's answer time (a slow redaction, or slow neighbours before it) is answered as that
hook's failure in time is: blocked, the tool's output withheld. Before, serve answered 500, which
Claude Code treats as a non-blocking error: the unredacted output reached the model, though the
answer itself said the hook "blocks when it fails". A real ``otelhooks serve`` on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(60)

ROUTE = "/v1/hooks/claude-code"
SLOW = """\
import time


def redact(event):
    time.sleep(3)
    return {"result": "[redacted]"}
"""
HOOKS = """\
hooks:
  - id: redact
    type: tool_result_persist
    intercept: true
    on_error: ERROR
    timeout: 20
    script: GUARD:redact
"""


def _served(tmp: Path, on_error: str) -> ServeProc:
    (tmp / "guard.py").write_text(SLOW)
    hooks = tmp / f"hooks-{on_error}.yaml"
    hooks.write_text(HOOKS.replace("GUARD", str(tmp / "guard.py")).replace("ERROR", on_error))
    return ServeProc(tmp, "--hooks", str(hooks), "--hook-timeout", "1")


@pytest.fixture
def blocking(tmp_path: Path) -> Iterator[ServeProc]:
    proc = _served(tmp_path, "block")
    try:
        yield proc
    finally:
        proc.stop()


def _post(proc: ServeProc, body: dict[str, Any]) -> httpx.Response:
    auth = {"Authorization": f"Bearer {INGEST}"}
    return httpx.post(proc.url + ROUTE, json=body, headers=auth, timeout=30)


def _tool_end(proc: ServeProc, use_id: str) -> httpx.Response:
    use = {
        "session_id": "s-late",
        "tool_name": "Bash",
        "tool_input": {"command": "cat .env"},
        "tool_use_id": use_id,
    }
    assert _post(proc, {**use, "hook_event_name": "PreToolUse"}).status_code == 200
    output = {"stdout": "KEY=S-42-SECRET", "stderr": "", "interrupted": False}
    return _post(proc, {**use, "hook_event_name": "PostToolUse", "tool_response": output})


def test_a_late_tool_end_whose_hook_blocks_when_it_fails_withholds_the_output(
    blocking: ServeProc,
) -> None:
    answer = _tool_end(blocking, "toolu_late")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == "block"
    assert "hook redact blocks when it fails" in body["reason"]
    withheld = body["hookSpecificOutput"]["updatedToolOutput"]
    assert set(withheld) == {"stdout", "stderr", "interrupted"}  # the tool's own shape
    assert withheld["stdout"].startswith("[tool output withheld")
    assert "S-42" not in json.dumps(body)


def test_a_late_tool_end_whose_hook_goes_on_when_it_fails_but_was_cut_short_withholds_it(
    tmp_path: Path,
) -> None:
    # the redaction may take 20 s (its timeout) and serve answers at 1 s: it never had its time,
    # so nothing says it would not have redacted (before, a 500: Claude Code went on, and the
    # model read the unredacted output)
    proc = _served(tmp_path, "continue")
    try:
        answer = _tool_end(proc, "toolu_late_open")
    finally:
        proc.stop()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == "block"
    assert "no answer within 1 s, hook " in body["reason"]
    assert "cut short" in body["reason"]
    assert "redact" in body["reason"]
    withheld = body["hookSpecificOutput"]["updatedToolOutput"]
    assert withheld["stdout"].startswith("[tool output withheld")
    assert "S-42" not in json.dumps(body)
