"""The gateway over stdio, with the SDK on both sides: ``otelhooks mcp -- python server.py`` is a
real subprocess between the SDK's client and a server written with the SDK's server API."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CreateMessageResult, TextContent

from otelhooks import read_otlp_json_lines
from tests._webhook_server import Reply, webhook_server
from tests.mcp._harness import DENY_NOTES, calls, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(120)


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def test_allowed_call_reaches_the_server_and_answers(tmp_path: Path) -> None:
    async def scenario() -> object:
        async with stdio_session(tmp_path) as session:
            return await session.call_tool("add", {"a": 2, "b": 3})

    result = anyio.run(scenario)
    assert _text(result) == "5"
    assert calls(tmp_path) == [{"tool": "add", "args": {"a": 2, "b": 3}}]


DENY_SCRIPT = """
from otelhooks import Block

def deny(event):
    return Block(f"notes are read-only here ({event.identifier}/{event.apiName})")
"""


def test_denied_call_never_reaches_the_server(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)

    async def scenario() -> tuple[object, object]:
        async with stdio_session(tmp_path, [hooks]) as session:
            denied = await session.call_tool("write_note", {"text": "secret"})
            allowed = await session.call_tool("add", {"a": 1, "b": 1})
            return denied, allowed

    denied, allowed = anyio.run(scenario)
    assert getattr(denied, "is_error", None) is True
    assert _text(denied) == "notes are read-only here (testsrv/write_note)"
    assert _text(allowed) == "2"
    assert [c["tool"] for c in calls(tmp_path)] == ["add"]  # write_note never ran


MOCK = """
hooks:
  - id: fake-add
    type: beforeToolCall
    matcher: "add"
    script: hooks.py:mock
"""
MOCK_SCRIPT = """
def mock(event):
    event.mock({"content": "42", "structuredContent": {"result": 42}})
"""


def test_mocked_call_answers_with_the_mock_and_skips_the_server(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, MOCK, MOCK_SCRIPT)

    async def scenario() -> object:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await session.call_tool("add", {"a": 1, "b": 2})

    result = anyio.run(scenario)
    assert _text(result) == "42"
    assert getattr(result, "structured_content", None) == {"result": 42}
    assert calls(tmp_path) == []


REWRITE = """
hooks:
  - id: shout
    type: beforeToolCall
    matcher: "testsrv/write_note"
    script: hooks.py:shout
"""
REWRITE_SCRIPT = """
def shout(event):
    return {"args": {"text": event.args["text"].upper()}}
"""


def test_rewritten_arguments_are_what_the_server_receives(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, REWRITE, REWRITE_SCRIPT)

    async def scenario() -> object:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await session.call_tool("write_note", {"text": "quiet"})

    result = anyio.run(scenario)
    assert _text(result) == "noted: QUIET"
    assert calls(tmp_path) == [{"tool": "write_note", "args": {"text": "QUIET"}}]


def test_after_tool_call_webhook_gets_the_result(tmp_path: Path) -> None:
    with webhook_server() as server:
        server.routes["/after"] = Reply.json({"ok": True})
        hooks = write_hooks(
            tmp_path,
            f"""
hooks:
  - id: audit
    type: afterToolCall
    matcher: "add"
    webhook: {{url: "{server.url}/after"}}
