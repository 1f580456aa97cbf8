"""A slow PostgreSQL holds only the events that wait for it: while one session's change waits
for a lock another transaction holds, another session's watched ``PreToolUse`` is still
answered by its guard; the held event is answered once the store's lock timeout passes (its
change made in a scratch state, as any the store cannot make), within the route's deadline:
serve's statements wait at most half of ``--hook-timeout``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks._store._pg_schema import SESSIONS_LOCK
from tests.fleet._fleet import events, start_instance
from tests.reliability._serve_proc import INGEST

pytestmark = pytest.mark.timeout(120)

ROUTE = "/v1/hooks/claude-code"
GUARD = """\
from otelhooks import Block


def guard(event):
    if "rm -rf" in str(getattr(event, "args", "")):
        return Block("rm -rf is not allowed here")
    return event
"""


def _post(url: str, payload: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {INGEST}"}
    return httpx.post(url + ROUTE, json=payload, headers=headers, timeout=30)


def _event(session: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "hook_event_name": name, "cwd": "/tmp", **fields}


def _guarded(tmp: Path) -> Path:
    (tmp / "guard.py").write_text(GUARD)
    hooks = tmp / "guard.yaml"
    hooks.write_text(
        "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
        f"    script: {tmp / 'guard.py'}:guard\n"
    )
    return hooks


@pytest.fixture
def held_lock(pg_url: str) -> Iterator[Any]:
    """A connection whose open transaction holds the sessions' advisory lock."""
    import psycopg

    with psycopg.connect(pg_url) as conn:
        yield conn
        conn.rollback()


def _waiting_for_lock(pg_url: str) -> bool:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize(
    ("timeout", "ended_by"),
    [((), "the store's lock timeout (4 s)"), (("--hook-timeout", "4"), "its lock timeout (2 s)")],
)
def test_a_slow_store_holds_only_its_own_event(
    tmp_path: Path,
    pg_url: str,
    held_lock: Any,
    timeout: tuple[str, ...],
    ended_by: str,
) -> None:
    proc = start_instance(tmp_path, pg_url, "--hooks", str(_guarded(tmp_path)), *timeout)
    try:
        url = proc.url
        assert _post(url, _event("slow", "Notification", message="hi")).status_code == 200
        # every locked session transaction takes it first (SharedSessions._tx): held here, it
        # makes SessionEnd's transaction wait, as a slow or locked database would
        held_lock.execute("SELECT pg_advisory_xact_lock(%s)", (SESSIONS_LOCK,))
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            ending: Future[httpx.Response] = pool.submit(
                _post, url, _event("slow", "SessionEnd", reason="exit")
            )
            while not _waiting_for_lock(pg_url):
                assert not ending.done(), ending.result().text
                assert time.monotonic() - started < 10, "SessionEnd never waited for the lock"
                time.sleep(0.02)
            asked = time.monotonic()
            pre = _event(
                "guarded",
                "PreToolUse",
                tool_name="Bash",
                tool_input={"command": "rm -rf /"},
                tool_use_id="toolu_rm",
            )
            answer = _post(url, pre)
            answered_s = time.monotonic() - asked
            # answered by its guard while the other session's event still waits for the store
            assert answer.status_code == 200, answer.text
            decision = answer.json()["hookSpecificOutput"]
            assert decision["permissionDecision"] == "deny"
            assert "rm -rf is not allowed" in decision["permissionDecisionReason"]
            assert not ending.done(), f"SessionEnd ended before {ended_by}"
            assert answered_s < 1.5, f"the guard's answer took {answered_s:.2f} s"
            ended = ending.result(timeout=30)
        assert ended.status_code == 200, ended.text  # from the scratch state
        assert "postgresql://postgres@127.0.0.1" in proc.output()  # the store named in the log
        held_lock.rollback()
        # the store answers again: the session ends (Claude Code's retry)
        again = _post(url, _event("slow", "SessionEnd", reason="exit"))
        assert again.status_code == 200, again.text
    finally:
        proc.stop()


def _waiting_for_a_table(pg_url: str) -> bool:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND NOT granted"
        ).fetchone()
    return bool(row and row[0])


def test_a_version_read_waiting_for_the_store_does_not_hold_the_event_loop(
    tmp_path: Path, pg_url: str, held_lock: Any
) -> None:
    """``mode=version`` reads the log's head from the store: a round trip, so while it waits
    for a locked table every other request of the same server is still answered at once."""
    proc = start_instance(tmp_path, pg_url)
    try:
        url = proc.url
        assert events(url, mode="version").status_code == 200
        # the log's table locked from another transaction, as a slow or locked database would
        held_lock.execute("LOCK TABLE otelhooks_logs IN ACCESS EXCLUSIVE MODE")
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            version: Future[httpx.Response] = pool.submit(events, url, mode="version")
            while not _waiting_for_a_table(pg_url):
                assert not version.done(), version.result().text
                assert time.monotonic() - started < 10, "the version read never waited"
                time.sleep(0.02)
            asked = time.monotonic()
            refused = httpx.post(
                url + ROUTE, json=_event("s", "Notification"), headers={}, timeout=30
            )
            answered = _post(url, _event("other", "Notification", message="hi"))
            answered_s = time.monotonic() - asked
            assert refused.status_code == 401, refused.text
            assert answered.status_code == 200, answered.text
            assert not version.done(), "the version read ended before the lock timeout"
            assert answered_s < 1.5, f"the other requests took {answered_s:.2f} s"
            ended = version.result(timeout=30)
        assert ended.status_code == 503, ended.text
        assert ended.json()["error"] == "store_busy"  # the store answers: this read waited
        held_lock.rollback()
        again = events(url, mode="version")
        assert again.status_code == 200, again.text
        assert again.json()["head"] >= 0
    finally:
        proc.stop()


def test_a_guard_of_a_locked_session_decides_within_a_short_hook_timeout(
    tmp_path: Path, pg_url: str, held_lock: Any
) -> None:
    """A transaction holding the session's counter row (``SELECT ... FOR UPDATE``): the guarded
    ``PreToolUse`` of that session waits for it at most half of ``--hook-timeout``, then its
    change goes to the scratch state and the guard decides. The store waited 5 s whatever the
    route's deadline: with ``--hook-timeout 3`` the route answered 500 and the tool ran."""
    proc = start_instance(
        tmp_path, pg_url, "--hooks", str(_guarded(tmp_path)), "--hook-timeout", "3"
    )
    try:
        url = proc.url
        ls = _event("locked", "PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
        assert _post(url, {**ls, "tool_use_id": "toolu_ls"}).status_code == 200
        held_lock.execute(
            "SELECT * FROM otelhooks_claude_code.counters WHERE session_id = 'locked' FOR UPDATE"
        ).fetchall()
        started = time.monotonic()
        rm = {**ls, "tool_input": {"command": "rm -rf /"}, "tool_use_id": "toolu_rm"}
        answer = _post(url, rm)
        assert time.monotonic() - started < 3
        assert answer.status_code == 200, answer.text
        decision = answer.json()["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert "rm -rf is not allowed" in decision["permissionDecisionReason"]
    finally:
        proc.stop()
