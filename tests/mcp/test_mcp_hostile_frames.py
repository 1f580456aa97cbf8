"""Frames the gateway's JSON parser could not read were forwarded unread: a denied call ran on
the SDK server. Now every client frame reaches the hooks as data or is answered with a JSON-RPC
parse error; a server that breaks its stream cannot leave a call (or the gateway) hanging.

The gateway is a real ``python -m otelhooks mcp`` process in front of the SDK's server; the
client writes raw frames (the SDK's client cannot send malformed ones)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.mcp._harness import (
    DENY_NOTES,
    DENY_SCRIPT,
    RawClient,
    calls,
    env,
    gateway_args,
    raw_stdio_gateway,
    write_hooks,
)

pytestmark = pytest.mark.timeout(90)

STALL_ENV = "OTELHOOKS_MCP_STALL_TIMEOUT"


def _frame(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


def _note_call(request_id: int, arguments: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_note",'
    return head % request_id + b'"arguments":' + arguments + b"}}"


BROKEN_SERVER = Path(__file__).with_name("broken_server.py")


def raw_gateway(tmp_path: Path, *, broken: bool = False) -> AbstractContextManager[RawClient]:
    if broken:
        return raw_stdio_gateway(tmp_path, [], BROKEN_SERVER)
    return raw_stdio_gateway(tmp_path, [write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)])


UNREADABLE = {
    "invalid UTF-8": b'{"text": "\xff rm -rf /"}',
    "a 5,000-digit integer": b'{"text": "hello", "n": ' + b"7" * 5000 + b"}",
}


@pytest.mark.parametrize("shape", list(UNREADABLE))
def test_an_unreadable_call_is_answered_with_a_parse_error_and_never_forwarded(
    tmp_path: Path, shape: str
) -> None:
    with raw_gateway(tmp_path) as client:
        client.send(_note_call(7, UNREADABLE[shape]))
        answer = client.answer()
        client.send(
            _frame(id=8, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": 2}})
        )
        after = client.answer()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32700
    assert after["result"]["content"][0]["text"] == "3"  # the session goes on
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]  # write_note never ran


def test_an_unreadable_frame_without_an_id_gets_a_parse_error_with_a_null_id(
    tmp_path: Path,
) -> None:
    with raw_gateway(tmp_path) as client:
        client.send(b'{"params": {"arguments": {"text": "\xff"}}, "method": "tools/call", "id"')
        answer = client.answer()
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700
    assert calls(tmp_path) == []


def test_arguments_1500_deep_reach_the_guard_as_data(tmp_path: Path) -> None:
    deep = b'{"text": "x", "more": ' + b'{"a": ' * 1500 + b'"rm -rf /"' + b"}" * 1500 + b"}"
    with raw_gateway(tmp_path) as client:
        client.send(_note_call(3, deep))
        answer = client.answer()
    assert answer["id"] == 3
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == "notes are read-only here"
    assert calls(tmp_path) == []


def test_a_deep_value_reaches_a_guard_as_its_text(tmp_path: Path) -> None:
    script = """
from otelhooks import Block

def deny(event):
    if "rm -rf" in str(event.args):
        return Block("no rm -rf, at any depth")
