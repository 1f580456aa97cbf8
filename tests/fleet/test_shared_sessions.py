"""Claude Code sessions in PostgreSQL: a tool use started on one instance ends on another."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import EventLogServer, serve
from otelhooks._store._open import open_store
from otelhooks._store._pg_sessions import SharedSessions
from otelhooks.integrations.coding_agents import BridgeState
from otelhooks.integrations.coding_agents._state_rows import OpenOperation

TOKEN = "fleet-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"


def _bash(name: str, use_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-fleet",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": use_id,
        **fields,
    }


@pytest.fixture
def pair(pg_url: str) -> Iterator[list[tuple[EventLogServer, InMemorySpanExporter]]]:
    made: list[tuple[EventLogServer, InMemorySpanExporter]] = []
    try:
        for _ in range(2):
            exported = InMemorySpanExporter()
            server = serve(token=TOKEN, span_exporters=[exported], store=pg_url, web=False)
            made.append((server, exported))
        yield made
    finally:
        for server, _ in made:
            server.stop()


def test_pre_tool_use_on_one_instance_and_post_tool_use_on_another_make_one_span(
    pair: list[tuple[EventLogServer, InMemorySpanExporter]],
) -> None:
    (a, in_a), (b, in_b) = pair
    pre = httpx.post(a.url + ROUTE, json=_bash("PreToolUse", "toolu_x"), headers=AUTH)
    assert pre.status_code == 200
    post = httpx.post(
        b.url + ROUTE,
        json=_bash("PostToolUse", "toolu_x", tool_response={"stdout": "ok"}),
        headers=AUTH,
    )
    assert post.status_code == 200
    a.stop()
    b.stop()  # flushes the span exporters
    spans = [
        s
        for s in [*in_a.get_finished_spans(), *in_b.get_finished_spans()]
        if s.name.startswith("execute_tool")
    ]
    assert len(spans) == 1
    assert spans[0] in in_b.get_finished_spans()
    assert spans[0].attributes is not None
    assert spans[0].attributes.get("gen_ai.tool.call.id") == "toolu_x"


def test_an_interrupt_on_another_instance_ends_the_turn_and_the_call_it_stopped(
    pair: list[tuple[EventLogServer, InMemorySpanExporter]],
) -> None:
    (a, in_a), (b, in_b) = pair
    prompt = {**_bash("UserPromptSubmit", ""), "prompt": "go"}
    for body in (prompt, _bash("PreToolUse", "toolu_i")):
        assert httpx.post(a.url + ROUTE, json=body, headers=AUTH).status_code == 200
    stop = {**_bash("Interrupt", ""), "source": "user", "reason": "stop", "via": "terminal"}
    assert httpx.post(b.url + ROUTE, json=stop, headers=AUTH).status_code == 200
    a.stop()
    b.stop()  # flushes the span exporters
    spans = [*in_a.get_finished_spans(), *in_b.get_finished_spans()]
    ended = {s.name: s for s in spans if s in in_b.get_finished_spans()}
    assert {s.name for s in spans} >= {"execute_tool Bash", "invoke_agent claude-code"}
    call, turn = ended["execute_tool Bash"], ended["invoke_agent claude-code"]
    assert call.attributes is not None
    assert turn.attributes is not None
    assert (call.attributes["gen_ai.tool.call.id"], call.attributes["otelhooks.tool.outcome"]) == (
        "toolu_i",
        "interrupted",
    )
    assert turn.attributes["otelhooks.operation.complete_reason"] == "interrupted"


@pytest.fixture
def two_stores(pg_url: str) -> Iterator[list[SharedSessions]]:
    """The session state of two instances (two stores, two pools) on one database."""
    stores = []
    try:
        for _ in range(2):
            stores.append(open_store(pg_url))
        yield [s.claude_code_sessions() for s in stores]  # type: ignore[misc]
    finally:
        for store in stores:
            store.close()


def test_a_pre_tool_use_repeated_on_two_instances_at_once_records_one_tool_use(
    two_stores: list[SharedSessions],
) -> None:
    a, b = two_stores
    started: list[tuple[int, int]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def start(sessions: SharedSessions) -> None:
        barrier.wait(10)  # the turn is opened by one of them, at the same time
        tool = sessions.begin_tool("sess-race", "toolu_race", "Bash", {"command": "ls"})
        with lock:
            started.append((tool.span_id, tool.parent_span_id))

    threads = [threading.Thread(target=start, args=(two_stores[n % 2],)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(started) == 8
    assert len(set(started)) == 1  # every instance got the first record, in one turn
    op = b.peek_operation("sess-race")
    assert op is not None
    assert started[0][1] == op.span_id
    ended = b.end_tool("sess-race", "toolu_race")
    assert ended is not None
    assert ended.span_id == started[0][0]
    assert ended.call_index == 0  # counted once
    assert a.end_tool("sess-race", "toolu_race") is None  # ended once


def test_tool_calls_started_on_two_instances_are_numbered_in_order(
    two_stores: list[SharedSessions],
) -> None:
    a, b = two_stores
    op = a.current_operation("sess-count")
    indexes = [
        (a if n % 2 else b).begin_tool(op.session_id, f"toolu_{n}", "Bash", {}).call_index
        for n in range(6)
    ]
    assert indexes == list(range(6))


def test_model_calls_between_tool_calls_take_no_call_index(
    two_stores: list[SharedSessions],
) -> None:
    a, b = two_stores
    op = a.current_operation("sess-model")
    indexes = []
    for n in range(3):
        call = b.begin_tool(op.session_id, "otelhooks:model-call", "chat", {}, counted=False)
        assert call.call_index == -1
        assert a.end_tool("sess-model", "otelhooks:model-call") is not None
        indexes.append(
            (a if n % 2 else b).begin_tool(op.session_id, f"toolu_{n}", "Bash", {}).call_index
        )
    assert indexes == [0, 1, 2]


def test_a_verdict_kept_on_one_instance_is_read_with_the_tool_use_on_another(
    two_stores: list[SharedSessions],
) -> None:
    a, b = two_stores
    tool = a.begin_tool("sess-attrs", "toolu_a", "Bash", {})
    a.set_tool_attributes(tool, {"otelhooks.hook.decision": "allow"})
    assert b.has_open_tool("sess-attrs", "toolu_a")
    assert b.tool_span("sess-attrs", "toolu_a") == tool.span_id
    ended = b.end_tool("sess-attrs", "toolu_a")
    assert ended is not None
    assert ended.attributes == {"otelhooks.hook.decision": "allow"}
    assert not a.has_open_tool("sess-attrs", "toolu_a")


@pytest.fixture
def short_lived(pg_url: str) -> Iterator[tuple[list[SharedSessions], list[tuple[int, str]]]]:
    """Two instances whose sessions expire after 1 s idle, and the drops they count."""
    from otelhooks._store._postgres import PostgresStore

    drops: list[tuple[int, str]] = []
    stores = []
    try:
        for _ in range(2):
            stores.append(open_store(pg_url))
        made = [
            SharedSessions(s, ttl_s=1.0, on_drop=lambda n, why: drops.append((n, why)))
            for s in stores
            if isinstance(s, PostgresStore)
        ]
        yield made, drops
    finally:
        for store in stores:
            store.close()


def test_expiry_keeps_a_session_another_instance_is_using(
    short_lived: tuple[list[SharedSessions], list[tuple[int, str]]],
) -> None:
    (a, b), drops = short_lived
    op = a.current_operation("sess-busy")
    a.begin_tool(op.session_id, "toolu_busy", "Bash", {})
    for _ in range(8):  # idle in a's memory past the ttl, used on b all along
        time.sleep(0.25)
        b.current_operation("sess-busy")
    a.current_operation("sess-other")  # a's bounds run: its memory says sess-busy expired
    assert a.held[0] == 1  # a forgot it
    assert b.has_open_tool("sess-busy", "toolu_busy")  # and deleted nothing b uses
    assert drops == []


def test_a_session_idle_on_every_instance_past_the_ttl_is_deleted(
    short_lived: tuple[list[SharedSessions], list[tuple[int, str]]],
) -> None:
    (a, b), drops = short_lived
    a.begin_tool("sess-idle", "toolu_idle", "Bash", {})
    time.sleep(1.5)
    a.current_operation("sess-other")
    assert not b.has_open_tool("sess-idle", "toolu_idle")
    assert drops == [(1, "expired")]


def test_a_tool_uses_start_keeps_its_attributes_on_another_instance(
    two_stores: list[SharedSessions],
) -> None:
    a, b = two_stores
    kept = {"otelhooks.tool.args.size": 14, "claude_code.prompt_id": "p-1"}
    started = a.begin_tool("sess-attrs", "toolu_a", "Bash", {}, attributes=kept)
    assert started.attributes == kept
    assert b.begin_tool("sess-attrs", "toolu_a", "Bash", {}).attributes == kept  # repeated
    ended = b.end_tool("sess-attrs", "toolu_a")
    assert ended is not None
    assert ended.attributes == kept
    assert ended.turn_index == 1  # the turn's count is kept beside them


def _same(read: OpenOperation | None, made: OpenOperation) -> bool:
    """The turn ``made``, as read again: its start on the reader's clock, within a second."""
    return (
        read is not None
        and replace(read, start_ns=made.start_ns) == made
        and abs(read.start_ns - made.start_ns) < 1_000_000_000
    )


