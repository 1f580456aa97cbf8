"""``otelhooks serve`` (SQLite, the default) with a ``delivery: queue`` webhook on
``afterToolCall`` while another process holds its outbox file's write lock: Claude Code's
``PostToolUse`` only records, so serve answers it on its event loop, enqueue included. One
session's enqueue must not hold up another session's guard."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests._webhook_server import Reply, webhook_server
from tests.reliability._serve_proc import INGEST, ServeProc

# Holds BEGIN EXCLUSIVE on the file until killed.
NEIGHBOUR = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(120)
"""


def _hook(tmp_path: Path, session: str, event: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": tool_input,
        "tool_use_id": f"toolu_{session}_{event}",
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        "cwd": str(tmp_path),
        "transcript_path": str(tmp_path / f"{session}.jsonl"),
    }


def _post(url: str, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(
        f"{url}/v1/hooks/claude-code",
        json=body,
        headers={"Authorization": f"Bearer {INGEST}"},
        timeout=60,
    )
    return response, time.monotonic() - started


def test_one_sessions_enqueue_into_a_locked_outbox_does_not_hold_up_anothers_guard(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with webhook_server() as receiver:
        receiver.routes["/q"] = Reply(204)
        hooks = tmp_path / "hooks.yaml"
        hooks.write_text(
            "hooks:\n  - id: q\n    type: afterToolCall\n"
            f"    webhook: {{url: '{receiver.url}/q', delivery: queue}}\n"
            "  - id: no-rm\n    type: beforeToolCall\n    matcher: Bash\n"
            "    command: 'echo no rm >&2; exit 2'\n"
        )
        server = ServeProc(tmp_path, "--hooks", str(hooks), home=home)
        try:
            ran = _hook(tmp_path, "first", "PostToolUse", {"command": "ls"})
            assert _post(server.url, ran)[0].status_code == 200  # creates the outbox, stored
            assert len(receiver.wait_for("/q", 1)) == 1
            outbox = home / ".otelhooks" / "outbox.sqlite3"
            neighbour = subprocess.Popen(
                [sys.executable, "-c", NEIGHBOUR, str(outbox)], stdout=subprocess.PIPE, text=True
            )
            try:
                assert neighbour.stdout is not None
                assert neighbour.stdout.readline().strip() == "locked"
                recorded: list[tuple[httpx.Response, float]] = []
                ran = _hook(tmp_path, "recorder", "PostToolUse", {"command": "ls"})
                first = threading.Thread(target=lambda: recorded.append(_post(server.url, ran)))
                first.start()
                time.sleep(0.1)  # its enqueue is on serve's event loop now
                rm = _hook(tmp_path, "guarded", "PreToolUse", {"command": "rm -rf /"})
                guarded, took = _post(server.url, rm)
                first.join(60)
                # directly, while still locked: the recorder's, then the denied call's (its
                # enqueue waits out SQLite's busy timeout off the event loop, then falls back)
                delivered = receiver.wait_for("/q", 3, timeout_s=60)
            finally:
                neighbour.kill()
                neighbour.wait(10)
        finally:
            server.stop()
    # was a 500 after 8.1 s ("no answer within 8 s", which Claude Code takes as no decision): the
    # event loop waited out SQLite's 5 s busy timeout for the recorder's enqueue, then the deny's
    # own after_tool_call enqueue waited behind it
    assert guarded.status_code == 200, (guarded.text, took)
    assert guarded.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert took < 1.5, took
    assert recorded[0][0].status_code == 200
    assert recorded[0][1] < 1.5, recorded[0][1]  # was 5.1 s
    calls = sorted(r.json()["toolCallId"] for r in delivered)
    assert calls == [  # each once
        "toolu_first_PostToolUse",
        "toolu_guarded_PreToolUse",
        "toolu_recorder_PostToolUse",
    ]
    assert "outbox unavailable, falling back to fetch" in server.output()
