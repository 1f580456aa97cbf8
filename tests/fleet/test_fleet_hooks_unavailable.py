"""The Claude Code hook route while PostgreSQL cannot keep the session state: the hooks still
decide. Claude Code runs the tool when an HTTP hook answers anything but 2xx, and a guard's
decision does not need the shared state (it only joins a ``PreToolUse`` to its ``PostToolUse``),
so the change is made in a scratch state in memory (as the command bridge does when its state
file cannot be used), never answered ``503``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import read_otlp_json_lines
from tests._postgres import PostgresCluster
from tests.fleet._fleet import StallingProxy, start_instance
from tests.reliability._serve_proc import INGEST, ServeProc

ROUTE = "/v1/hooks/claude-code"
GUARD = """\
from otelhooks import Block


def guard(event):
    if "rm -rf" in str(getattr(event, "args", "")):
        return Block("rm -rf is not allowed here")
    return event
"""


def _hook(
    name: str, use_id: str = "toolu_down", command: str = "ls", **fields: Any
) -> dict[str, Any]:
    return {
        "session_id": "sess-down",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use_id,
        **fields,
    }


def _post(url: str, payload: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {INGEST}"}
    return httpx.post(url + ROUTE, json=payload, headers=headers, timeout=30)


def _guarded(tmp: Path) -> Path:
    (tmp / "guard.py").write_text(GUARD)
    hooks = tmp / "guard.yaml"
    hooks.write_text(
        "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
        f"    script: {tmp / 'guard.py'}:guard\n"
    )
    return hooks


def _denial(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    decision = response.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny", decision
    return str(decision["permissionDecisionReason"])


@pytest.fixture
def down(cluster: PostgresCluster) -> Iterator[None]:
    """PostgreSQL stopped for the test's body (started again afterwards)."""
    cluster.stop()
    try:
        yield
    finally:
        cluster.start()


@pytest.fixture(params=[(), ("--fail-closed",)], ids=["default", "fail-closed"])
def guarded(request: pytest.FixtureRequest, tmp_path: Path, pg_url: str) -> Iterator[ServeProc]:
    proc = start_instance(tmp_path, pg_url, "--hooks", str(_guarded(tmp_path)), *request.param)
    try:
        yield proc
    finally:
        proc.stop()


def test_a_guard_still_denies_a_pre_tool_use_while_the_store_is_down(
    guarded: ServeProc, down: None
) -> None:
    started = time.monotonic()
    denied = _post(guarded.url, _hook("PreToolUse", "toolu_rm", "rm -rf /"))
    # the store's connection wait (2 s), well inside Claude Code's timeout (10 s)
    assert time.monotonic() - started < 5
    # the guard's own answer, not a 503 (Claude Code would run the tool) nor fail-closed's
    assert _denial(denied) == "rm -rf is not allowed here"
    allowed = _post(guarded.url, _hook("PreToolUse", "toolu_ls"))
    assert (allowed.status_code, allowed.json()) == (200, {})
    # what the guard saw but the store did not keep is said, naming the store
    assert "the store cannot keep this claude-code session change" in guarded.output()
    assert "postgresql://postgres@127.0.0.1" in guarded.output()


def test_a_guard_still_denies_in_time_when_the_store_stops_answering(
    tmp_path: Path, pg_url: str
) -> None:
    """A store that never answers (the network path stops forwarding, nothing closed): the
    statement waiting for it is given up past the statement timeout (4 s) and a second, within
    the route's deadline (8 s), and the guard decides. It got the route's 500 at 8 s."""
    proxy = StallingProxy(int(pg_url.rsplit(":", 1)[1].split("/")[0]))
    proc = start_instance(tmp_path, proxy.url(pg_url), "--hooks", str(_guarded(tmp_path)))
    try:
        assert _post(proc.url, _hook("PreToolUse", "toolu_ls")).json() == {}
        proxy.stall()
        started = time.monotonic()
        denied = _post(proc.url, _hook("PreToolUse", "toolu_rm", "rm -rf /"))
        assert time.monotonic() - started < 8  # the route's deadline (then a 500)
        assert _denial(denied) == "rm -rf is not allowed here"
        assert "no answer to a statement" in proc.output()
    finally:
        proxy.stalled.clear()  # serve stops as fast as on a store that answers
        proc.stop()
        proxy.close()


def test_a_tool_use_started_while_the_store_is_down_ends_while_it_is_down(
    guarded: ServeProc, down: None
) -> None:
    assert _post(guarded.url, _hook("PreToolUse")).json() == {}
    ended = _post(guarded.url, _hook("PostToolUse", tool_response={"stdout": "a\n"}))
    assert (ended.status_code, ended.json()) == (200, {})


