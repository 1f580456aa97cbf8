"""A client request reusing the id of one the gateway still holds (a guard still deciding) was
forwarded: the server ran it, its answer ended the first call's record, and the guard's deny
then went out for the same id. Now such a request is refused (-32600) and never forwarded.

The gateway is a real ``python -m otelhooks mcp`` process in front of the SDK's server; the
client writes raw frames (the SDK's client never reuses an id)."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import DENY_NOTES, RawClient, calls, raw_stdio_gateway, write_hooks

pytestmark = pytest.mark.timeout(90)

# the deny of write_note, decided slowly enough for the client to send another frame meanwhile
SLOW_DENY = """
import time

from otelhooks import Block

def deny(event):
    time.sleep(1.5)
    return Block("notes are read-only here")
"""


def _answers(client: RawClient, count: int, timeout_s: float = 20.0) -> list[Any]:
    """The next ``count`` answers, or those that came within ``timeout_s`` (an answer the
    gateway never sends must fail the test, not hang it)."""
    lines: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(
        target=lambda: [lines.put(client.stdout.readline()) for _ in range(count)], daemon=True
    )
    reader.start()
    out: list[Any] = []
    for _ in range(count):
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            break
        if line:
            out.append(json.loads(line))
    return out


def _call(request_id: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# each as the id of the held call and of the request reusing it; one gateway serves the three in
# turn (an id is free again once its call was answered: the last case reuses the first's 7)
REUSED = [(7, 7), ("a", "a"), (7, 7.0)]  # the same number, the same string, a float equal to it


def test_a_request_reusing_a_waiting_id_is_refused_and_never_forwarded(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, DENY_NOTES, SLOW_DENY)
    with raw_stdio_gateway(tmp_path, [hooks]) as client:
        for n, (first_id, reused_id) in enumerate(REUSED):
            client.send(_call(first_id, "write_note", {"text": "x"}))  # the guard decides slowly
            client.send(_call(reused_id, "add", {"a": 1, "b": 2}))  # sent while it decides
            answers = _answers(client, 2)
            assert len(answers) == 2, f"{reused_id!r}: only {answers} came back"
            client.send(_call(100 + n, "add", {"a": 2, "b": n}))
            after = client.answer()
            refused = [a for a in answers if "error" in a]
            denied = [a for a in answers if "result" in a]
            assert [a["error"]["code"] for a in refused] == [-32600], reused_id
            assert [a["result"]["isError"] for a in denied] == [True], reused_id
            assert denied[0]["result"]["content"][0]["text"] == "notes are read-only here"
            assert after["result"]["content"][0]["text"] == str(2 + n)  # the session goes on
        client.stdin.close()  # the gateway ends and writes its spans
        assert client.proc.wait(30) == 0
    # the reused ids never reached the server: only the calls after each
    assert [(c["tool"], c["args"]) for c in calls(tmp_path)] == [
        ("add", {"a": 2, "b": n}) for n in range(len(REUSED))
    ]
    spans = read_otlp_json_lines(tmp_path / "traces.jsonl")
    notes = [s["attributes"] for s in spans if s["name"] == "tools/call write_note"]
    assert len(notes) == len(REUSED)
    for note in notes:
        assert note["otelhooks.hook.decision"] == "deny"
        assert "error.type" not in note  # ended by its own deny, not by the session's close


def test_an_id_is_free_again_once_its_request_was_answered(tmp_path: Path) -> None:
    with raw_stdio_gateway(tmp_path, []) as client:
        client.send(_call(7, "add", {"a": 1, "b": 2}))
        first = client.answer()
        client.send(_call(7, "add", {"a": 2, "b": 2}))
        second = client.answer()
    assert [first["result"]["content"][0]["text"], second["result"]["content"][0]["text"]] == [
        "3",
        "4",
    ]
    assert json.dumps(first["id"]) == json.dumps(second["id"]) == "7"
