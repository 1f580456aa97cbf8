"""A member name spelled with other cases (``Name``, ``Method``, ``ID``, ``params`` with a long
s) was read by the gateway as absent and forwarded unjudged; a server whose JSON reader ignores
case, as Go's ``encoding/json`` does (mcp-go, and the many servers that decode JSON-RPC into
Go structs), reads it as the member, and ran the call a guard denies. Now such a frame is
answered with an invalid-request error and never forwarded.

The gateway is a real ``python -m otelhooks mcp`` process in front of a stdio server that reads
member names ignoring case (``foldcase_server.py``); the client writes raw frames."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.mcp._harness import RawClient, calls, raw_stdio_gateway, write_hooks

pytestmark = pytest.mark.timeout(60)

SERVER = Path(__file__).with_name("foldcase_server.py")
DENY_NOTES = """
hooks:
  - id: no-notes
    type: beforeToolCall
    matcher: "testsrv/write_note"
    script: hooks.py:deny
  - id: no-rm
    type: beforeToolCall
    matcher: "testsrv/shell"
    script: hooks.py:no_rm
"""
DENY_SCRIPT = """
from otelhooks import Block

def deny(event):
    return Block("notes are read-only here")

def no_rm(event):
    if str(event.args.get("cmd", "")).startswith("rm"):
        return Block("no rm")
"""
NOTE = {"name": "write_note", "arguments": {"text": "x"}}


def gateway(tmp_path: Path) -> AbstractContextManager[RawClient]:
    return raw_stdio_gateway(tmp_path, [write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)], SERVER)


SPELLINGS: dict[str, dict[str, Any]] = {
    "Name": {"id": 1, "method": "tools/call", "params": {"Name": "write_note", "arguments": {}}},
    "Method": {"id": 1, "Method": "tools/call", "params": NOTE},
    "METHOD beside a harmless method": {
        "id": 1,
        "method": "ping",
        "METHOD": "tools/call",
        "params": NOTE,
    },
    "params with a long s (U+017F folds to s)": {
        "id": 1,
        "method": "tools/call",
        "param\u017f": NOTE,
    },
    "ID (a notification to the gateway)": {"ID": 1, "method": "tools/call", "params": NOTE},
    "Arguments after allowed arguments": {
        "id": 1,
        "method": "tools/call",
        "params": {"name": "shell", "arguments": {"cmd": "ls"}, "Arguments": {"cmd": "rm -rf /"}},
    },
    "CMD after the cmd a guard reads": {
        "id": 1,
        "method": "tools/call",
        "params": {"name": "shell", "arguments": {"cmd": "ls", "CMD": "rm -rf /"}},
    },
}


@pytest.mark.parametrize("shape", list(SPELLINGS))
def test_a_member_spelled_with_other_cases_is_refused_and_never_forwarded(
    tmp_path: Path, shape: str
) -> None:
    with gateway(tmp_path) as client:
        client.send({"jsonrpc": "2.0", **SPELLINGS[shape]})
        answer = client.answer()
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add"}})
        after = client.answer()
    assert answer["error"]["code"] == -32600
    assert "only by case" in answer["error"]["message"]
    assert answer["id"] == (None if shape.startswith("ID") else 1)
    assert after == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"content": [{"type": "text", "text": "ran add"}]},
    }  # the session goes on
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]


def test_a_misspelled_call_in_a_batch_is_refused_and_the_rest_forwarded(tmp_path: Path) -> None:
    with gateway(tmp_path) as client:
        client.send(
            [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"Name": "write_note"},
                },
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add"}},
            ]
        )
        refused = client.answer()
        ran = client.answer()
    assert [a["id"] for a in refused] == [1]
    assert refused[0]["error"]["code"] == -32600
    assert ran["id"] == 2
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]


def test_a_tools_call_without_an_id_is_refused_and_never_forwarded(tmp_path: Path) -> None:
    """A ``tools/call`` without an id is a notification to the gateway (nothing to answer, so it
    was forwarded unjudged); a server that dispatches by method alone ran it."""
    with gateway(tmp_path) as client:
        client.send({"jsonrpc": "2.0", "method": "tools/call", "params": NOTE})
        answer = client.answer()
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add"}})
        after = client.answer()
    assert answer["id"] is None
    assert answer["error"]["code"] == -32600
    assert "without an id" in answer["error"]["message"]
    assert after["id"] == 2
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]
