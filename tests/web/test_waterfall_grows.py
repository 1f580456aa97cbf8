"""The waterfall of an open run while its agent adds spans: each span put in its place in the
tree drawn (a child under its parent, a span whose children came first taking them under it),
the page's tree after every addition the one a fresh open of the run draws, and an addition
costing the page what the new spans cost, not the whole run.

Before, every span added to an open run built the waterfall's tree again from all its spans: one
long task of 84-175 ms at each addition to a 50,000-span run (benchmarks/README.md, r-web4).
Real serve, the spans posted as OTLP/JSON, Debian's Chromium (its V8's precise coverage counts
what the page's scripts ran).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web._otlp import ids, post, posted_big_trace, span
from tests.web.conftest import log_in

pytestmark = pytest.mark.timeout(240)

# what a row draws: its span, place, indent, toggle, kind, name, marks, selection and bar
ROWS = """() => [...document.querySelectorAll('#wf-inner .wf-row')].map((r) => [
  r.dataset.span, r.style.top, r.querySelector('.wf-name').style.paddingLeft,
  r.querySelector('.toggle').textContent, r.querySelector('.kind').textContent,
  r.querySelector('.span-name').textContent,
  [...r.querySelectorAll('.dec')].map((d) => d.textContent).join(','),
  r.classList.contains('selected'), r.querySelector('.wf-bar').style.left,
  r.querySelector('.wf-bar').style.width])"""
HOSTILE = "<img src=x onerror=alert(1)> \u202eevil"


def _spans(page: Any, count: int) -> None:
    page.locator("#trace-meta", has_text=re.compile(f"^{count} spans")).wait_for(timeout=30_000)


def _row(page: Any, span_id: str) -> Any:
    return page.locator(f".wf-row[data-span='{span_id}']")


def _open_fresh(fresh: Any, url: str, trace_id: str, count: int, hidden: str, chosen: str) -> Any:
    """The run opened again in ``fresh``, ``hidden``'s children hidden, ``chosen`` selected as
    the live page's were."""
    fresh.goto("about:blank")
    fresh.goto(f"{url}/#trace={trace_id}")
    _spans(fresh, count)
    _row(fresh, hidden).locator(".toggle").click()
    _row(fresh, chosen).click()
    fresh.locator("#detail h3").wait_for()
    return fresh.evaluate(ROWS)