"""
    hooks = write_hooks(tmp_path, DENY_NOTES, script)
    deep = b'{"text": "x", "more": ' + b"[" * 1500 + b'"rm -rf /"' + b"]" * 1500 + b"}"
    with raw_stdio_gateway(tmp_path, [hooks]) as client:
        client.send(_note_call(4, deep))
        answer = client.answer()
    assert answer["result"]["content"][0]["text"] == "no rm -rf, at any depth"


def test_a_client_line_past_the_limit_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    from otelhooks.mcp._stdio import LINE_LIMIT

    huge = b'{"text": "' + b"x" * (LINE_LIMIT + 10) + b'"}'
    with raw_gateway(tmp_path) as client:
        client.send(_note_call(5, huge))
        answer = client.answer()
        client.send(_frame(id=6, method="ping"))
        pong = client.answer()
    assert answer["id"] == 5
    assert answer["error"]["code"] == -32700
    assert pong == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert calls(tmp_path) == []


def test_a_server_line_past_the_limit_fails_the_call_and_the_gateway_ends_with_its_client(
    tmp_path: Path,
) -> None:
    with raw_gateway(tmp_path, broken=True) as client:
        client.send(
            _frame(
                id=9, method="tools/call", params={"name": "flood", "arguments": {"megabytes": 65}}
            )
        )
        answer = client.answer()  # the server stays alive, its line never ends
        assert answer["id"] == 9
        assert answer["error"]["code"] == -32000
        assert "cannot be read" in answer["error"]["message"]
        client.send(_frame(id=10, method="ping"))  # a server that never reads again: no answer
        client.stdin.close()  # the client leaves
        started = time.monotonic()
        code = client.proc.wait(30)
    assert code == 0
    assert time.monotonic() - started < 15


# the stall timeout given short (the default is STALL_S, 10 s), by the option or the variable
STALL = {"option": (["--stall-timeout", "2"], {}), "env": ([], {STALL_ENV: "2"})}


@pytest.mark.parametrize("given", sorted(STALL))
def test_a_server_that_stops_reading_fails_every_waiting_call_and_the_gateway_ends(
    tmp_path: Path, given: str
) -> None:
    extra, environ = STALL[given]
    with raw_stdio_gateway(tmp_path, [], BROKEN_SERVER, extra=extra, environ=environ) as client:
        client.send(_frame(id=12, method="tools/call", params={"name": "deaf", "arguments": {}}))
        # more than a pipe holds: the gateway's write to the deaf server cannot complete
        big = {"name": "garble", "arguments": {"pad": "x" * (1 << 20)}}
        client.send(_frame(id=13, method="tools/call", params=big))
        started = time.monotonic()
        client.stdin.close()  # the client leaves
        answers = [client.answer(), client.answer()]
        code = client.proc.wait(30)
    assert sorted(a["id"] for a in answers) == [12, 13]
    assert all(a["error"]["code"] == -32000 for a in answers)
    assert all("read no input for 2 s" in a["error"]["message"] for a in answers)
    assert code == 1
    assert time.monotonic() - started < 2 + 5


@pytest.mark.parametrize(
    ("extra", "environ", "named"),
    [
        (["--stall-timeout", "0"], {}, "argument --stall-timeout: must be a positive number"),
        (["--stall-timeout", "nan"], {}, "argument --stall-timeout: must be a positive number"),
        (["--stall-timeout", "soon"], {}, "argument --stall-timeout: not a number: 'soon'"),
        ([], {STALL_ENV: "inf"}, f"{STALL_ENV}: must be a positive number of seconds, not inf"),
        ([], {STALL_ENV: "-1"}, f"{STALL_ENV}: must be a positive number of seconds, not -1"),
    ],
    ids=["zero", "nan", "word", "env-inf", "env-negative"],
)
def test_a_stall_timeout_that_is_no_positive_number_stops_the_gateway_at_start(
    tmp_path: Path, extra: list[str], environ: dict[str, str], named: str
) -> None:
    args = [*gateway_args([], tmp_path / "traces.jsonl", extra), "--", sys.executable, "-V"]
    done = subprocess.run(
        [sys.executable, *args],
        env={**env(tmp_path / "calls.jsonl"), **environ},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert named in done.stderr
    assert done.stdout == ""


def test_an_unreadable_server_answer_fails_its_call_at_once(tmp_path: Path) -> None:
    with raw_gateway(tmp_path, broken=True) as client:
        client.send(_frame(id=11, method="tools/call", params={"name": "garble", "arguments": {}}))
        answer = client.answer()
    assert answer["id"] == 11
    assert answer["error"]["code"] == -32000
    assert "cannot be read" in answer["error"]["message"]


def test_a_carriage_return_inside_a_frame_is_refused_and_never_forwarded(tmp_path: Path) -> None:
    """``\\r`` is whitespace to JSON, so ``{"x":\\r<call>\\r}`` was one harmless object to the
    gateway, forwarded unjudged; the SDK's stdio server reads text lines with universal newlines,
    split it at each ``\\r`` and ran the denied call in the middle."""
    call = _note_call(9, b'{"text": "carriage return"}')
    with raw_gateway(tmp_path) as client:
        client.send(b'{"x":\r' + call + b"\r}")
        answer = client.answer()
        client.send(_frame(id=10, method="ping") + b"\r")  # CRLF line ends still pass
        pong = client.answer()
    assert answer["error"]["code"] == -32700
    assert "carriage return" in answer["error"]["message"]
    assert pong == {"jsonrpc": "2.0", "id": 10, "result": {}}
    assert calls(tmp_path) == []


PRINTING_GUARD = """
import os
from otelhooks import Block

def deny(event):
    print("checking", event.apiName, end="")  # no newline: it would glue onto the next frame
    os.system("printf 'checked by a shell'")  # the process's own stdout, inherited
    return Block("notes are read-only here")
"""


def test_a_guard_that_prints_leaves_the_frames_whole(tmp_path: Path) -> None:
    """stdout is the protocol's: what a Python hook prints goes to stderr. Before, its text was
    glued to the deny's frame, which the client could not read."""
    hooks = write_hooks(tmp_path, DENY_NOTES, PRINTING_GUARD)
    with raw_stdio_gateway(tmp_path, [hooks]) as client:
        client.send(_note_call(3, b'{"text": "hello"}'))
        answer = client.answer()
        client.send(
            _frame(id=4, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": 2}})
        )
        after = client.answer()
    assert answer["id"] == 3
    assert answer["result"]["content"][0]["text"] == "notes are read-only here"
    assert after["result"]["content"][0]["text"] == "3"
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]
