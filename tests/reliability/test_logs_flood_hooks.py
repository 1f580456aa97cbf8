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
    body = _json_body(60_000)
    headers = {**AUTH, "Content-Type": "application/json"}
    stop = threading.Event()
    answered: list[int] = []

    def flood() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                try:
                    posted = client.post(server.url + "/v1/logs", content=body, headers=headers)
                except httpx.HTTPError:  # serve stopped under it: the test is over
                    return
                answered.append(posted.status_code)

    flooders = [threading.Thread(target=flood, daemon=True) for _ in range(8)]
    took: list[float] = []
    decisions: list[object] = []
    try:
        for thread in flooders:
            thread.start()
        time.sleep(2)  # the bodies are in, four being decoded
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
    assert max(took) < 5, took  # was 10-14 s for the first, past Claude Code's 10 s
