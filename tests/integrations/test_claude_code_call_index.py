"""LobeHub's ``callIndex`` from the Claude Code bridge: each tool's calls in the turn, from 1.

LobeHub (``executors/toolPreparation.ts`` at ``96bee5f``) counts the earlier calls of the same
``identifier/apiName`` in the operation, plus one. The bridge sends the same number in a tool
use's ``beforeToolCall`` and ``afterToolCall`` bodies, received here by a real HTTP server on
127.0.0.1: through the command bridge (one process per hook event, the SQLite state file) and
through ``serve``'s hook route (its sessions).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import serve
from otelhooks.integrations.claude_code import BridgeState
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from tests._webhook_server import WebhookServer, webhook_server

pytestmark = pytest.mark.timeout(120)

HOOKS = """
hooks:
  - id: before
    type: beforeToolCall
    webhook: {{url: "{url}/before"}}
  - id: after
    type: afterToolCall
    webhook: {{url: "{url}/after"}}
"""
SESSION = "sess-calls"
TOKEN = "call-index-admin"
ROUTE = "/v1/hooks/claude-code"

Send = Callable[[int, dict[str, Any]], None]


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def tool(name: str, use_id: str, tool_name: str, **fields: Any) -> dict[str, Any]:
    return event(name, tool_name=tool_name, tool_input={"n": use_id}, tool_use_id=use_id, **fields)


def play(send: Send) -> None:
    """Two turns; in the first Bash, Read, Bash (the last one's PreToolUse repeated), with
    PreToolUse and PostToolUse sent to alternating receivers (0 and 1)."""
    send(0, event("UserPromptSubmit", prompt="first"))
    send(0, tool("PreToolUse", "t1", "Bash"))
    send(1, tool("PostToolUse", "t1", "Bash", tool_response={"stdout": "ok"}))
    send(0, tool("PreToolUse", "t2", "Read"))
    send(0, tool("PreToolUse", "t3", "Bash"))
    send(1, tool("PreToolUse", "t3", "Bash"))  # Claude Code repeats it: it keeps its number
    send(1, tool("PostToolUse", "t2", "Read", tool_response={"file": "x"}))
    send(0, tool("PostToolUse", "t3", "Bash", tool_response={"stdout": "ok"}))
    send(1, event("Stop", stop_hook_active=False))
    send(1, event("UserPromptSubmit", prompt="second"))
    send(1, tool("PreToolUse", "t4", "Bash"))
    send(0, tool("PostToolUse", "t4", "Bash", tool_response={"stdout": "ok"}))


def numbers(server: WebhookServer, path: str, count: int) -> list[tuple[str, str, int]]:
    bodies = [r.json() for r in server.wait_for(path, count, timeout_s=120)]
    assert len(bodies) == count
    return sorted((b["toolCallId"], b["apiName"], b["callIndex"]) for b in bodies)


def check(server: WebhookServer) -> None:
    before = numbers(server, "/before", 5)
    assert before == [
        ("t1", "Bash", 1),
        ("t2", "Read", 1),
        ("t3", "Bash", 2),
        ("t3", "Bash", 2),
        ("t4", "Bash", 1),
    ]
    after = numbers(server, "/after", 4)
    assert after == [("t1", "Bash", 1), ("t2", "Read", 1), ("t3", "Bash", 2), ("t4", "Bash", 1)]


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with webhook_server() as running:
        yield running


@pytest.fixture
def hooks(tmp_path: Path, server: WebhookServer) -> Path:
    path = tmp_path / "hooks.yaml"
    path.write_text(HOOKS.format(url=server.url))
    return path


def test_the_command_bridge_numbers_each_tool_in_the_turn_from_1(
    tmp_path: Path, hooks: Path, server: WebhookServer
) -> None:
    state = tmp_path / "state.sqlite3"
    env = {**os.environ, "HOME": str(tmp_path)}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        env.pop(name, None)

    def send(_: int, payload: dict[str, Any]) -> None:
        cmd = [
            sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks),
            "--traces-out", str(tmp_path / "traces.jsonl"), "--state", str(state),
        ]  # fmt: skip
        done = subprocess.run(
            cmd, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr

    play(send)
    check(server)
    # the session-wide index of the spans is unchanged: 0, 1, 2 in the first turn, 3 after
    spans = [
        json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines() if line
    ]
    assert spans  # the OTLP JSON lines the processes wrote
    indexes = sorted(
        (a["value"].get("intValue"), s["spanId"])
        for line in spans
        for rs in line["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
        for a in s.get("attributes", [])
        if a["key"] == "otelhooks.tool.call_index"
    )
    assert [int(i) for i, _ in indexes] == [0, 1, 2, 3]


def test_serves_route_numbers_each_tool_in_the_turn_from_1(
    hooks: Path, server: WebhookServer
) -> None:
    exported = InMemorySpanExporter()
    instance = serve([hooks], token=TOKEN, span_exporters=[exported], web=False)
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:

            def send(_: int, payload: dict[str, Any]) -> None:
                assert client.post(instance.url + ROUTE, json=payload).status_code == 200

            play(send)
        check(server)
    finally:
        instance.stop()
    indexes = sorted(
        s.attributes.get("otelhooks.tool.call_index") for s in exported.get_finished_spans()
        if s.attributes is not None and s.name.startswith("execute_tool")
    )  # fmt: skip
    assert indexes == [0, 1, 2, 3]


def test_an_old_state_file_gains_the_turn_counts_and_keeps_its_rows(tmp_path: Path) -> None:
    """A state file written before the turn counts (no ``tool_turns`` table) still works; a tool
    use it holds open ends with no turn number (0), a new one is numbered."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE operations (session_id TEXT PRIMARY KEY, operation_id TEXT NOT NULL,"
            " span_id INTEGER NOT NULL, start_ns INTEGER NOT NULL, prompt TEXT NOT NULL);"
            "CREATE TABLE tools (session_id TEXT NOT NULL, tool_use_id TEXT NOT NULL,"
            " span_id INTEGER NOT NULL, parent_span_id INTEGER NOT NULL,"
            " operation_id TEXT NOT NULL, start_ns INTEGER NOT NULL, tool_name TEXT NOT NULL,"
            " tool_input TEXT NOT NULL, call_index INTEGER NOT NULL, attributes TEXT NOT NULL,"
            " PRIMARY KEY (session_id, tool_use_id));"
            "CREATE TABLE counters (session_id TEXT PRIMARY KEY, tool_calls INTEGER NOT NULL);"
            "INSERT INTO operations VALUES ('s', 'op_old', 7, 1, '');"
            "INSERT INTO tools VALUES"
            " ('s', 'old', 8, 7, 'op_old', 1, 'Bash', '{}', 0, '{\"a\": 1}');"
            "INSERT INTO counters VALUES ('s', 1);"
        )
    db.close()
    state = BridgeState(path)
    op = state.current_operation("s")
    assert op.operation_id == "op_old"
    new = state.begin_tool(op.session_id, "new", "Bash", {})
    assert (new.call_index, new.turn_index) == (1, 1)
    old = state.end_tool("s", "old")
    assert old is not None
    assert (old.call_index, old.turn_index, old.attributes) == (0, 0, {"a": 1})