def test_the_hook_route_uses_the_store_again_once_it_is_back(
    tmp_path: Path, pg_url: str, cluster: PostgresCluster
) -> None:
    """Back on the store: a ``PreToolUse`` on one instance is ended by a ``PostToolUse`` on
    another (the shared state, not the scratch)."""
    one = start_instance(tmp_path, pg_url)
    other = start_instance(tmp_path, pg_url)
    try:
        cluster.stop()
        try:
            assert _post(one.url, _hook("PreToolUse", "toolu_down")).status_code == 200
        finally:
            cluster.start()
        deadline = time.monotonic() + 30
        for n in range(10_000):
            use_id = f"toolu_back_{n}"
            assert _post(one.url, _hook("PreToolUse", use_id)).status_code == 200
            if _stored(pg_url, use_id):
                assert _post(other.url, _hook("PostToolUse", use_id)).status_code == 200
                assert not _stored(pg_url, use_id)  # ended by the other instance
                break
            assert time.monotonic() < deadline, "the hook route did not use the store again"
            time.sleep(0.2)
    finally:
        one.stop()
        other.stop()


@pytest.mark.parametrize("field", ["session_id", "tool_use_id"])
def test_ids_postgresql_text_cannot_hold_are_still_decided_by_the_guard(
    tmp_path: Path, pg_url: str, field: str
) -> None:
    """PostgreSQL text refuses a NUL byte: the call is still the guard's to decide, and it ends."""
    proc = start_instance(tmp_path, pg_url, "--hooks", str(_guarded(tmp_path)))
    try:
        nul = {field: "a\x00b"}
        denied = _post(proc.url, _hook("PreToolUse", command="rm -rf /", **nul))
        assert _denial(denied) == "rm -rf is not allowed here"
        assert _post(proc.url, _hook("PreToolUse", "toolu_ls", **nul)).json() == {}
        ended = _post(proc.url, _hook("PostToolUse", "toolu_ls", tool_response="a\n", **nul))
        assert (ended.status_code, ended.json()) == (200, {})
        assert "cannot contain NUL" in proc.output()
    finally:
        proc.stop()


def test_a_tool_use_started_while_the_store_was_down_ends_once_it_is_back(
    tmp_path: Path, pg_url: str, cluster: PostgresCluster
) -> None:
    """Its start is in this instance's scratch: its end there finds it, the store back or not,
    and ends its span (it was refused as not open, 409, and its ``PostToolUse`` hooks did not
    run; such an end is judged now, but writes no span)."""
    traces = tmp_path / "traces.jsonl"
    proc = start_instance(tmp_path, pg_url, "--traces-out", str(traces))
    try:
        cluster.stop()
        try:
            assert _post(proc.url, _hook("PreToolUse", "toolu_early")).json() == {}
        finally:
            cluster.start()
        deadline = time.monotonic() + 30
        for n in range(10_000):  # until a tool use is on the store again
            use_id = f"toolu_probe_{n}"
            assert _post(proc.url, _hook("PreToolUse", use_id)).status_code == 200
            if _stored(pg_url, use_id):
                break
            assert time.monotonic() < deadline, "the store was not used again"
            time.sleep(0.2)
        ended = _post(proc.url, _hook("PostToolUse", "toolu_early", tool_response="a\n"))
        assert (ended.status_code, ended.json()) == (200, {})
    finally:
        proc.stop()  # flushes the spans
    ids = [s["attributes"].get("gen_ai.tool.call.id") for s in read_otlp_json_lines(traces)]
    assert "toolu_early" in ids


def test_tool_uses_after_the_servers_connections_are_terminated_stay_shared(
    tmp_path: Path, pg_url: str
) -> None:
    """``pg_terminate_backend`` of serve's pooled connections (a restart does the same): the
    next tool use is still started on the store (on another connection), so another instance
    ends it. It went to the scratch, and its ``PostToolUse`` on the other instance got 409 (now
    it would be judged, without ending it)."""
    import psycopg

    one = start_instance(tmp_path, pg_url)
    other = start_instance(tmp_path, pg_url)
    try:
        for n in range(4):  # a few pooled connections
            assert _post(one.url, _hook("PreToolUse", f"toolu_warm_{n}")).status_code == 200
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'otelhooks' AND datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
        assert _post(one.url, _hook("PreToolUse", "toolu_after")).json() == {}
        assert _stored(pg_url, "toolu_after")
        ended = _post(other.url, _hook("PostToolUse", "toolu_after", tool_response="a\n"))
        assert (ended.status_code, ended.json()) == (200, {})
        assert not _stored(pg_url, "toolu_after")
    finally:
        one.stop()
        other.stop()


def _stored(pg_url: str, use_id: str) -> bool:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM otelhooks_claude_code.tools WHERE tool_use_id = %s", (use_id,)
        ).fetchone()
    return row is not None
