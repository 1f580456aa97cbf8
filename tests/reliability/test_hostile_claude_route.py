"""``otelhooks serve``'s Claude Code hook route under attack (issue 34): a real serve process on
127.0.0.1 with ``--fail-closed``: deep and unreadable bodies, one session's slow calls against
another session's guard, forged session ends, hostile ``since=`` values, the traces file's mode;
and the session and telemetry memory bounded at small scale, in process."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import HookSpanProcessor
from otelhooks._eventlog._otlp_signals import ReceivedLog, ReceivedPoint
from otelhooks.integrations.claude_code import hook_client
from otelhooks.integrations.claude_code._serve import claude_code_routes
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from tests.reliability._procs import cli_env
from tests.reliability._serve_proc import ADMIN, INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

ROUTE = "/v1/hooks/claude-code"
HOOK_AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
  - id: slow-policy
    type: PreToolUse
    matcher: Slow
    command: touch MARKS/slow-started; sleep 6
"""
HOOK_TIMEOUT_S = 2.0
# Claude Code gives up on a hook after its own timeout; every answer must come well before it.
CLIENT_TIMEOUT_S = 5 * HOOK_TIMEOUT_S


def _policy(tmp: Path) -> Path:
    """The policy file, its slow hook marking in ``tmp/marks`` that it runs (holds a thread)."""
    marks = tmp / "marks"
    marks.mkdir()
    policy = tmp / "policy.yaml"
    policy.write_text(POLICY.replace("MARKS", str(marks)))
    return policy


def _until_a_slow_call_runs(tmp: Path) -> None:
    """Until a slow call's command runs: from then on, for 6 s, it holds its thread."""
    deadline = time.monotonic() + 30
    while not (tmp / "marks" / "slow-started").exists():
        assert time.monotonic() < deadline, "no slow call started"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProc]:
    tmp = tmp_path_factory.mktemp("claude-route")
    policy = _policy(tmp)
    proc = ServeProc(
        tmp,
        "--hooks",
        str(policy),
        "--fail-closed",
        "--hook-timeout",
        str(HOOK_TIMEOUT_S),
        "--traces-out",
        str(tmp / "traces.jsonl"),
    )
    proc.traces = tmp / "traces.jsonl"  # type: ignore[attr-defined]
    proc.tmp = tmp  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        proc.stop()


def _pre(session: str, use_id: str, tool: str, tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": use_id,
    }


def _post(server: ServeProc, body: dict[str, Any] | bytes, timeout_s: float = 30) -> httpx.Response:
    if isinstance(body, bytes):
        return httpx.post(server.url + ROUTE, content=body, headers=HOOK_AUTH, timeout=timeout_s)
    return httpx.post(server.url + ROUTE, json=body, headers=HOOK_AUTH, timeout=timeout_s)


def _decision(response: httpx.Response) -> str | None:
    assert response.status_code == 200, response.text
    output = response.json().get("hookSpecificOutput") or {}
    decision = output.get("permissionDecision")
    return str(decision) if decision is not None else None


@pytest.mark.parametrize("depth", [1_200, 100_000])
def test_a_deeply_nested_tool_input_reaches_the_guard_as_text(
    server: ServeProc, depth: int
) -> None:
    deep = "[" * depth + '"rm -rf /"' + "]" * depth
    body = (
        '{"session_id": "s-deep", "hook_event_name": "PreToolUse", "tool_name": "Bash", '
        f'"tool_use_id": "toolu_deep_{depth}", "tool_input": {{"command": {deep}}}}}'
    ).encode()
    response = _post(server, body)
    assert _decision(response) == "deny"
    assert "rm -rf is not allowed" in response.text  # the guard read it, not a failure


def test_five_thousand_nested_objects_are_answered_not_a_500(server: ServeProc) -> None:
    deep = '{"a": ' * 5_000 + '"rm -rf /"' + "}" * 5_000
    body = (
        '{"session_id": "s-obj", "hook_event_name": "PreToolUse", "tool_name": "Bash", '
        f'"tool_use_id": "toolu_obj", "tool_input": {{"command": {deep}}}}}'
    ).encode()
    assert _decision(_post(server, body)) == "deny"


def test_an_unreadable_pre_tool_use_is_denied_under_fail_closed(server: ServeProc) -> None:
    body = b'{"session_id": "s-bad", "hook_event_name": "PreToolUse", "tool_input": {"comm'
    response = _post(server, body)
    assert _decision(response) == "deny"
    assert "fail-closed" in response.text