def test_a_turn_opened_on_one_instance_is_replaced_and_closed_on_another(
    two_stores: list[SharedSessions],
) -> None:
    # UserPromptSubmit and Stop: each one call of a function of the store (migration 7)
    a, b = two_stores
    first, previous = a.start_operation("sess-turns", "first")
    assert previous is None
    a.begin_tool("sess-turns", "toolu_t1", "Bash", {})
    second, previous = b.start_operation("sess-turns", "second")
    # the turn it replaces, to be ended as interrupted; a start is read on the reader's clock
    assert _same(previous, first)
    assert _same(b.peek_operation("sess-turns"), second)
    # the new turn counts its tools' calls from 1 again; the session-wide index goes on
    tool = a.begin_tool("sess-turns", "toolu_t2", "Bash", {})
    assert (tool.turn_index, tool.call_index) == (1, 1)
    assert tool.operation_id == second.operation_id
    assert _same(a.end_operation("sess-turns"), second)
    assert b.end_operation("sess-turns") is None
    assert a.peek_operation("sess-turns") is None
    again = b.begin_tool("sess-turns", "toolu_t3", "Bash", {})  # a turn opened for it
    assert again.turn_index == 1
    with a.store.transaction() as conn:
        touched = conn.execute(
            "SELECT count(*) FROM otelhooks_claude_code.touched WHERE session_id = %s",
            ("sess-turns",),
        ).fetchone()
    assert touched == (1,)


