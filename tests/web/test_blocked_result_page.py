"""A tool call whose result a ``tool_result_persist`` hook blocked (the tool ran, the model read
the block's reason instead) is marked wherever a deny is: the runs list (its mark, the denials
count, the decision filter) and the run page (the waterfall's mark, the span's details). Debian's
Chromium through Playwright, spans from a real run exported over OTLP/HTTP to a real serve."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelhooks import AgentTracer, Block, EventLogServer, HookEvent, HookSpanProcessor
from tests.web.conftest import TOKEN, log_in

pytestmark = pytest.mark.timeout(90)

REASON = "the output quotes an API key"


def _leak_check(event: HookEvent) -> Block:
    return Block(REASON)


def _runs(server: EventLogServer) -> None:
    """Two real runs through the public API: one whose tool result the hook blocks, one whose
    tool result passes."""
    provider = TracerProvider()
    hooks = HookSpanProcessor()
    provider.add_span_processor(hooks)
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks.register(
        [{"id": "leak-check", "type": "tool_result_persist", "matcher": "cat",
          "handler": _leak_check}]
    )  # fmt: skip
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks)
    with tracer.operation("reader") as op, op.step() as step:
        read = step.run_tool("shell", "cat", {"path": ".env"}, lambda path: "KEY=sk-123")
    with tracer.operation("adder") as op, op.step() as step:
        added = step.run_tool("calc", "add", {}, lambda: "2")
    provider.shutdown()
    assert not read.success  # the model read the block, not the key
    assert REASON in read.content
    assert added.content == "2"


def test_a_blocked_result_is_marked_in_the_runs_list_the_filter_and_the_run_page(
    browser: Any, server: EventLogServer
) -> None:
    _runs(server)
    page = log_in(browser, server.url)
    try:
        page.locator("#ops-body tr.op").nth(1).wait_for()  # both runs are listed
        row = page.locator("#ops-body tr.op", has_text="reader")
        row.locator(".dec.blocked").wait_for()
        assert row.locator("td.num").nth(3).inner_text() == "1"  # the denials column
        assert page.locator("#ops-body tr.op", has_text="adder").locator(".dec").count() == 0
        page.select_option("#f-decision", "blocked")
        page.locator("#ops-count", has_text="1 of 2 runs").wait_for()
        assert page.locator("#ops-body tr.op").count() == 1
        page.locator("#ops-body tr.op").first.click()
        mark = page.locator(".wf-row .dec.blocked").first
        mark.wait_for()
        title = mark.get_attribute("title") or ""
        assert "leak-check" in title
        assert REASON in title
        mark.locator("xpath=..").click()
        detail = page.locator("#detail")
        detail.locator("th", has_text="decided by").wait_for()
        text = detail.inner_text()
        assert "hook decision\tblocked" in text
        assert "leak-check" in text
        assert REASON in text
        assert page.locator(".legend .dec.blocked").count() == 1
    finally:
        page.context.close()