def test_one_sessions_slow_calls_do_not_delay_another_sessions_guard(server: ServeProc) -> None:
    # More slow calls than any default thread pool holds (32), all from one session.
    with ThreadPoolExecutor(max_workers=40) as pool:
        slow = [
            pool.submit(_post, server, _pre("s-slow", f"toolu_slow_{n}", "Slow", {}))
            for n in range(34)
        ]
        _until_a_slow_call_runs(server.tmp)  # type: ignore[attr-defined]
        started = time.monotonic()
        victim = _post(server, _pre("s-victim", "toolu_rm", "Bash", {"command": "rm -rf /"}))
        slow_answers = [future.result() for future in slow]
        slow_s = time.monotonic() - started
    # The guard's own reason: it ran within the victim's hook timeout, while the slow session
    # held its threads for 6 s. Behind them it could not have run; the timeout would have
    # answered a fail-closed deny without this reason.
    assert _decision(victim) == "deny"
    assert "rm -rf is not allowed" in victim.text
    # every slow call answered by the hook timeout (fail-closed: deny), none left to Claude
    # Code's own timeout
    assert slow_s < CLIENT_TIMEOUT_S
    assert all(_decision(answer) == "deny" for answer in slow_answers)
    assert "no answer within" in slow_answers[-1].text


def test_a_session_end_for_a_session_never_seen_is_answered(server: ServeProc) -> None:
    # it may end a session this server forgot (a restart) or never served (another instance):
    # its hooks run (a 409 was a non-blocking error, no hook ran); it ends nothing else
    forged = {"session_id": "s-never-seen", "hook_event_name": "SessionEnd", "reason": "x"}
    answer = _post(server, forged)
    assert (answer.status_code, answer.json()) == (200, {})


@pytest.mark.parametrize("since", ["5_000", "+7", " 5", "\u0665"])
def test_since_accepts_only_plain_decimal_digits(server: ServeProc, since: str) -> None:
    response = httpx.get(
        server.url + "/v1/events",
        params={"since": since},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=10,
    )
    assert response.status_code == 400
    assert response.json()["parameter"] == "since"


def test_the_traces_out_file_is_private(server: ServeProc) -> None:
    # a tool use that ends: its span is exported, so the file exists whatever ran before
    _post(server, _pre("s-file", "toolu_file", "Bash", {"command": "ls"}))
    end = {**_pre("s-file", "toolu_file", "Bash", {"command": "ls"})}
    end.update(hook_event_name="PostToolUse", tool_response={"stdout": ""})
    assert _post(server, end).status_code == 200
    traces: Path = server.traces  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while not traces.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stat.S_IMODE(traces.stat().st_mode) == 0o600


# -- memory bounds, in process ----------------------------------------------------------------


def test_sessions_with_huge_ids_stay_within_their_byte_bound() -> None:
    drops: list[str] = []
    sessions = ServerSessions(max_bytes=2 * 1024 * 1024, on_drop=lambda n, why: drops.append(why))
    serving = claude_code_routes(HookSpanProcessor(), sessions=sessions)
    try:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(400):  # 400 x 50 KB session ids: 20 MB offered
            session = f"{n:06d}" + "s" * 50_000
            status, _ = serving.route.answer(_pre(session, "toolu_1", "Bash", {"command": "ls"}))
            assert status == 200
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    finally:
        serving.close()
    count, held = sessions.held
    assert held <= 2 * 1024 * 1024
    assert count < 400
    assert "too_many_bytes" in drops
    assert "join_forgotten" in drops  # the ids of sessions seen: bounded too, and counted
    # what stays: the held sessions plus the join memory (ids of recently seen sessions),
    # each bounded by the same budget
    assert grown < 8 * 1024 * 1024


def test_a_session_unused_past_its_ttl_is_forgotten() -> None:
    drops: list[str] = []
    sessions = ServerSessions(ttl_s=0.05, on_drop=lambda n, why: drops.append(why))
    op = sessions.current_operation("old")
    sessions.begin_tool(op.session_id, "toolu_1", "Bash", {"command": "ls"})
    time.sleep(0.1)
    sessions.current_operation("new")
    assert sessions.peek_operation("old") is None
    assert not sessions.has_open_tool("old", "toolu_1")
    assert "expired" in drops
    sessions.close()


