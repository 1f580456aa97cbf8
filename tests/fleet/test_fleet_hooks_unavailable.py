"""The Claude Code hook route while PostgreSQL is down: ``503`` with ``Retry-After`` (as
``/v1/traces`` and ``/v1/events``), or a deny when ``--fail-closed`` guards ``PreToolUse``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._postgres import PostgresCluster
from tests.fleet._fleet import start_instance
from tests.reliability._serve_proc import INGEST, ServeProc

ROUTE = "/v1/hooks/claude-code"


def _hook(name: str, use_id: str = "toolu_down") -> dict[str, Any]:
    return {
        "session_id": "sess-down",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": use_id,
    }


def _post(url: str, payload: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {INGEST}"}
    return httpx.post(url + ROUTE, json=payload, headers=headers, timeout=30)


@pytest.fixture
def down(cluster: PostgresCluster) -> Iterator[None]:
    """PostgreSQL stopped for the test's body (started again afterwards)."""
    cluster.stop()
    try:
        yield
    finally:
        cluster.start()


@pytest.fixture
def instance(tmp_path: Path, pg_url: str) -> Iterator[ServeProc]:
    proc = start_instance(tmp_path, pg_url)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def fail_closed(tmp_path: Path, pg_url: str) -> Iterator[ServeProc]:
    proc = start_instance(tmp_path, pg_url, "--fail-closed")
    try:
        yield proc
    finally:
        proc.stop()


def test_a_hook_event_answers_503_with_retry_after_while_the_store_is_down(
    instance: ServeProc, down: None
) -> None:
    started = time.monotonic()
    response = _post(instance.url, _hook("PreToolUse"))
    assert time.monotonic() - started < 15
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"] == "store_unavailable"
    assert "postgresql://postgres@127.0.0.1" in response.json()["message"]


def test_a_tool_end_answers_503_while_the_store_is_down(
    instance: ServeProc, cluster: PostgresCluster
) -> None:
    assert _post(instance.url, _hook("PreToolUse")).status_code == 200
    cluster.stop()
    try:
        response = _post(instance.url, _hook("PostToolUse"))
    finally:
        cluster.start()
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"


def test_fail_closed_still_denies_a_pre_tool_use_while_the_store_is_down(
    fail_closed: ServeProc, down: None
) -> None:
    response = _post(fail_closed.url, _hook("PreToolUse"))
    assert response.status_code == 200
    decision = response.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "fail-closed" in decision["permissionDecisionReason"]


def test_the_hook_route_recovers_after_the_store_comes_back(
    instance: ServeProc, cluster: PostgresCluster
) -> None:
    cluster.stop()
    try:
        assert _post(instance.url, _hook("PreToolUse")).status_code == 503
    finally:
        cluster.start()
    deadline = time.monotonic() + 60
    while (status := _post(instance.url, _hook("PreToolUse", "toolu_back")).status_code) != 200:
        assert status == 503
        assert time.monotonic() < deadline, "the hook route did not recover"
        time.sleep(0.2)
    assert _post(instance.url, _hook("PostToolUse", "toolu_back")).status_code == 200
