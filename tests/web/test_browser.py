"""The web view in a real browser (Debian's Chromium through Playwright): what a person sees."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelhooks import AgentTracer, Block, EventLogServer, HookSpanProcessor
from tests.web._otlp import agent_run, big_trace, ids, post, span
from tests.web.conftest import TOKEN, log_in, screenshot

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]


# The runs list shows fewer runs than there are: a filter's list is the one shown.
FEWER = """() => {
  const count = document.getElementById('ops-count').textContent;
  const m = /^(\\d+) of (\\d+) runs$/.exec(count);
  return m !== null && Number(m[1]) < Number(m[2]);
}"""

# Every run the list shows has a denial (the unfiltered list has runs without one).
EVERY_ROW_DENIED = """() => {
  const rows = [...document.querySelectorAll('#ops-body tr.op')];
  return rows.length > 0 && rows.every((tr) => tr.querySelector('.dec.denied') !== null);
}"""


def _demo(server: EventLogServer, tmp_path: Path) -> None:
    """The real ``otelhooks demo``, exporting to the server over OTLP/HTTP."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OTEL_EXPORTER_OTLP_ENDPOINT": server.url,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {TOKEN}",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "otelhooks",
            "demo",
            "--quiet",
            "--traces-out",
            str(tmp_path / "demo.jsonl"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_list_answered_after_the_filter_changed_does_not_replace_the_filtered_one(
    browser: Any, server: EventLogServer, tmp_path: Path
) -> None:
    # Before, the runs list asked for as the page loaded (no filter) and answered after the
    # list under "denied" replaced it: the page showed every run under a filter saying
    # "denied" (a CI run then clicked a run with no denial in it).
    _demo(server, tmp_path)
    context = browser.new_context(viewport={"width": 1400, "height": 860})
    page = context.new_page()
    held: list[Any] = []

    def hold_first_unfiltered(route: Any) -> None:
        if "decision=" not in route.request.url and not held:
            held.append(route)  # answered below, once the filtered list is shown
        else:
            route.continue_()

    try:
        page.route("**/v1/ui/operations*", hold_first_unfiltered)
        page.goto(f"{server.url}/")
        page.wait_for_url(f"{server.url}/login")
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        page.wait_for_url(f"{server.url}/")
        page.wait_for_function("() => document.getElementById('f-decision') !== null")
        assert held, "the page asked for no unfiltered list as it loaded"
        page.select_option("#f-decision", "denied")
        page.wait_for_function(FEWER)
        assert page.evaluate(EVERY_ROW_DENIED)
        with page.expect_response(lambda r: r.request.url == held[0].request.url):
            held[0].continue_()
        page.evaluate("() => new Promise((done) => setTimeout(done, 300))")  # it is rendered
        # the list shown is still one under "denied"; its count may have changed since (the
        # live view reads the list again when serve's runs change, and an approval answered in
        # this process, whoever asked it, adds a run to the index of every serve running)
        assert page.evaluate(FEWER)
        assert page.evaluate(EVERY_ROW_DENIED)
    finally:
        context.close()


def test_the_demo_sent_to_serve_shows_up_with_its_denial(
    browser: Any, server: EventLogServer, tmp_path: Path
) -> None:
    _demo(server, tmp_path)
    page = log_in(browser, server.url)
    try:
        page.select_option("#f-decision", "denied")
        page.wait_for_function(FEWER)  # the unfiltered list's rows are there before it
        row = page.locator("#ops-body tr.op").first
        row.wait_for()
        row.click()
        denied = page.locator(".wf-row .dec.denied").first
        denied.wait_for()
        denied.locator("xpath=..").click()
        detail = page.locator("#detail")
        detail.wait_for()
        assert "denied" in detail.inner_text()
        assert "decided by" in detail.inner_text()
        page.select_option("#f-decision", "")
        page.locator("#ops-body tr.op").nth(3).wait_for()
        screenshot(page, "web-runs.png", tmp_path)
    finally:
        page.context.close()


def test_a_guard_tried_out_in_permissive_mode_shows_what_it_would_have_done(
    browser: Any, server: EventLogServer
) -> None:
    # a real run through the public API: the hook is in mode: permissive, so the call runs
    provider = TracerProvider()
    hooks = HookSpanProcessor()
    provider.add_span_processor(hooks)
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks.register(
        [{"id": "no-rm", "type": "beforeToolCall", "mode": "permissive",
          "handler": lambda event: Block("rm is not allowed")}]
    )  # fmt: skip
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks)
    with tracer.operation("trial") as op, op.step() as step:
        ran = step.run_tool("shell", "bash", {"command": "rm -r build"}, lambda command: "ok")
    provider.shutdown()
    assert ran.content == "ok"
    page = log_in(browser, server.url)
    try:
        page.select_option("#f-decision", "permissive")
        page.locator("#ops-body tr.op").first.click()
        mark = page.locator(".wf-row .dec.permissive").first
        mark.wait_for()
        assert "no-rm: deny: rm is not allowed" in (mark.get_attribute("title") or "")
        assert page.locator(".wf-row .dec.denied").count() == 0
    finally:
        page.context.close()


def test_a_hostile_span_name_stays_text(
    browser: Any, server: EventLogServer, api: httpx.Client
) -> None:
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    trace_id, root = ids()
    post(
        api,
        [
            span(
                trace_id,
                root,
                hostile,
                attributes={
                    "gen_ai.agent.name": hostile,
                    "gen_ai.operation.name": "invoke_agent",
                    "evil": '<b onmouseover="window.__pwned=3">x</b>',
                },
            )
        ],
    )
    page = log_in(browser, server.url)
    try:
        page.locator("#ops-body tr.op").first.click()
        name = page.locator(".wf-row .span-name").first
        name.wait_for()
        assert name.inner_text() == hostile
        name.click()
        page.locator("#detail").wait_for()
        assert page.locator("#detail img, #detail script, #detail b, #wf img").count() == 0
        assert page.evaluate("window.__pwned") is None
    finally:
        page.context.close()