def test_the_locked_way_counts_a_tool_use_once_on_postgresql(
    two_stores: list[SharedSessions],
) -> None:
    # the bridge's own SQL, run in the store's locked transaction (the fallback of a statement
    # that keeps losing races)
    a, b = two_stores
    op = a.current_operation("sess-locked")
    first = BridgeState.begin_tool(a, op.session_id, "toolu_l", "Bash", {}, attributes={"k": 1})
    again = BridgeState.begin_tool(b, op.session_id, "toolu_l", "Bash", {})
    assert again == first
    model = BridgeState.begin_tool(b, op.session_id, "model", "chat", {}, counted=False)
    assert model.call_index == -1
    assert BridgeState.begin_tool(a, op.session_id, "model", "chat", {}, counted=False) == model
    following = BridgeState.begin_tool(a, op.session_id, "toolu_m", "Bash", {})
    assert (first.call_index, following.call_index) == (0, 1)
    assert (first.turn_index, following.turn_index) == (1, 2)
    ended = b.end_tool(op.session_id, "toolu_l")
    assert ended is not None
    assert ended.attributes == {"k": 1}


def test_the_hook_route_on_postgresql_always_takes_its_runner(
    pair: list[tuple[EventLogServer, InMemorySpanExporter]],
) -> None:
    (a, _), _ = pair
    route = next(o for o in a._owned if hasattr(o, "route")).route
    # no hook watches Read, but every session change is a round trip: never on the event loop
    assert not route.inline({"hook_event_name": "PreToolUse", "tool_name": "Read"})
    assert not route.bridge.state.local