def test_a_turn_naming_too_many_tools_loses_its_counts_not_memory() -> None:
    """A client chooses tool names: the turn counts a server keeps per session are bounded by
    ``max_tools_per_session`` distinct names, past which they restart (and are counted)."""
    drops: list[str] = []
    sessions = ServerSessions(max_tools_per_session=3, on_drop=lambda n, why: drops.append(why))
    try:
        op = sessions.current_operation("s")
        baseline = sessions.held
        numbers = []
        for n in range(5):
            for _ in range(2):
                use = f"u{len(numbers)}"
                numbers.append(sessions.begin_tool(op.session_id, use, f"tool-{n}", {}).turn_index)
                assert sessions.end_tool("s", use) is not None
        # tool-3 is the fourth name: the counts restart, then it and tool-4 count again
        assert numbers == [1, 2, 1, 2, 1, 2, 1, 2, 1, 2]
        assert drops == ["too_many_tools"]
        assert sessions.held[1] > baseline[1]  # tool-3 and tool-4's rows are accounted
        rows = sessions._tx(
            lambda db: db.execute("SELECT tool_name FROM tool_turns WHERE session_id = 's'")
        ).fetchall()
        assert sorted(r[0] for r in rows) == ["tool-3", "tool-4"]
        sessions.start_operation("s", "next")
        assert sessions.held == baseline
        count = sessions._one("SELECT count(*) FROM tool_turns", ())
        assert count is not None
        assert count[0] == 0
    finally:
        sessions.close()