def test_runs_with_long_agent_and_tool_names_never_push_the_others_off_the_list(
    browser: Any, server: EventLogServer, api: httpx.Client
) -> None:
    """An agent names itself and its tools as it likes (a span attribute keeps 4,096
    characters). Before, each such run was a screen tall (its denial badge a screen below its
    start) and the filters as wide as the longest name: three of them hid the run before them."""
    post(api, agent_run("honest", denied_tool="rm"))
    for n in range(3):
        post(api, agent_run(f"agent{n}" + "X" * 4000, denied_tool="rm" + "Y" * 4000))
    page = log_in(browser, server.url)
    try:
        rows = page.locator("#ops-body tr.op")
        honest = rows.filter(has_text="honest")
        honest.wait_for(timeout=10_000)
        assert rows.count() == 4
        height = page.viewport_size["height"]
        box = honest.bounding_box()
        assert box is not None
        assert box["y"] + box["height"] <= height, box
        badge = rows.first.locator(".dec").bounding_box()
        assert badge is not None
        assert badge["y"] <= height, badge
        ops = page.locator(".ops").bounding_box()
        assert ops is not None
        for select in ("#f-agent", "#f-tool"):
            shown = page.locator(select).bounding_box()
            assert shown is not None
            assert shown["x"] + shown["width"] <= ops["x"] + ops["width"], (select, shown)
        assert page.locator(".agent-name").first.get_attribute("title", timeout=1000)
    finally:
        page.context.close()


def test_a_new_operation_appears_without_a_reload(
    browser: Any, server: EventLogServer, api: httpx.Client
) -> None:
    post(api, agent_run("early-bot"))
    page = log_in(browser, server.url)
    try:
        page.locator("#ops-body td.agent", has_text="early-bot").wait_for()
        page.locator("#live.on").wait_for()
        post(api, agent_run("late-bot"))
        page.locator("#ops-body td.agent", has_text="late-bot").wait_for(timeout=5000)
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    finally:
        page.context.close()


def test_a_browser_without_the_cookie_sees_only_the_login_form(
    browser: Any, server: EventLogServer
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{server.url}/approvals")
        assert page.url == f"{server.url}/login"
        page.fill("#token", "wrong")
        page.click("#login-submit")
        page.locator("#login-error").wait_for()
        assert context.cookies() == []
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        page.wait_for_url(f"{server.url}/")
        (cookie,) = context.cookies()
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Strict"
        assert page.evaluate("document.cookie") == ""
    finally:
        context.close()


def test_an_inline_script_is_refused_by_the_csp(browser: Any, server: EventLogServer) -> None:
    page = log_in(browser, server.url)
    try:
        violations: list[str] = []
        page.on("console", lambda msg: violations.append(msg.text))
        # What an injection would try: a script element with inline code added to the page.
        page.evaluate(
            "() => { const s = document.createElement('script');"
            " s.textContent = 'window.__inline = 1'; document.body.append(s); }"
        )
        page.wait_for_timeout(100)
        assert page.evaluate("window.__inline") is None
        assert any("Content Security Policy" in v for v in violations)
    finally:
        page.context.close()


def test_a_10000_span_trace_opens_in_under_3_seconds(
    browser: Any, server: EventLogServer, api: httpx.Client
) -> None:
    post(api, big_trace(10_000))
    page = log_in(browser, server.url)
    try:
        row = page.locator("#ops-body tr.op").first
        row.wait_for()
        started = time.monotonic()
        row.click()
        # locators, not wait_for_function: its string predicates are evals, which the CSP refuses
        page.locator("#trace-meta", has_text="10000 spans").wait_for()
        page.locator(".wf-row").nth(10).wait_for()
        elapsed = time.monotonic() - started
        # scrolling to the end renders the last rows (the list is virtual)
        page.evaluate("document.getElementById('wf').scrollTop = 1e9")
        page.locator(".wf-row .span-name", has_text="chat 9999").wait_for()
    finally:
        page.context.close()
    print(f"10,000-span trace opened in {elapsed:.2f} s")
    assert elapsed < 3.0


def test_the_operations_list_stays_responsive_with_10000_operations(
    browser: Any, server: EventLogServer, api: httpx.Client
) -> None:
    now = time.time_ns()
    batch: list[dict[str, Any]] = []
    for n in range(10_000):
        trace_id, sid = ids()
        batch.append(
            span(
                trace_id,
                sid,
                f"invoke_agent bot-{n % 7}",
                start_ns=now + n,
                attributes={
                    "gen_ai.agent.name": f"bot-{n % 7}",
                    "gen_ai.operation.name": "invoke_agent",
                },
            )
        )
        if len(batch) == 2000:
            post(api, batch)
            batch = []
    page = log_in(browser, server.url)
    try:
        page.locator("#ops-count", has_text="10000 of 10000 runs").wait_for()
        started = time.monotonic()
        page.select_option("#f-agent", "bot-3")
        page.locator("#ops-count", has_text="1429 of 10000 runs").wait_for()
        filtered = time.monotonic() - started
        started = time.monotonic()
        page.click("#ops-more")
        page.locator("#ops-body tr.op").nth(199).wait_for()
        paged = time.monotonic() - started
    finally:
        page.context.close()
    print(f"10,000 operations: filter {filtered:.2f} s, next page {paged:.2f} s")
    # measured 0.5-0.9 s with eight test suites sharing two cores
    assert filtered < 2.0
    assert paged < 2.0