ENDED = """\
import pathlib


def ended(event):
    with pathlib.Path(OUT).open("a") as out:
        out.write(f"{event.sessionKey} {event.reason}\\n")
"""


def test_a_session_end_on_an_instance_that_never_saw_the_session_ends_it_and_runs_its_hooks(
    pg_url: str, tmp_path: Path
) -> None:
    # Before, the instance answered 409 ("not known to the server"), a non-blocking error for
    # Claude Code: the session_end hook never ran and the turn and tool use another instance
    # opened stayed open in the store until their ttl.
    out = tmp_path / "ended.txt"
    (tmp_path / "ended.py").write_text(ENDED.replace("OUT", repr(str(out))))
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        f"hooks:\n  - id: on-end\n    type: session_end\n    script: {tmp_path}/ended.py:ended\n"
    )
    made: list[tuple[EventLogServer, InMemorySpanExporter]] = []
    try:
        for _ in range(2):
            exported = InMemorySpanExporter()
            server = serve([hooks], token=TOKEN, span_exporters=[exported], store=pg_url, web=False)
            made.append((server, exported))
        (a, _), (b, in_b) = made
        prompt = {**_bash("UserPromptSubmit", ""), "prompt": "hello"}
        assert httpx.post(a.url + ROUTE, json=prompt, headers=AUTH).status_code == 200
        pre = httpx.post(a.url + ROUTE, json=_bash("PreToolUse", "toolu_end"), headers=AUTH)
        assert pre.status_code == 200
        end = {**_bash("SessionEnd", ""), "reason": "logout"}
        answer = httpx.post(b.url + ROUTE, json=end, headers=AUTH)
        assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 30  # observers are queued
        # the hook opens the file before it writes its line: wait for the line, not the file
        while not (out.exists() and out.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "the session_end hook never wrote its line"
            time.sleep(0.05)
        assert out.read_text() == "sess-fleet logout\n"
        b.stop()  # flushes its exporter
        names = {s.name: s for s in in_b.get_finished_spans()}
        assert "agent_lifecycle session_end" in names
        tool = names["execute_tool Bash"]  # ended there, as the session's end
        assert tool.attributes is not None
        assert tool.attributes.get("gen_ai.tool.call.id") == "toolu_end"
        assert "invoke_agent claude-code" in names  # the turn too
    finally:
        for server, _ in made:
            server.stop()
    store = open_store(pg_url)
    try:
        sessions = store.claude_code_sessions()
        assert sessions is not None
        assert not sessions.has_open_tool("sess-fleet", "toolu_end")
        assert sessions.peek_operation("sess-fleet") is None
    finally:
        store.close()


_NAME_GUARD = """\
from otelhooks import Block


def guard(event):
    if event.apiName == "Bash" and "rm -rf" in str(event.args):
        return Block("rm -rf is not allowed here")
    return event
"""


@pytest.mark.parametrize("store", ["memory", "postgresql"])
def test_a_guard_reads_the_tool_of_its_own_call_when_the_tool_use_id_is_open(
    tmp_path: Path, pg_url: str, store: str
) -> None:
    # A PreToolUse whose tool_use_id is open with another tool (a session id shared by two
    # agents, a client choosing its ids) gave the guard the open one's tool name: a guard
    # that checks it allowed `rm -rf` as a `Read`.
    (tmp_path / "guard.py").write_text(_NAME_GUARD)
    hooks = tmp_path / "guard.yaml"
    hooks.write_text(
        f"hooks:\n  - id: g\n    type: PreToolUse\n    script: {tmp_path}/guard.py:guard\n"
    )
    server = serve([hooks], token=TOKEN, web=False, store=pg_url if store != "memory" else None)
    try:
        read = _bash("PreToolUse", "toolu_same", tool_name="Read", tool_input={"file_path": "x"})
        assert httpx.post(server.url + ROUTE, json=read, headers=AUTH).json() == {}
        rm = _bash("PreToolUse", "toolu_same", tool_input={"command": "rm -rf /tmp/x"})
        answer = httpx.post(server.url + ROUTE, json=rm, headers=AUTH).json()
    finally:
        server.stop()
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
