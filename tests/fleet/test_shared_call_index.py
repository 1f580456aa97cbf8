"""LobeHub's ``callIndex`` across a fleet: two ``serve`` instances on one PostgreSQL store.

PreToolUse and PostToolUse of one tool use reach different instances; each tool is numbered in
the turn from 1 (``executors/toolPreparation.ts``), as the command bridge and one ``serve`` do
(``tests/integrations/test_claude_code_call_index.py`` plays the same session).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import EventLogServer, serve
from otelhooks._store._open import open_store
from tests._webhook_server import WebhookServer, webhook_server
from tests.integrations.test_claude_code_call_index import HOOKS, ROUTE, TOKEN, check, play

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with webhook_server() as running:
        yield running


def test_two_instances_number_each_tool_in_the_turn_from_1(
    pg_url: str, tmp_path: Path, server: WebhookServer
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS.format(url=server.url))
    made: list[tuple[EventLogServer, InMemorySpanExporter]] = []
    try:
        for _ in range(2):
            exported = InMemorySpanExporter()
            instance = serve(
                [hooks], token=TOKEN, span_exporters=[exported], store=pg_url, web=False
            )
            made.append((instance, exported))
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:

            def send(to: int, payload: dict[str, Any]) -> None:
                response = client.post(made[to][0].url + ROUTE, json=payload)
                assert response.status_code == 200

            play(send)
        check(server)
    finally:
        for instance, _ in made:
            instance.stop()
    indexes = sorted(
        s.attributes.get("otelhooks.tool.call_index")
        for _, exported in made for s in exported.get_finished_spans()
        if s.attributes is not None and s.name.startswith("execute_tool")
    )  # fmt: skip
    assert indexes == [0, 1, 2, 3]  # the session-wide index of the spans is unchanged


def test_a_pre_tool_use_repeated_on_another_instance_keeps_its_turn_number(
    pg_url: str,
) -> None:
    stores = [open_store(pg_url) for _ in range(2)]
    try:
        a, b = (s.claude_code_sessions() for s in stores)  # type: ignore[attr-defined]
        op = a.current_operation("sess-turns")
        first = [
            a.begin_tool(op.session_id, "u1", "Bash", {}),
            b.begin_tool(op.session_id, "u2", "Bash", {}),
        ]
        again = b.begin_tool(op.session_id, "u1", "Bash", {})
        model = a.begin_tool(op.session_id, "otelhooks:model-call", "chat", {}, counted=False)
        assert [t.turn_index for t in first] == [1, 2]
        assert again.turn_index == 1
        assert (model.call_index, model.turn_index) == (-1, 0)
        b.set_tool_attributes(first[1], {"x": "y"})
        ended = a.end_tool("sess-turns", "u2")
        assert ended is not None
        assert (ended.turn_index, ended.attributes) == (2, {"x": "y"})
        new, _ = b.start_operation("sess-turns", "next")
        assert a.begin_tool(new.session_id, "u3", "Bash", {}).turn_index == 1
        assert b.begin_tool(new.session_id, "u4", "Read", {}).turn_index == 1
    finally:
        for store in stores:
            store.close()
