"""The runs page while its agents add to it: an open run its agent is still adding spans to is
read only for the spans the page lacks, and a list paged through stays as long as it was.

Before, each span added to the open run made the page read the whole outline again and draw it
again: 7 MiB for a run of 50,000 spans, each time (benchmarks/README.md, r-web4); and each run
added took a list paged to its 300th run back to its first 100. Real serve, the spans posted as
OTLP/JSON, Debian's Chromium.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web._otlp import ids, post, posted_big_trace, span
from tests.web.conftest import log_in

pytestmark = pytest.mark.timeout(180)

SPANS = 2000


def test_a_span_added_to_the_open_run_is_read_alone_and_drawn(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, root = posted_big_trace(served_api, SPANS)
    page = log_in(browser, served.url)
    try:
        page.locator("#ops-body tr.op", has_text="big-bot").click(timeout=10_000)
        page.locator("#trace-meta", has_text=f"{SPANS} spans").wait_for(timeout=30_000)
        reads: list[tuple[str, int]] = []

        def on(response: Any) -> None:
            if f"/v1/ui/traces/{trace_id}" in response.url:
                reads.append((response.url, len(response.body())))

        page.on("response", on)
        for n in (1, 2):
            post(served_api, [span(trace_id, ids()[1], f"execute_tool late-{n}", parent=root)])
            page.locator("#trace-meta", has_text=f"{SPANS + n} spans").wait_for(timeout=30_000)
        page.evaluate("document.getElementById('wf').scrollTop = 1e9")
        late = page.locator(".wf-row .span-name", has_text="execute_tool late-")
        late.nth(1).wait_for(timeout=10_000)
        assert late.all_inner_texts() == ["execute_tool late-1", "execute_tool late-2"]
        # before: 2 x the whole outline (about 300 KB each)
        assert reads
        assert all(size < 4096 for _, size in reads), reads
    finally:
        page.context.close()


def test_a_page_whose_spans_are_not_the_run_s_start_gets_them_all(
    served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, root = ids()
    (_, a), (_, b) = ids(), ids()
    post(
        served_api,
        [span(trace_id, root, "invoke_agent r"), span(trace_id, a, "step a", parent=root)],
    )
    path = f"/v1/ui/traces/{trace_id}?view=outline"
    whole = served_api.get(path).json()
    assert (whole["from"], [s["n"] for s in whole["spans"]]) == (0, ["invoke_agent r", "step a"])
    post(served_api, [span(trace_id, b, "step b", parent=root)])
    after = served_api.get(f"{path}&from=2&last={a}").json()
    assert (after["from"], [s["n"] for s in after["spans"]]) == (2, ["step b"])
    # what the page holds is not the run's start (another last span, more spans than kept)
    for asked in (f"&from=2&last={root}", f"&from=9&last={b}", "&from=2", f"&from=x&last={a}"):
        got = served_api.get(path + asked).json()
        assert (got["from"], len(got["spans"])) == (0, 3), asked


def test_a_run_added_leaves_the_list_paged_through_as_long_as_it_was(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    agent = "pager-bot"
    runs = []
    for n in range(150):
        trace_id, root = ids()
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
        runs.append(span(trace_id, root, f"invoke_agent {agent} {n}", attributes=attrs))
    post(served_api, runs)
    page = log_in(browser, served.url)
    try:
        page.select_option("#f-agent", agent)
        rows = page.locator("#ops-body tr.op")
        page.locator("#ops-count", has_text="150 of").wait_for(timeout=10_000)
        page.click("#ops-more")
        rows.nth(149).wait_for(timeout=10_000)
        trace_id, root = ids()
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
        post(served_api, [span(trace_id, root, f"invoke_agent {agent} late", attributes=attrs)])
        page.locator("#ops-count", has_text="151 of").wait_for(timeout=10_000)
        page.locator(f"#ops-body tr.op[data-trace='{trace_id}']").wait_for(timeout=10_000)
        # as long as it was, the new run on top, the oldest a page further (before: the first
        # 100 alone, the 50 the person paged to gone)
        assert rows.count() == 150
        assert rows.nth(149).get_attribute("data-trace") == runs[1]["traceId"]
        assert page.locator("#ops-more").is_visible()
    finally:
        page.context.close()


def test_the_list_offers_the_first_500_agents_as_filters(
    served: EventLogServer, served_api: httpx.Client
) -> None:
    # read at every change of the list: 10,000 runs of agents a sender named apart (4,096
    # characters each) made every answer 40 MB; the tools were cut at 500 already
    runs = []
    for n in range(600):
        trace_id, root = ids()
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{n:04}"}
        runs.append(span(trace_id, root, "invoke_agent", attributes=attrs))
    post(served_api, runs)
    listed = served_api.get("/v1/ui/operations").json()
    assert listed["agents"] == [f"agent-{n:04}" for n in range(500)]
    # a run of an agent left out is still found by its name
    assert served_api.get("/v1/ui/operations?agent=agent-0599").json()["matched"] == 1