def test_spans_added_to_the_open_run_go_where_a_fresh_open_draws_them(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, root = ids()
    name = {}  # a span's name: its id
    at = 1_700_000_000_000_000_000

    def make(label: str, parent: str | None, start: int, span_id: str | None = None) -> Any:
        sid = span_id or ids()[1]
        name[label] = sid
        return span(trace_id, sid, label, parent=parent, start_ns=at + start, duration_ns=50_000)

    step_a, step_b, orphan = ids()[1], ids()[1], ids()[1]
    missing = ids()[1]  # the parent of an orphan, sent later
    first = [
        make("invoke_agent grower", None, 0, root),
        make("step a", root, 10_000, step_a),
        make("chat a1", step_a, 20_000),
        make("step b", root, 100_000, step_b),
        make("chat b1", step_b, 110_000),
        make("chat b2", step_b, 120_000),
        make("execute_tool orphan", missing, 60_000, orphan),
        make("chat orphan's own", orphan, 61_000),
    ]
    post(served_api, first)
    live = log_in(browser, served.url)
    fresh = log_in(browser, served.url)
    try:
        live.goto("about:blank")
        live.goto(f"{served.url}/#trace={trace_id}")
        _spans(live, len(first))
        _row(live, step_b).locator(".toggle").click()
        _row(live, name["chat a1"]).click()
        live.locator("#detail h3", has_text="chat a1").wait_for()
        count = len(first)
        later = ids()[1]  # the parent of an orphan sent below, itself sent last
        batches = [
            # a sibling starting with one drawn (after it, as a fresh open sorts them), a span
            # under the collapsed step, one named to be read as HTML
            [
                make("chat a2", step_a, 20_000),
                make("chat b3", step_b, 130_000),
                make(HOSTILE, step_a, 30_000),
            ],
            # the orphan's parent: it takes the orphan (and its child) under it; a new orphan
            [make("step x", root, 50_000, missing), make("chat y1", later, 70_000)],
            # a span of no parent starting before the run's root, one under the orphan's child
            [
                make("invoke_agent early", None, -5_000),
                make("deep", name["chat orphan's own"], 62_000),
            ],
            # the new orphan's parent makes a ring with it, and an id sent twice: drawn as a
            # fresh open draws them
            [
                make("step y", name["chat y1"], 65_000, later),
                make("step a again", root, 15_000, step_a),
            ],
        ]
        for batch in batches:
            post(served_api, batch)
            count += len(batch)
            _spans(live, count)
            drawn = live.evaluate(ROWS)
            opened = _open_fresh(fresh, served.url, trace_id, count, step_b, name["chat a1"])
            assert drawn == opened
            assert (
                live.locator("#trace-meta").inner_text()
                == fresh.locator("#trace-meta").inner_text()
            )
            if batch is batches[1]:
                # the orphan now under its parent, its own child under it
                names = [row[5] for row in drawn]
                x = names.index("step x")
                assert names[x : x + 3] == ["step x", "execute_tool orphan", "chat orphan's own"]
                assert [row[2] for row in drawn[x : x + 3]] == ["18px", "32px", "46px"]
        names = [row[5] for row in drawn]
        assert names[:9] == [
            "invoke_agent early",
            "invoke_agent grower",
            "step a",
            "chat a1",
            "chat a2",
            HOSTILE.replace("\u202e", "\\u202e"),
            "step a again",
            "step x",
            "execute_tool orphan",
        ]
        # the collapsed step stays collapsed, its three children hidden; the selection stays
        assert [row[3] for row in drawn if row[5] == "step b"] == ["▸"]
        assert "chat b3" not in names
        assert live.locator("#detail h3").inner_text() == "chat a1"
        assert live.locator("#wf-inner img").count() == 0
    finally:
        live.context.close()
        fresh.context.close()


SPANS = 2000


def _most_run(cdp: Any) -> int:
    """The most times one block of the page's own scripts ran since the coverage was last
    taken (V8's precise coverage, counted per block)."""
    taken = cdp.send("Profiler.takePreciseCoverage")["result"]
    ours = [s for s in taken if re.search(r"/static/(app|tree)\.js$", s["url"])]
    assert ours, [s["url"] for s in taken]
    return max(r["count"] for s in ours for f in s["functions"] for r in f["ranges"])


def counted_open(page: Any, url: str, trace_id: str, count: int) -> Any:
    """The run ``trace_id`` (``count`` spans) opened in ``page``, its scripts compiled counting
    the times each block runs: the CDP session that reads the counts (:func:`_most_run`)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": True})
    page.goto("about:blank")
    page.goto(f"{url}/#trace={trace_id}")
    _spans(page, count)
    return cdp


def test_spans_added_to_a_big_open_run_cost_what_they_are_not_the_run(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, root = posted_big_trace(served_api, SPANS)
    page = log_in(browser, served.url)
    try:
        cdp = counted_open(page, served.url, trace_id, SPANS)
        # opening the run walks every span: what is counted is what a block of the page ran
        assert _most_run(cdp) >= SPANS
        # a step of calls as a live agent sends them (the calls first, then their step), and a
        # call under the run's root
        _, step = ids()
        post(
            served_api,
            [span(trace_id, ids()[1], f"execute_tool live-{n}", parent=step) for n in range(10)],
        )
        post(served_api, [span(trace_id, step, "step live", parent=root)])
        post(served_api, [span(trace_id, ids()[1], "execute_tool last", parent=root)])
        _spans(page, SPANS + 12)
        counted = _most_run(cdp)
        page.evaluate("document.getElementById('wf').scrollTop = 1e9")
        page.locator(".wf-row .span-name", has_text="execute_tool last").wait_for()
        names = page.locator(".wf-row .span-name").all_inner_texts()
        assert names[-12:] == [
            "step live",
            *(f"execute_tool live-{n}" for n in range(10)),
            "execute_tool last",
        ]
        # before: each addition built the tree again, a block running for each of the 2,000
        assert counted < SPANS / 4
    finally:
        page.context.close()
