"""A Claude Code session's spend on a PostgreSQL store: the budget guard of every instance, and
of one restarted, sees what the session spent (before, each ``serve`` kept it in its memory)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from otelhooks import EventLogServer, serve
from tests.integrations.test_claude_code_serve import AUTH, ROUTE, TOKEN, _api_request_log, _bash

GUARD = "hooks:\n  - id: cap\n    type: beforeToolCall\n    budget: {session_usd: 0.0003}\n"


@pytest.fixture
def started(pg_url: str) -> Iterator[list[EventLogServer]]:
    made: list[EventLogServer] = []
    yield made
    for server in made:
        server.stop()


def _instance(made: list[EventLogServer], hooks: Path, pg_url: str) -> EventLogServer:
    made.append(serve([hooks], token=TOKEN, store=pg_url, web=False))
    return made[-1]


def _pre(server: EventLogServer, use_id: str) -> dict[str, object]:
    answer = httpx.post(server.url + ROUTE, json=_bash("PreToolUse", use_id, "ls"), headers=AUTH)
    assert answer.status_code == 200
    return dict(answer.json())


def _decision(answer: dict[str, object]) -> object:
    return (answer.get("hookSpecificOutput") or {}).get("permissionDecision", "allow")  # type: ignore[attr-defined]


def _costs(server: EventLogServer) -> None:
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    body = _api_request_log().SerializeToString()  # Claude Code says: $0.00036
    assert httpx.post(server.url + "/v1/logs", content=body, headers=headers).is_success


def test_a_session_past_its_budget_is_denied_on_every_instance_and_after_a_restart(
    tmp_path: Path, pg_url: str, started: list[EventLogServer]
) -> None:
    hooks = tmp_path / "guard.yaml"
    hooks.write_text(GUARD)
    a = _instance(started, hooks, pg_url)
    b = _instance(started, hooks, pg_url)
    _costs(a)  # the session's telemetry reaches one instance only
    on_a, on_b = _decision(_pre(a, "toolu_s1")), _decision(_pre(b, "toolu_s2"))
    a.stop()
    b.stop()
    c = _instance(started, hooks, pg_url)
    restarted = _decision(_pre(c, "toolu_s3"))
    assert on_a == "deny"
    assert on_b == "deny"  # was allow: the other instance saw $0
    assert restarted == "deny"  # was allow: a restarted serve started the session from $0


@pytest.mark.parametrize("fail_closed", [False, True])
@pytest.mark.parametrize("on_error", ["continue", "block"])
def test_a_spend_the_store_cannot_read_fails_the_guard_and_its_on_error_decides(
    tmp_path: Path, pg_url: str, started: list[EventLogServer], on_error: str, fail_closed: bool
) -> None:
    # --fail-closed is about the bridge's own failures (docs/adapters.md): a guard that runs
    # and fails, this one too, is its hook's on_error's to decide, as the help and docs say
    hooks = tmp_path / "guard.yaml"
    hooks.write_text(f"{GUARD}    on_error: {on_error}\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False, fail_closed=fail_closed)
    started.append(server)
    _costs(server)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the totals cannot be read now
        conn.execute("ALTER TABLE otelhooks_claude_code.spend RENAME TO spend_gone")
    answer = _pre(server, "toolu_u1")
    if on_error == "block":
        assert _decision(answer) == "deny"
    else:  # the call goes on, and the person is told the guard could not decide
        assert _decision(answer) == "allow"
        assert "budget guard cannot read the spend" in str(answer.get("systemMessage"))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_kept_totals_are_bounded_by_count_and_a_long_id_costs_its_digest(
    pg_url: str, kind: str
) -> None:
    from otelhooks._store._open import open_store
    from otelhooks.integrations.coding_agents._sessions import ServerSessions

    store = open_store(pg_url) if kind == "postgresql" else None
    sessions = store.claude_code_sessions() if store is not None else ServerSessions(max_sessions=3)
    sessions.max_sessions = 3
    try:
        long_id = "x" * 1_000_000  # any string a client sends
        for n in range(5):
            sessions.add_spend(f"s{n}", 0.5, 10, 1)
        sessions.add_spend(long_id, 0.25, 1, 1)
        kept = [sessions.spend_of(f"s{n}").calls for n in range(5)]
        assert sessions.spend_of(long_id).cost_usd == 0.25
        assert sessions.add_spend(long_id, None, 1, 1).unpriced_calls == 1
        if store is not None:
            import psycopg

            with psycopg.connect(pg_url) as conn:
                row = conn.execute(
                    "SELECT count(*), max(octet_length(key)) FROM otelhooks_claude_code.spend"
                ).fetchone()
            assert row == (3, 16)
    finally:
        sessions.close()
        if store is not None:
            store.close()
    assert kept == [0, 0, 0, 1, 1]  # the oldest forgotten; the newest three kept


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_keyed_call_is_added_once_and_the_kept_keys_are_bounded(
    tmp_path: Path, pg_url: str, kind: str
) -> None:
    from otelhooks._store._open import open_store
    from otelhooks.integrations.coding_agents._sessions import ServerSessions

    path = tmp_path / "sessions.db"
    store = open_store(pg_url) if kind == "postgresql" else None
    sessions = store.claude_code_sessions() if store is not None else ServerSessions(path)
    sessions.max_calls = 3
    try:
        first = sessions.add_spend("s", 0.5, 10, 1, b"call-1")
        again = sessions.add_spend("s", 0.5, 10, 1, b"call-1")  # the client's retry
        for n in range(2, 601):  # a session's calls: keys past the bound forgotten as it goes
            sessions.add_spend("s", 0.0, 0, 0, f"call-{n}".encode())
        total = sessions.spend_of("s")
        if store is not None:
            with psycopg.connect(pg_url) as conn:
                row = conn.execute("SELECT count(*) FROM otelhooks_claude_code.spend_calls")
                kept = row.fetchone()
        else:
            import sqlite3

            with sqlite3.connect(path) as db:
                kept = db.execute("SELECT count(*) FROM spend_calls").fetchone()
    finally:
        sessions.close()
        if store is not None:
            store.close()
    assert first is not None
    assert first.calls == 1
    assert again is None
    assert (total.cost_usd, total.calls) == (0.5, 600)
    # pruned every 256th call of a session down to the bound: at call 513, 87 calls ago
    assert kept == (3 + 87,)


def test_an_id_past_postgresqls_index_limit_leaves_every_other_sessions_guard_deciding(
    tmp_path: Path, pg_url: str, started: list[EventLogServer]
) -> None:
    # An index row of an id this long (random: it does not compress) is past PostgreSQL's
    # limit. That error was taken for the store being down: for a second every session's
    # change and spend read skipped the store, so the session past its budget below ran its
    # call with "a hook failed and did not decide".
    hooks = tmp_path / "guard.yaml"
    hooks.write_text(GUARD)
    server = _instance(started, hooks, pg_url)
    _costs(server)
    huge = {**_bash("PreToolUse", "toolu_h", "ls"), "session_id": secrets.token_hex(20_000)}
    hostile = httpx.post(server.url + ROUTE, json=huge, headers=AUTH)
    assert hostile.status_code == 200
    assert _decision(hostile.json()) == "allow"  # its own guard decided, on a scratch state
    answer = _pre(server, "toolu_v")
    assert _decision(answer) == "deny", answer


def test_one_sessions_lock_timeout_leaves_every_other_sessions_guard_deciding(
    tmp_path: Path, pg_url: str, started: list[EventLogServer]
) -> None:
    # A change that waits past the lock timeout for a lock another transaction holds failed
    # alone; it was taken for the store being down: for a second every session's change and
    # spend read skipped the store, and the session past its budget below ran its call.
    from otelhooks._store._pg_schema import SESSIONS_LOCK

    hooks = tmp_path / "guard.yaml"
    hooks.write_text(GUARD)
    server = serve([hooks], token=TOKEN, store=pg_url, web=False, hook_timeout_s=2.0)
    started.append(server)  # statements and lock waits: 1 s
    _costs(server)
    with psycopg.connect(pg_url) as holder:  # a real lock, held by another connection
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (SESSIONS_LOCK,))
        end = {"session_id": "other", "hook_event_name": "SessionEnd", "reason": "exit"}
        waited = httpx.post(server.url + ROUTE, json=end, headers=AUTH, timeout=10)
        assert waited.status_code == 200, waited.text  # its change made in the scratch state
        answer = _pre(server, "toolu_l")  # within the second the store was skipped
        holder.rollback()
    assert _decision(answer) == "deny", answer