""",
        )

        async def scenario() -> None:
            async with stdio_session(tmp_path, [hooks]) as session:
                await session.call_tool("add", {"a": 20, "b": 22})

        anyio.run(scenario)
        got = server.wait_for("/after", 1, timeout_s=15)
        time.sleep(0.5)  # a second delivery (the same call observed twice) would be here now
        assert len([r for r in server.received if r.path == "/after"]) == 1
    body = got[0].json()
    assert body["event"] == "after_tool_call", body
    assert (body["identifier"], body["apiName"], body["success"]) == ("testsrv", "add", True)
    assert body["toolCallId"].endswith(":2")  # <session>:<JSON-RPC id>


def test_spans_follow_the_mcp_conventions_in_one_trace(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)

    async def scenario() -> None:
        async with stdio_session(tmp_path, [hooks]) as session:
            await session.list_tools()
            await session.call_tool("add", {"a": 1, "b": 2})
            await session.call_tool("write_note", {"text": "x"})

    anyio.run(scenario)
    spans = _spans_eventually(tmp_path / "traces.jsonl", "mcp.session")
    by_name = {s["name"]: s for s in spans}
    assert {"initialize", "tools/list", "tools/call add", "tools/call write_note"} <= set(by_name)
    assert len({s["traceId"] for s in spans}) == 1  # one trace per session
    session_span = by_name["mcp.session"]
    call = by_name["tools/call add"]
    attrs = _attrs(call)
    assert call["parentSpanId"] == session_span["spanId"]
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "add"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["jsonrpc.request.id"] == "2" or attrs["jsonrpc.request.id"].isdigit()
    assert attrs["mcp.session.id"] == _attrs(session_span)["mcp.session.id"]
    assert attrs["mcp.protocol.version"]
    assert attrs["network.transport"] == "pipe"
    assert "error.type" not in attrs
    denied = _attrs(by_name["tools/call write_note"])
    # a denial is the hook's decision, not a failure: the rule of execute_tool spans too
    assert "error.type" not in denied
    assert by_name["tools/call write_note"]["status"].get("code") in (None, 0, "STATUS_CODE_UNSET")
    assert denied["otelhooks.hook.decision"] == "deny"
    assert denied["otelhooks.hook.decided_by"] == "no-notes"
    assert denied["otelhooks.tool.matcher_value"] == "testsrv/write_note"


def test_client_traceparent_in_meta_continues_the_clients_trace(tmp_path: Path) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = "00f067aa0ba902b7"

    async def scenario() -> None:
        async with stdio_session(tmp_path) as session:
            await session.call_tool(
                "add", {"a": 1, "b": 2}, meta={"traceparent": f"00-{trace_id}-{parent}-01"}
            )

    anyio.run(scenario)
    spans = _spans_eventually(tmp_path / "traces.jsonl", "mcp.session")
    call = next(s for s in spans if s["name"] == "tools/call add")
    session_span = next(s for s in spans if s["name"] == "mcp.session")
    assert call["traceId"] == trace_id
    assert call["parentSpanId"] == parent
    assert [link["spanId"] for link in call.get("links", [])] == [session_span["spanId"]]


def test_server_crash_mid_call_is_an_error_not_a_hang(tmp_path: Path) -> None:
    async def scenario() -> BaseException | object:
        async with stdio_session(tmp_path) as session:
            try:
                with anyio.fail_after(30):
                    return await session.call_tool("crash", {})
            except Exception as exc:
                return exc

    started = time.monotonic()
    try:
        outcome: object = anyio.run(scenario)
    except BaseException as exc:  # the transport closing may surface as a group
        outcome = exc
    assert time.monotonic() - started < 60
    assert "exited with code 3" in repr(outcome) or "Connection closed" in repr(outcome)
    assert not isinstance(outcome, TimeoutError)
    assert [c["tool"] for c in calls(tmp_path)] == ["crash"]


def test_fifty_concurrent_calls_all_answer_correctly(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        results: list[str] = [""] * 50
        async with stdio_session(tmp_path) as session:

            async def one(i: int) -> None:
                results[i] = _text(await session.call_tool("slow", {"tag": f"t{i}"}))

            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(one, i)
        return results

    started = time.monotonic()
    results = anyio.run(scenario)
    assert results == [f"t{i}" for i in range(50)]
    assert time.monotonic() - started < 60
    assert len(calls(tmp_path)) == 50


def test_progress_notifications_pass_through(tmp_path: Path) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def scenario() -> object:
        async with stdio_session(tmp_path) as session:
            return await session.call_tool("count", {"steps": 3}, progress_callback=on_progress)

    result = anyio.run(scenario)
    assert _text(result) == "counted 3"
    assert seen == [1, 2, 3]


def test_cancelled_call_passes_the_cancellation_and_the_session_goes_on(tmp_path: Path) -> None:
    async def scenario() -> object:
        async with stdio_session(tmp_path) as session:
            # cancelled once the server runs it: the SDK client sends notifications/cancelled
            with anyio.move_on_after(20) as waiting:
                async with anyio.create_task_group() as calling:
                    calling.start_soon(session.call_tool, "slow", {"tag": "late", "seconds": 30})
                    while not calls(tmp_path):
                        await anyio.sleep(0.02)
                    waiting.cancel()
            return await session.call_tool("add", {"a": 1, "b": 1})

    result = anyio.run(scenario)
    assert _text(result) == "2"  # the session still works after the cancellation
    spans = _spans_eventually(tmp_path / "traces.jsonl", "mcp.session")
    names = [s["name"] for s in spans]
    assert "notifications/cancelled" in names
    (slow,) = [s for s in spans if s["name"] == "tools/call slow"]
    assert _attrs(slow)["error.type"] == "cancelled"


def test_filter_tools_hides_the_denied_tool_from_the_list(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)

    async def scenario() -> list[str]:
        async with stdio_session(tmp_path, [hooks], ["--filter-tools"]) as session:
            return [tool.name for tool in (await session.list_tools()).tools]

    names = anyio.run(scenario)
    assert "write_note" not in names
    assert {"add", "slow", "count"} <= set(names)


ASK_NOTES = """
hooks:
  - id: ask-notes
    type: beforeToolCall
    matcher: "testsrv/write_note"
    approval: {timeout: 20, default: deny}
"""


def test_filter_tools_lists_a_tool_a_person_approves_at_once(tmp_path: Path) -> None:
    """An approval decides each call when it is made: the list is no call, so nobody is asked
    and the tool stays listed. Before, ``tools/list`` asked for an approval of a pretend call
    per such tool, waited out its timeout, and hid the tool when the default was deny."""
    hooks = write_hooks(tmp_path, ASK_NOTES)

    async def scenario() -> tuple[list[str], float]:
        async with stdio_session(tmp_path, [hooks], ["--filter-tools"]) as session:
            started = time.monotonic()
            listed = await session.list_tools()
            return [tool.name for tool in listed.tools], time.monotonic() - started

    names, seconds = anyio.run(scenario)
    assert "write_note" in names
    assert seconds < 10


def test_server_initiated_sampling_request_round_trips(tmp_path: Path) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="sampled!"), model="fake"
        )

    async def scenario() -> object:
        async with stdio_session(tmp_path, sampling_callback=sampling) as session:
            return await session.call_tool("ask", {"question": "why?"})

    result = anyio.run(scenario)
    assert asked == ["why?"]
    assert _text(result) == "sampled!"
    spans = _spans_eventually(tmp_path / "traces.jsonl", "mcp.session")
    sampling_span = next(s for s in spans if s["name"] == "sampling/createMessage")
    assert sampling_span["kind"] == 3  # CLIENT: the server asked, through the gateway
    assert "error.type" not in _attrs(sampling_span)


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = span.get("attributes", {})
    return attrs


def _spans_eventually(path: Path, name: str, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    """The exported spans once ``name`` is among them (the gateway flushes as it exits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        spans = read_otlp_json_lines(path) if path.exists() else []
        if any(s["name"] == name for s in spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)
