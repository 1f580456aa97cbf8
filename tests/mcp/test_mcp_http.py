"""The gateway over Streamable HTTP: ``otelhooks mcp --listen 127.0.0.1:P --upstream URL`` between
the SDK's Streamable HTTP client and a server written with the SDK, all real processes."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import TextContent

from otelhooks import read_otlp_json_lines
from tests._realparts import reserved_port
from tests.mcp._harness import (
    SERVER_APP,
    calls,
    env,
    gateway_args,
    http_gateway,
    http_session,
    process,
    write_hooks,
)

pytestmark = pytest.mark.timeout(180)

HOOKS = """
hooks:
  - id: notes-policy
    type: beforeToolCall
    matcher: "testsrv/write_note"
    script: hooks.py:notes
  - id: fake-add
    type: beforeToolCall
    matcher: "testsrv/add"
    script: hooks.py:fake_add
"""
SCRIPT = """
from otelhooks import Block

def notes(event):
    text = event.args.get("text", "")
    if text == "secret":
        return Block("no secrets in notes")
    if text.startswith("shout:"):
        return {"args": {"text": text.upper()}}
    return None

def fake_add(event):
    if event.args.get("a") == 99:
        event.mock({"content": "mocked", "structuredContent": {"result": -1}})
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-http")
    hooks = write_hooks(tmp, HOOKS, SCRIPT)
    with http_gateway(tmp, [hooks]) as url:
        yield url, tmp


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def _call(url: str, tool: str, args: dict[str, Any]) -> Any:
    async def scenario() -> Any:
        async with http_session(url) as session:
            return await session.call_tool(tool, args)

    return anyio.run(scenario)


def test_allowed_call_over_http(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    assert _text(_call(url, "add", {"a": 40, "b": 2})) == "42"
    assert {"tool": "add", "args": {"a": 40, "b": 2}} in calls(tmp)


def test_denied_call_over_http_never_reaches_the_server(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    result = _call(url, "write_note", {"text": "secret"})
    assert result.is_error is True
    assert _text(result) == "no secrets in notes"
    assert all(c["args"].get("text") != "secret" for c in calls(tmp))


def test_mocked_call_over_http(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    result = _call(url, "add", {"a": 99, "b": 1})
    assert _text(result) == "mocked"
    assert result.structured_content == {"result": -1}
    assert all(c["args"].get("a") != 99 for c in calls(tmp))


def test_rewritten_arguments_over_http(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    assert _text(_call(url, "write_note", {"text": "shout:hi"})) == "noted: SHOUT:HI"
    assert {"tool": "write_note", "args": {"text": "SHOUT:HI"}} in calls(tmp)


def test_fifty_concurrent_calls_over_http(gateway: tuple[str, Path]) -> None:
    url, _ = gateway

    async def scenario() -> list[str]:
        results = [""] * 50
        async with http_session(url) as session:

            async def one(i: int) -> None:
                results[i] = _text(await session.call_tool("slow", {"tag": f"h{i}"}))

            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(one, i)
        return results

    assert anyio.run(scenario) == [f"h{i}" for i in range(50)]


def test_http_spans_carry_the_servers_session_id(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    _call(url, "add", {"a": 7, "b": 7})
    spans = _eventually(tmp / "traces.jsonl", lambda s: s["name"] == "tools/call add")
    call = next(s for s in spans if s["name"] == "tools/call add")
    attrs = call["attributes"]
    assert attrs["network.transport"] == "tcp"
    # a SERVER span names its client (the MCP client), never the gateway's upstream
    assert attrs["client.address"] == "127.0.0.1"
    assert isinstance(attrs["client.port"], int)
    assert attrs["network.protocol.name"] == "http"
    assert attrs["network.protocol.version"] == "1.1"
    assert "server.address" not in attrs
    assert len(attrs["mcp.session.id"]) == 32  # the server's Mcp-Session-Id
    # The session's own span ends when the client has gone, after the call's answer: waited for
    # as well, not assumed written with the call's.
    spans = _eventually(
        tmp / "traces.jsonl",
        lambda s: s["name"] == "mcp.session" and s["traceId"] == call["traceId"],
    )
    same_session = [s for s in spans if s["traceId"] == call["traceId"]]
    init = next(s for s in same_session if s["name"] == "initialize")
    assert init["attributes"]["mcp.session.id"] == attrs["mcp.session.id"]
    assert init["attributes"]["otelhooks.mcp.server.name"] == "testsrv"
    session_span = next(s for s in same_session if s["name"] == "mcp.session")
    assert session_span["attributes"]["otelhooks.mcp.upstream.address"] == "127.0.0.1"


def test_upstream_headers_come_from_allowed_env_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TOKEN", "tok-from-env")
    extra = ["--header", "Authorization: Bearer ${MCP_TOKEN}", "--allowed-env-var", "MCP_TOKEN"]
    with http_gateway(tmp_path, extra=extra) as url:
        assert _text(_call(url, "auth_header", {})) == "Bearer tok-from-env"


def test_server_crash_mid_call_over_http_is_an_error_not_a_hang(tmp_path: Path) -> None:
    with http_gateway(tmp_path) as url:

        async def scenario() -> object:
            async with http_session(url) as session:
                try:
                    with anyio.fail_after(30):
                        return await session.call_tool("crash", {})
                except Exception as exc:
                    return exc

        started = time.monotonic()
        try:
            outcome: object = anyio.run(scenario)
        except BaseException as exc:  # the session's teardown against a dead server
            outcome = exc
        assert time.monotonic() - started < 60
    assert not isinstance(outcome, TimeoutError)
    assert "MCP server dropped the stream" in repr(outcome), repr(outcome)


def _eventually(path: Path, pred: Any, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        spans = read_otlp_json_lines(path) if path.exists() else []
        if any(pred(s) for s in spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)


def test_listen_on_port_0_tells_the_port_it_bound(tmp_path: Path) -> None:
    # Before, --listen 127.0.0.1:0 bound a free port and said nothing of it (uvicorn says it
    # below the gateway's log level): the gateway ran where no client could find it.
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    log = tmp_path / "calls.jsonl"
    with (
        reserved_port() as server_port,
        process([str(SERVER_APP), "http", str(server_port)], log, server_port),
    ):
        args = [
            *gateway_args([hooks], tmp_path / "traces.jsonl"),
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            f"http://127.0.0.1:{server_port}/mcp",
        ]
        proc = subprocess.Popen([sys.executable, *args], env=env(log), stderr=subprocess.PIPE)
        try:
            assert proc.stderr is not None
            lines: queue.Queue[bytes] = queue.Queue()
            threading.Thread(target=lambda: [*map(lines.put, proc.stderr)], daemon=True).start()
            line = lines.get(timeout=60).decode()  # the gateway's first line
            found = re.fullmatch(r"otelhooks mcp: listening on http://127\.0\.0\.1:(\d+)\n", line)
            assert found is not None, line
            url = f"http://127.0.0.1:{found.group(1)}/mcp"
            assert _text(_call(url, "add", {"a": 40, "b": 2})) == "42"
        finally:
            proc.terminate()
            proc.wait(20)
