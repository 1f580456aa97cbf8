"""The MCP gateway (a process other than serve) holds a tool call in serve's inbox until a
person answers: a deny never reaches the MCP server, an allow does."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from otelhooks import EventLogServer
from tests.mcp._harness import calls, stdio_session, write_hooks
from tests.web.conftest import AUTH, TOKEN, approval_holder

pytestmark = pytest.mark.timeout(120)

HOOKS = """
hooks:
  - id: ask-for-notes
    type: beforeToolCall
    matcher: "testsrv/write_note"
    approval: {{timeout: 30, default: allow, url: "{url}"}}
"""


def _answer(url: str, decisions: list[str]) -> None:
    """Answer each approval that appears, in order, as a bot would."""
    with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
        for decision in decisions:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                pending = [
                    a
                    for a in client.get("/v1/approvals").json()["pending"]
                    if a["hook_id"] == "ask-for-notes"  # the inbox is the process's
                ]
                if pending:
                    client.post(
                        f"/v1/approvals/{pending[0]['id']}",
                        json={"decision": decision, "reason": "checked", "by": "bot"},
                    )
                    break
                time.sleep(0.05)


def test_the_gateway_waits_for_the_answer_given_at_serve(
    server: EventLogServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", TOKEN)
    hooks = write_hooks(tmp_path, HOOKS.format(url=server.url))
    answering = threading.Thread(target=_answer, args=(server.url, ["deny", "allow"]))
    answering.start()

    async def scenario() -> tuple[Any, Any]:
        async with stdio_session(tmp_path, [hooks]) as session:
            denied = await session.call_tool("write_note", {"text": "first"})
            allowed = await session.call_tool("write_note", {"text": "second"})
            return denied, allowed

    # on a thread of its own: the session's browser keeps an event loop on this one
    results: list[tuple[Any, Any]] = []
    client = threading.Thread(target=lambda: results.append(anyio.run(scenario)))
    client.start()
    client.join(90)
    answering.join(30)
    ((denied, allowed),) = results
    assert getattr(denied, "is_error", None) is True
    assert "checked" in str(denied.content)
    assert getattr(allowed, "is_error", None) is False
    notes = [c["args"]["text"] for c in calls(tmp_path) if c["tool"] == "write_note"]
    assert notes == ["second"]


def test_the_gateway_writes_who_answered_on_the_calls_span(
    server: EventLogServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", TOKEN)
    hooks = write_hooks(tmp_path, HOOKS.format(url=server.url))
    answering = threading.Thread(target=_answer, args=(server.url, ["deny"]))
    answering.start()

    async def scenario() -> Any:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await session.call_tool("write_note", {"text": "first"})

    results: list[Any] = []
    client = threading.Thread(target=lambda: results.append(anyio.run(scenario)))
    client.start()
    client.join(90)
    answering.join(30)
    assert getattr(results[0], "is_error", None) is True
    # the gateway's --traces-out (OTLP JSON lines): the reject event on the tools/call span
    events = [
        (span["name"], event)
        for line in (tmp_path / "traces.jsonl").read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for event in span.get("events", [])
        if event["name"] == "otelhooks.reject"
    ]
    ((name, event),) = events
    attrs = {a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}
    assert name.startswith("tools/call")
    assert (attrs["otelhooks.approval.answered_by"], attrs["otelhooks.approval.reason"]) == (
        "bot",
        "checked",
    )


def test_the_gateways_span_sent_to_serve_is_the_one_record_of_its_approval(
    server: EventLogServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", TOKEN)
    hooks = write_hooks(tmp_path, HOOKS.format(url=server.url))
    answering = threading.Thread(target=_answer, args=(server.url, ["deny"]))
    answering.start()

    async def scenario() -> Any:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await session.call_tool("write_note", {"text": "first"})

    results: list[Any] = []
    client = threading.Thread(target=lambda: results.append(anyio.run(scenario)))
    client.start()
    client.join(90)
    answering.join(30)
    assert getattr(results[0], "is_error", None) is True
    # the gateway's spans reach serve (here its --traces-out lines, posted as OTLP/HTTP JSON)
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    for line in lines:
        sent = httpx.post(
            f"{server.url}/v1/traces",
            content=line,
            headers={**AUTH, "content-type": "application/json"},
        )
        assert sent.status_code == 200
    ((trace_id, approval),) = [
        (span["traceId"], attrs["otelhooks.approval.id"])
        for line in lines
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for event in span.get("events", [])
        if event["name"] == "otelhooks.reject"
        for attrs in [{a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}]
    ]
    assert approval_holder(server, trace_id, approval).startswith("tools/call")
