"""A ``Post*`` event whose ``PreToolUse`` a real ``otelhooks serve`` never saw (an in-memory serve
restarted between them, another instance, a scratch state after a store outage) is still judged
by its hooks, and their answer reaches Claude Code: a redaction of the tool's output, a block.
Before, serve answered 409, which Claude Code treats as a non-blocking error: no hook ran and the
secret went to the model. What such an event must not do is record a call: it writes no span and
ends nothing (a forged end of another session's tool use ends nothing)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import read_otlp_json_lines
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

ROUTE = "/v1/hooks/claude-code"
GUARD = """\
def redact(event):
    if "S-42" in str(event.result):
        return {"result": "[redacted by guard]"}
    return {"result": event.result}
"""
HOOKS = """\
hooks:
  - id: redact
    type: tool_result_persist
    intercept: true
    script: GUARD:redact
  - id: no-leak
    type: PostToolUse
    matcher: Bash
    command: >-
      if grep -q 'LEAK'; then echo '{"decision": "block", "reason": "a leak"}'; fi
  - id: on-failure
    type: PostToolUseFailure
    command: >-
      echo '{"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
      "additionalContext": "retry with --dry-run"}}'
"""


class Served:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        (tmp / "guard.py").write_text(GUARD)
        self.hooks = tmp / "hooks.yaml"
        self.hooks.write_text(HOOKS.replace("GUARD", str(tmp / "guard.py")))
        self.traces = tmp / "traces.jsonl"
        self.proc = self.start()

    def start(self) -> ServeProc:
        return ServeProc(self.tmp, "--hooks", str(self.hooks), "--traces-out", str(self.traces))

    def post(self, body: dict[str, Any]) -> httpx.Response:
        auth = {"Authorization": f"Bearer {INGEST}"}
        return httpx.post(self.proc.url + ROUTE, json=body, headers=auth, timeout=30)

    def tool_spans(self, marker: str) -> dict[str, list[dict[str, Any]]]:
        """The tool spans written so far, by tool use id, once the span of ``marker`` (a tool
        use ended after the others) is written: the spans leave in order, in batches."""
        deadline = time.monotonic() + 30
        while True:
            spans = read_otlp_json_lines(self.traces) if self.traces.exists() else []
            found: dict[str, list[dict[str, Any]]] = {}
            for span in spans:
                use_id = span["attributes"].get("gen_ai.tool.call.id")
                if use_id is not None:
                    found.setdefault(str(use_id), []).append(span)
            if marker in found:
                return found
            assert time.monotonic() < deadline, "the marker's span was not written"
            time.sleep(0.1)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    serving = Served(tmp_path)
    try:
        yield serving
    finally:
        serving.proc.stop()


def _tool(session: str, use_id: str, event: str, **more: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": "cat notes.txt"},
        "tool_use_id": use_id,
        **more,
    }


def _output(stdout: str) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": "", "interrupted": False}


def _ended(served: Served, session: str, use_id: str) -> None:
    """A tool use started and ended in ``session``: its span marks what was written before."""
    assert served.post(_tool(session, use_id, "PreToolUse")).status_code == 200
    done = _tool(session, use_id, "PostToolUse", tool_response=_output("ok"))
    assert served.post(done).status_code == 200


def test_a_tool_end_after_a_restart_is_still_judged_and_records_nothing(served: Served) -> None:
    for use_id in ("toolu_secret", "toolu_leak", "toolu_failed"):
        assert served.post(_tool("s-1", use_id, "PreToolUse")).status_code == 200
    served.proc.stop()  # sessions in memory: the restarted serve never saw these starts
    served.proc = served.start()

    secret = _tool("s-1", "toolu_secret", "PostToolUse", tool_response=_output("key S-42-X"))
    answer = served.post(secret)
    assert answer.status_code == 200, answer.text
    updated = answer.json()["hookSpecificOutput"]["updatedToolOutput"]
    assert updated["stdout"] == "[redacted by guard]"

    leak = _tool("s-1", "toolu_leak", "PostToolUse", tool_response=_output("LEAK"))
    answer = served.post(leak)
    assert answer.status_code == 200, answer.text
    assert (answer.json()["decision"], answer.json()["reason"]) == ("block", "a leak")

    failed = _tool("s-1", "toolu_failed", "PostToolUseFailure", error="exit 1")
    answer = served.post(failed)
    assert answer.status_code == 200, answer.text
    specific = answer.json()["hookSpecificOutput"]
    assert specific["additionalContext"] == "retry with --dry-run"

    _ended(served, "s-1", "toolu_marker")
    spans = served.tool_spans("toolu_marker")
    assert not {"toolu_secret", "toolu_leak", "toolu_failed"} & set(spans)


def test_a_tool_end_naming_another_sessions_tool_use_ends_nothing(served: Served) -> None:
    assert served.post(_tool("s-owner", "toolu_owned", "PreToolUse")).status_code == 200
    forged = _tool("s-forger", "toolu_owned", "PostToolUseFailure", error="forged")
    assert served.post(forged).status_code == 200  # its hooks answered; nothing was ended
    done = _tool("s-owner", "toolu_owned", "PostToolUse", tool_response=_output("ok"))
    assert served.post(done).status_code == 200
    _ended(served, "s-owner", "toolu_marker")
    spans = served.tool_spans("toolu_marker")
    [owned] = spans["toolu_owned"]  # one span, the owner's own end
    assert owned["attributes"]["gen_ai.conversation.id"] == "s-owner"
    assert owned["attributes"]["otelhooks.tool.outcome"] == "success"
