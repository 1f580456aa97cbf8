"""Arguments a person edits on an approval's card meet every guard, those listed before the
approval included: the call that runs passed them all. Real serve, Claude Code's hook route."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import serve
from tests.web.conftest import AGENT, AUTH, TOKEN

pytestmark = pytest.mark.timeout(60)

GUARD = """\
def guard(event):
    if "rm -rf" in str(event.args.get("command", "")):
        event.deny("no rm -rf")
"""
HOOKS = """\
hooks:
  - {id: no-rm-rf, type: PreToolUse, matcher: Bash, script: guard.py:guard}
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval: {timeout: 60, default: deny}
"""


def _held(url: str, session: str, command: str, out: dict[str, Any]) -> None:
    body = {
        "hook_event_name": "PreToolUse",
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"toolu_{session}",
    }
    out["answer"] = httpx.post(f"{url}/v1/hooks/claude-code", json=body, headers=AGENT, timeout=50)


def _answered(url: str, session: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    asking = threading.Thread(target=_held, args=(url, session, "ls", out))
    asking.start()
    with httpx.Client(base_url=url, headers=AUTH) as admin:
        deadline = time.monotonic() + 20
        card = None
        while card is None and time.monotonic() < deadline:
            pending = admin.get("/v1/approvals").json()["pending"]
            card = next((a for a in pending if a["session"] == session), None)
            time.sleep(0.05)
        assert card is not None, "no card"
        given = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow", "args": args})
        assert given.status_code == 200, given.text
    asking.join(30)
    return dict(out["answer"].json()["hookSpecificOutput"])


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", AGENT["Authorization"].removeprefix("Bearer "))
    (tmp_path / "guard.py").write_text(GUARD)
    (tmp_path / "hooks.yaml").write_text(HOOKS)
    started = serve([tmp_path / "hooks.yaml"], token=TOKEN)
    try:
        yield started.url
    finally:
        started.stop()


def test_an_edit_a_guard_before_the_approval_denies_is_denied(url: str) -> None:
    # the guard judged "ls"; the person edits it into "rm -rf /" and approves. Before, Claude
    # Code got an allow with updatedInput "rm -rf /": the deny-rm-rf guard never saw it
    answer = _answered(url, "edit-bad", {"command": "rm -rf /"})
    assert answer["permissionDecision"] == "deny"
    assert "no rm -rf" in answer["permissionDecisionReason"]
    assert "updatedInput" not in answer


def test_an_edit_the_guards_allow_runs_as_edited(url: str) -> None:
    answer = _answered(url, "edit-good", {"command": "ls -la"})
    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == {"command": "ls -la"}
