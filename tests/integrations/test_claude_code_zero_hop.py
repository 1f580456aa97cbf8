"""The zero-hop road of ``otelhooks serve``'s hook route: a deciding event no hook may run for
(the event log's observers aside) is answered on the event loop, without the deciding runner; an
event a hook may decide still takes the runner, its deadline and its fail-closed or fail-open
answer. Proved by behaviour on a real server on 127.0.0.1: the runner's every thread is held by
a hung guard of another session (a runner of two threads that replaces none), and the test
watches which events still get through at once. The hung guard waits for a file the test
writes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks.integrations.coding_agents._fair import FairRunner

pytestmark = pytest.mark.timeout(90)

TOKEN = "s3cret-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"
DEADLINE_S = 3.0  # the route's (``--hook-timeout``)
QUICK_S = 1.5  # an answer that never waited for the runner comes well before the deadline

GUARD = """\
import os
import time

from otelhooks import Block

RELEASE = {release!r}


def guard(event):
    command = str(event.args.get("command", ""))
    if "hang" in command:
        end = time.monotonic() + 60
        while not os.path.exists(RELEASE) and time.monotonic() < end:
            time.sleep(0.02)
    if "rm -rf" in command:
        return Block("rm -rf is not allowed")
    return event


def audit(event):
    return None
"""

GUARD_ONLY = """\
hooks:
  - id: guard
    type: PreToolUse
    matcher: Bash
    script: {script}:guard
"""

WITH_POST_HOOK = (
    GUARD_ONLY
    + """\
  - id: audit
    type: PostToolUse
    matcher: Edit
    script: {script}:audit
"""
)


@pytest.fixture
def release(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "release"
    yield path
    path.touch()  # whatever the test did, no guard call is left hanging


def _server(tmp_path: Path, release: Path, hooks_text: str, *, fail_closed: bool) -> Any:
    script = tmp_path / "guard.py"
    script.write_text(GUARD.format(release=str(release)))
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(hooks_text.format(script=script))
    server = serve([hooks], token=TOKEN, fail_closed=fail_closed, hook_timeout_s=DEADLINE_S)
    route = next(o for o in server._owned if hasattr(o, "route")).route
    # Two threads, none replaced when a call is given up on: two hung calls hold it all.
    route.runner.close()
    route.runner = FairRunner(workers=2, busy=2, max_stuck=0)
    return server


@pytest.fixture
def closed(tmp_path: Path, release: Path) -> Iterator[EventLogServer]:
    server = _server(tmp_path, release, GUARD_ONLY, fail_closed=True)
    try:
        yield server
    finally:
        release.touch()
        server.stop()


def _event(session: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "hook_event_name": name, **fields}


def _tool(name: str, tool: str, use_id: str, command: str, session: str) -> dict[str, Any]:
    fields = {"tool_name": tool, "tool_input": {"command": command}, "tool_use_id": use_id}
    if name == "PostToolUse":
        fields["tool_response"] = "ok"
    return _event(session, name, **fields)


def _post(server: EventLogServer, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(server.url + ROUTE, json=body, headers=AUTH, timeout=30)
    return response, time.monotonic() - started


def _hold_the_runner(pool: ThreadPoolExecutor, server: EventLogServer) -> list[Future[Any]]:
    """Two hung guard calls of session ``s-hung``: the runner's two threads, both held."""
    hung = [
        pool.submit(_post, server, _tool("PreToolUse", "Bash", f"toolu_h{n}", "hang", "s-hung"))
        for n in range(2)
    ]
    route = next(o for o in server._owned if hasattr(o, "route")).route
    deadline = time.monotonic() + 30
    while route.runner.queued or len(route.runner._running_jobs) < 2:
        assert time.monotonic() < deadline, "the hung calls never started"
        time.sleep(0.01)
    return hung


