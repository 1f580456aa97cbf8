"""A flood of large OTLP/JSON ``/v1/logs`` bodies (anything holding the ingest token can send
them) against a real ``otelhooks serve``: a Claude Code ``PreToolUse`` ``rm -rf`` is still denied
in time. Before, the route decoded four bodies at once on its threads, each a tree of millions
of Python objects: the collector's passes over them and the threads' turns for the interpreter
held the event loop for 10-14 s, past Claude Code's 10 s hook timeout (the tool then runs), and
past serve's own hook deadline, which the event loop keeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def _json_body(records: int) -> bytes:
    """An OTLP/JSON logs request of Claude Code ``tool_result`` records (about 14 MiB)."""
    record = (
        '{"timeUnixNano":"1","body":{"stringValue":"claude_code.tool_result"},"attributes":['
        '{"key":"session.id","value":{"stringValue":"s"}},'
        '{"key":"event.name","value":{"stringValue":"tool_result"}},'
        '{"key":"tool_use_id","value":{"stringValue":"toolu_%012d"}}]}'
    )
    rows = ",".join(record % n for n in range(records))
    return ('{"resourceLogs":[{"scopeLogs":[{"logRecords":[' + rows + "]}]}]}").encode()


def _traces_body(spans: int) -> bytes:
    """An OTLP/JSON traces request of tool spans (about 15 MiB for 55,000)."""
    span = (
        '{"traceId":"%032x","spanId":"%016x","name":"execute_tool Bash","kind":1,'
        '"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":['
        '{"key":"gen_ai.tool.name","value":{"stringValue":"Bash"}},'
        '{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}}]}'
    )
    rows = ",".join(span % (n, n) for n in range(1, spans + 1))
    return ('{"resourceSpans":[{"scopeSpans":[{"spans":[' + rows + "]}]}]}").encode()


def _metrics_body(points: int) -> bytes:
    """An OTLP/JSON metrics request of Claude Code token counts (about 13 MiB for 90,000)."""
    point = (
        '{"asDouble":1.0,"timeUnixNano":"1","attributes":['
        '{"key":"session.id","value":{"stringValue":"s%08d"}},'
        '{"key":"type","value":{"stringValue":"input"}}]}'
    )
    rows = ",".join(point % n for n in range(points))
    return (
        '{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.token.usage",'
        '"sum":{"aggregationTemporality":1,"isMonotonic":true,"dataPoints":[' + rows + "]}}]}]}]}"
    ).encode()


def _deny_times(server: ServeProc, bodies: dict[str, bytes], clients: int) -> list[float]:
    """Seconds each of three ``PreToolUse`` ``rm -rf`` denies took while ``clients`` clients per
    route post its body without pause."""
    headers = {**AUTH, "Content-Type": "application/json"}
    stop = threading.Event()
    answered: list[int] = []

    def flood(route: str) -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                try:
                    posted = client.post(server.url + route, content=bodies[route], headers=headers)
                except httpx.HTTPError:  # serve stopped under it: the test is over
                    return
                answered.append(posted.status_code)

    flooders = [
        threading.Thread(target=flood, args=(route,), daemon=True)
        for route in bodies
        for _ in range(clients)
    ]
    took: list[float] = []
    decisions: list[object] = []
    try:
        for thread in flooders:
            thread.start()
        time.sleep(2)  # the bodies are in, being decoded
        for n in range(3):
            started = time.monotonic()
            answer = httpx.post(
                server.url + "/v1/hooks/claude-code",
                json={
                    "session_id": "victim",
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": "rm -rf ~/work"},
                    "tool_use_id": f"toolu_victim_{n}",
                },
                headers=AUTH,
                timeout=60,
            )
            took.append(time.monotonic() - started)
            assert answer.status_code == 200, answer.text
            decisions.append(
                (answer.json().get("hookSpecificOutput") or {}).get("permissionDecision")
            )
    finally:
        stop.set()
        server.kill9()  # the flood's requests end with it, not after their decoding
        for thread in flooders:
            thread.join(30)
    assert decisions == ["deny"] * 3
    assert 413 not in answered  # bodies within the limit, decoded
    return took


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProc]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    proc = ServeProc(tmp_path, "--hooks", str(policy), "--no-web")
    try:
        yield proc
    finally:
        proc.stop()


def test_a_flood_of_large_json_log_bodies_leaves_a_deny_in_time(server: ServeProc) -> None:
    """About 10 s, most of it building and sending the flood."""
    took = _deny_times(server, {"/v1/logs": _json_body(60_000)}, clients=8)
    assert max(took) < 5, took  # was 10-14 s for the first, past Claude Code's 10 s


def test_large_bodies_on_the_three_otlp_routes_at_once_leave_a_deny_in_time(
    server: ServeProc,
) -> None:
    """About 12 s, most of it building and sending the bodies. Before, each route decoded one
    large body at a time, so three were decoded at once: the first deny took 5.5-7.7 s (about
    2.5 s with one at a time in the process)."""
    bodies = {
        "/v1/traces": _traces_body(55_000),
        "/v1/logs": _json_body(60_000),
        "/v1/metrics": _metrics_body(90_000),
    }
    took = _deny_times(server, bodies, clients=1)
    assert max(took) < 5, took
