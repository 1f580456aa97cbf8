"""Claude Code sessions in PostgreSQL: a tool use started on one instance ends on another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import EventLogServer, serve

TOKEN = "fleet-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"


def _bash(name: str, use_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-fleet",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": use_id,
        **fields,
    }


@pytest.fixture
def pair(pg_url: str) -> Iterator[list[tuple[EventLogServer, InMemorySpanExporter]]]:
    made: list[tuple[EventLogServer, InMemorySpanExporter]] = []
    try:
        for _ in range(2):
            exported = InMemorySpanExporter()
            server = serve(token=TOKEN, span_exporters=[exported], store=pg_url, web=False)
            made.append((server, exported))
        yield made
    finally:
        for server, _ in made:
            server.stop()


def test_pre_tool_use_on_one_instance_and_post_tool_use_on_another_make_one_span(
    pair: list[tuple[EventLogServer, InMemorySpanExporter]],
) -> None:
    (a, in_a), (b, in_b) = pair
    pre = httpx.post(a.url + ROUTE, json=_bash("PreToolUse", "toolu_x"), headers=AUTH)
    assert pre.status_code == 200
    post = httpx.post(
        b.url + ROUTE,
        json=_bash("PostToolUse", "toolu_x", tool_response={"stdout": "ok"}),
        headers=AUTH,
    )
    assert post.status_code == 200
    a.stop()
    b.stop()  # flushes the span exporters
    spans = [
        s
        for s in [*in_a.get_finished_spans(), *in_b.get_finished_spans()]
        if s.name.startswith("execute_tool")
    ]
    assert len(spans) == 1
    assert spans[0] in in_b.get_finished_spans()
    assert spans[0].attributes is not None
    assert spans[0].attributes.get("gen_ai.tool.call.id") == "toolu_x"