def _denial(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    decision = response.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    return str(decision["permissionDecisionReason"])


def test_events_no_hook_watches_pass_while_every_runner_thread_is_held(
    closed: EventLogServer,
) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        hung = _hold_the_runner(pool, closed)
        session = "s-free"
        road = [
            _event(session, "UserPromptSubmit", prompt="read the notes"),
            _tool("PreToolUse", "Read", "toolu_r", "notes.md", session),
            _tool("PostToolUse", "Read", "toolu_r", "notes.md", session),
            _event(session, "Stop"),
        ]
        for body in road:
            response, took_s = _post(closed, body)
            assert response.status_code == 200, (body["hook_event_name"], response.text)
            assert took_s < QUICK_S, (body["hook_event_name"], took_s)
        assert all(not f.done() for f in hung)  # the runner was held all along
        for future in hung:
            response, _ = future.result()
            assert "fail-closed" in _denial(response)


def test_a_watched_tool_still_waits_for_the_runner_and_is_denied_at_the_deadline(
    closed: EventLogServer,
) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        hung = _hold_the_runner(pool, closed)
        response, took_s = _post(closed, _tool("PreToolUse", "Bash", "toolu_x", "ls", "s-free"))
        reason = _denial(response)  # fail-closed: the guard could not run in time
        assert "fail-closed" in reason
        assert "no answer within" in reason
        assert DEADLINE_S - 0.5 <= took_s < DEADLINE_S + 2.0
        for future in hung:
            future.result()


def test_a_watched_tool_is_denied_at_the_deadline_without_fail_closed_too(
    tmp_path: Path, release: Path
) -> None:
    """Its guard never ran, so never had its own timeout: the late answer blocks (before, a
    500, a non-blocking error after which Claude Code ran ``rm -rf /``)."""
    server = _server(tmp_path, release, GUARD_ONLY, fail_closed=False)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            hung = _hold_the_runner(pool, server)
            body = _tool("PreToolUse", "Bash", "toolu_x", "rm -rf /", "s-free")
            response, took_s = _post(server, body)
            assert response.status_code == 200
            assert "no answer within" in _denial(response)
            assert DEADLINE_S - 0.5 <= took_s < DEADLINE_S + 2.0
            release.touch()
            for future in hung:
                future.result()
    finally:
        release.touch()
        server.stop()


def test_a_post_tool_use_any_hook_watches_takes_the_runner_whatever_tool_it_names(
    tmp_path: Path, release: Path
) -> None:
    # The audit hook watches Edit only, but a PostToolUse is dispatched with the tool name its
    # start recorded, which its own input need not repeat: every PostToolUse takes the runner.
    server = _server(tmp_path, release, WITH_POST_HOOK, fail_closed=False)
    try:
        session = "s-free"
        response, _ = _post(server, _tool("PreToolUse", "Read", "toolu_r", "notes.md", session))
        assert response.status_code == 200  # no guard on Read: answered before the runner fills
        with ThreadPoolExecutor(max_workers=4) as pool:
            hung = _hold_the_runner(pool, server)
            body = _tool("PostToolUse", "Read", "toolu_r", "notes.md", session)
            response, took_s = _post(server, body)
            # the audit never ran, so never had its own timeout: the late answer blocks and
            # withholds the output it may have checked (before: 500, and the output went on)
            assert response.status_code == 200
            answer = response.json()
            assert answer["decision"] == "block"
            assert "no answer within" in answer["reason"]
            assert took_s >= DEADLINE_S - 0.5
            release.touch()
            for future in hung:
                future.result()
    finally:
        release.touch()
        server.stop()


def test_the_event_log_still_records_what_the_zero_hop_road_answered(
    closed: EventLogServer,
) -> None:
    session = "s-log"
    for name in ("PreToolUse", "PostToolUse"):
        response, _ = _post(closed, _tool(name, "Read", "toolu_l", "notes.md", session))
        assert response.status_code == 200
    # read at once, no wait: the log's observer ran before the answer, on the event loop
    events = httpx.get(closed.url + "/v1/events", headers=AUTH, timeout=10).json()["events"]
    mine = [(e["session"], e["tool"], e["kind"], e["success"]) for e in events]
    assert mine == [(session, "Read", "after_tool_result", True)]
