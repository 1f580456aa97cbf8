"""The road of a deciding event under ``otelhooks serve``: a sync Python hook runs on the deciding
thread (one hop), the event loop keeps the route's deadline; a hook stuck there is answered
with a deny at that deadline (it was cut short before its own timeout), never holds another
session, and costs one thread the runner replaces; commands and hooks with a shorter deadline
keep their own. A real server on 127.0.0.1; the hung hook waits for a file the test writes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve

pytestmark = pytest.mark.timeout(60)

TOKEN = "s3cret-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"
DEADLINE_S = 2.0  # the route's (``--hook-timeout``)

GUARD = """\
import os
import threading
import time

from otelhooks import Block

RELEASE = {release!r}


def guard(event):
    command = str(event.args.get("command", ""))
    if "hang" in command:
        end = time.monotonic() + 30
        while not os.path.exists(RELEASE) and time.monotonic() < end:
            time.sleep(0.02)
    if "rm -rf" in command:
        return Block("rm -rf is not allowed (on " + threading.current_thread().name + ")")
    return event


def slow(event):
    time.sleep(3)
"""

HOOKS = """\
hooks:
  - id: guard
    type: PreToolUse
    matcher: Bash
    script: {script}:guard
  - id: short
    type: PreToolUse
    matcher: Short
    timeout: 0.3
    on_error: block
    script: {script}:slow
  - id: hung-command
    type: PreToolUse
    matcher: Command
    timeout: 0.5
    on_error: block
    command: sleep 30
"""


@pytest.fixture
def release(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "release"
    yield path
    path.touch()  # whatever the test did, no guard call is left hanging


def _server(tmp_path: Path, release: Path, *, fail_closed: bool) -> EventLogServer:
    script = tmp_path / "guard.py"
    script.write_text(GUARD.format(release=str(release)))
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS.format(script=script))
    return serve([hooks], token=TOKEN, fail_closed=fail_closed, hook_timeout_s=DEADLINE_S)


@pytest.fixture
def closed(tmp_path: Path, release: Path) -> Iterator[EventLogServer]:
    server = _server(tmp_path, release, fail_closed=True)
    try:
        yield server
    finally:
        release.touch()
        server.stop()


def _pre(session: str, use_id: str, command: str, tool: str = "Bash") -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_use_id": use_id,
    }


def _post(server: EventLogServer, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(server.url + ROUTE, json=body, headers=AUTH, timeout=30)
    return response, time.monotonic() - started


def _denial(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    decision = response.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    return str(decision["permissionDecisionReason"])


def _runner(server: EventLogServer) -> Any:
    serving = next(o for o in server._owned if hasattr(o, "route"))
    return serving.route.runner


def test_a_fast_python_guard_decides_on_the_deciding_thread(closed: EventLogServer) -> None:
    response, _ = _post(closed, _pre("s-1", "toolu_1", "rm -rf /"))
    assert "(on otelhooks-hook-call)" in _denial(response)  # the runner's thread, no pool


def test_a_hung_python_guard_is_denied_at_the_routes_deadline_under_fail_closed(
    closed: EventLogServer, release: Path
) -> None:
    response, took_s = _post(closed, _pre("s-hang", "toolu_h", "hang; ls"))
    assert "fail-closed" in _denial(response)
    assert "no answer within" in response.text
    assert DEADLINE_S <= took_s < DEADLINE_S + 2.0  # the route's deadline, not the hook's 10 s
    assert _runner(closed).stuck == 1  # counted; its thread was replaced


def test_a_hung_python_guard_never_holds_another_session(
    closed: EventLogServer, release: Path
) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        hung = [
            pool.submit(_post, closed, _pre("s-hang", f"toolu_h{n}", "hang; ls")) for n in range(4)
        ]
        time.sleep(0.2)  # two run (the session's limit), two wait behind them
        victim, victim_s = _post(closed, _pre("s-other", "toolu_rm", "rm -rf /"))
        answers = [future.result() for future in hung]
    assert "rm -rf is not allowed" in _denial(victim)
    assert victim_s < DEADLINE_S  # not behind the hung session's calls
    for answer, took_s in answers:
        assert "fail-closed" in _denial(answer)
        assert took_s < DEADLINE_S + 2.0


def test_after_a_hung_call_the_hooks_calls_take_the_pool_until_it_returns(
    closed: EventLogServer, release: Path
) -> None:
    _post(closed, _pre("s-hang", "toolu_h", "hang; ls"))
    time.sleep(0.5)  # the hung call is past the deadline it was started under
    response, took_s = _post(closed, _pre("s-2", "toolu_2", "rm -rf /"))
    assert "(on otelhooks-hook_" in _denial(response)  # the hook's own pooled deadline
    assert took_s < DEADLINE_S
    release.touch()
    deadline = time.monotonic() + 30
    while _runner(closed).stuck and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _runner(closed).stuck == 0
    response, _ = _post(closed, _pre("s-2", "toolu_3", "rm -rf /"))
    assert "(on otelhooks-hook-call)" in _denial(response)  # back on the one-hop road


def test_a_hung_python_guard_cut_short_at_the_deadline_is_a_deny_without_fail_closed_too(
    tmp_path: Path, release: Path
) -> None:
    """The route's deadline (2 s) ends before the guard's own timeout (10 s): the guard was
    cut short, so the answer is a deny that says so. Before, 500, a non-blocking error after
    which Claude Code ran the tool."""
    server = _server(tmp_path, release, fail_closed=False)
    try:
        response, took_s = _post(server, _pre("s-open", "toolu_o", "hang; ls"))
        assert response.status_code == 200
        reason = _denial(response)
        assert "no answer within 2 s, hook " in reason
        assert "cut short" in reason
        assert "fail-closed" not in reason  # not on: the reason claimed it
        assert took_s < DEADLINE_S + 2.0
    finally:
        release.touch()
        server.stop()


def test_a_python_hook_with_a_shorter_timeout_keeps_its_own_deadline(
    closed: EventLogServer,
) -> None:
    response, took_s = _post(closed, _pre("s-3", "toolu_s", "ls", tool="Short"))
    reason = _denial(response)
    assert "timed out after 0.3s" in reason  # its own deadline and on_error, not the route's
    assert took_s < DEADLINE_S


def test_a_command_hook_that_hangs_is_cut_off_by_its_own_timeout(
    closed: EventLogServer,
) -> None:
    response, took_s = _post(closed, _pre("s-4", "toolu_c", "ls", tool="Command"))
    reason = _denial(response)
    assert "hung-command" in reason  # the hook's own verdict (on_error: block) ...
    assert "fail-closed" not in reason  # ... not the route's failure answer
    assert took_s < DEADLINE_S


def test_the_routes_deadline_follows_approval_hooks_registered_later(
    closed: EventLogServer,
) -> None:
    serving = next(o for o in closed._owned if hasattr(o, "route"))
    route, registry = serving.route, serving.bridge.engine.registry
    assert route._deadline_s() == DEADLINE_S
    approval = {"timeout": 30, "default": "deny"}
    registry.register(
        [{"id": "ask", "type": "PreToolUse", "matcher": "Bash", "approval": approval}]
    )
    assert route._deadline_s() == 35.0  # the person's 30 s and the approval's own margin first
    assert registry.remove("ask")
    assert route._deadline_s() == DEADLINE_S