def test_open_tool_uses_of_one_session_are_bounded() -> None:
    drops: list[str] = []
    sessions = ServerSessions(max_tools_per_session=3, on_drop=lambda n, why: drops.append(why))
    op = sessions.current_operation("s")
    for n in range(5):
        sessions.begin_tool(op.session_id, f"toolu_{n}", "Bash", {})
    assert [sessions.has_open_tool("s", f"toolu_{n}") for n in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert drops.count("too_many_tools") == 2
    sessions.close()


def test_the_telemetry_join_bounds_metric_names_and_log_bytes() -> None:
    serving = claude_code_routes(HookSpanProcessor())
    telemetry = serving.span_processor
    telemetry.max_metrics = 100
    telemetry.max_log_bytes = 1024 * 1024
    try:
        telemetry.on_metrics([ReceivedPoint(f"m{n}", {}, 1.0, 0) for n in range(5_000)])
        assert len(telemetry.metrics) == 100
        big = "x" * 50_000
        records = [
            ReceivedLog(
                "claude_code.tool_result",
                {"session.id": "s", "tool_use_id": f"t{n}", "v": big},
                None,
                0,
                0,
                0,
            )
            for n in range(200)
        ]
        telemetry.on_logs(records)
        assert telemetry.log_bytes <= 1024 * 1024
        assert telemetry.tool("s", "t199")  # the newest kept
        assert not telemetry.tool("s", "t0")  # the oldest forgotten
    finally:
        serving.close()


def test_a_deeply_nested_otlp_logs_body_is_a_400(server: ServeProc) -> None:
    deep = '{"resourceLogs": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = httpx.post(
        server.url + "/v1/logs",
        content=deep.encode(),
        headers={**HOOK_AUTH, "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    assert json.loads(response.text)["details"][0]["reason"] == "BAD_REQUEST"


# -- the command form's daemon ------------------------------------------------------------------


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[str]:
    policy = _policy(tmp_path)
    sock = str(tmp_path / "d.sock")
    argv = ["--hooks", str(policy), "--fail-closed", "--state", str(tmp_path / "state.sqlite3")]
    env = cli_env(OTELHOOKS_CLAUDE_DAEMON_ANSWER_S=str(HOOK_TIMEOUT_S))
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "claude-code", *argv, "daemon", "--socket", sock],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "daemon.err").open("wb"),
    )
    try:
        deadline = time.monotonic() + 30
        while not Path(sock).exists():
            assert proc.poll() is None, (tmp_path / "daemon.err").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        yield sock
    finally:
        proc.terminate()
        proc.wait(30)


def _ask_daemon(sock: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = hook_client._ask(sock, json.dumps(body).encode())
    assert answer is not None
    return answer


def test_the_daemon_answers_another_sessions_guard_past_one_sessions_slow_calls(
    daemon: str, tmp_path: Path
) -> None:
    with ThreadPoolExecutor(max_workers=40) as pool:
        slow = [
            pool.submit(_ask_daemon, daemon, _pre("s-slow", f"toolu_{n}", "Slow", {}))
            for n in range(34)
        ]
        _until_a_slow_call_runs(tmp_path)
        started = time.monotonic()
        victim = _ask_daemon(daemon, _pre("s-victim", "toolu_rm", "Bash", {"command": "rm -rf /"}))
        slow_answers = [future.result() for future in slow]
        slow_s = time.monotonic() - started
    # the guard's own reason, not the answer deadline's: it did not wait behind the slow calls
    assert "rm -rf is not allowed" in json.dumps(victim)
    assert slow_s < CLIENT_TIMEOUT_S  # before the 30 s install writes, far before
    assert all('"deny"' in str(answer["stdout"]) for answer in slow_answers)


def test_a_servers_session_file_is_its_own_and_the_command_bridges_is_shared(
    tmp_path: Path,
) -> None:
    """serve's session file is held locked while serve runs (no other process can make its
    event loop wait on it); the daemon's state file stays open to the one-process bridge."""
    import sqlite3

    from otelhooks.integrations.coding_agents._state import BridgeState

    own = tmp_path / "serve.sqlite3"
    serving = claude_code_routes(HookSpanProcessor(), sessions_path=own)
    serving.sessions.begin_tool("s", "toolu_1", "Bash", {})
    other = sqlite3.connect(own, timeout=0.05, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("BEGIN IMMEDIATE")
    serving.close()
    assert other.execute("SELECT tool_use_id FROM tools").fetchall() == [("toolu_1",)]
    other.close()
    shared = tmp_path / "bridge.sqlite3"
    daemon = ServerSessions(shared)
    daemon.begin_tool("s", "toolu_2", "Bash", {})
    hook_process = BridgeState(shared)
    ended = hook_process.end_tool("s", "toolu_2")
    assert ended is not None
    assert ended.tool_use_id == "toolu_2"
    hook_process.close()
    daemon.close()


def test_a_durable_store_counts_what_it_kept_from_an_earlier_run(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    first = ServerSessions(path)
    op = first.current_operation("kept")
    first.begin_tool(op.session_id, "toolu_1", "Bash", {"command": "x" * 10_000})
    first.close()
    again = ServerSessions(path, max_bytes=1_000, on_drop=lambda n, why: None)
    count, held = again.held
    assert count == 1
    assert held > 10_000  # counted against the budget: the next use forgets it
    again.current_operation("new")
    assert not again.has_open_tool("kept", "toolu_1")
    again.close()
