"""Collapsing a span of a big run's waterfall, and opening it again: the rows under it taken off
and put back in place, the rows a fresh open with the same spans collapsed draws, and a click
costing the page the span's own rows, not the run's.

Before, each click on a toggle drew every row of the run again: 38-109 ms at 50,000 spans
(benchmarks/README.md, s-collapse). Real serve, the spans posted as OTLP/JSON, Debian's Chromium
(its V8's precise coverage counts what the page's scripts ran).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web._otlp import posted_big_trace
from tests.web.conftest import log_in
from tests.web.test_waterfall_grows import ROWS, _most_run, _spans, counted_open

pytestmark = pytest.mark.timeout(240)

SPANS = 2000  # steps of 50 spans under the run's root: "step 0" ... "step 39"


# the waterfall scrolled by a script, and its rows drawn for it: the page draws them at the
# frame after the scroll event, and the scroll event comes at a frame
SCROLL = """(to) => new Promise((drawn) => {
  const box = document.getElementById('wf');
  box.scrollTop = to === null ? box.scrollTop + 600 : to;
  requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(drawn)));
})"""


def _scrolled_to(page: Any, name: str) -> Any:
    """The label of the row named ``name``, the waterfall scrolled down from its top to it."""
    page.evaluate(SCROLL, 0)
    label = page.locator(".wf-row .span-name", has_text=re.compile(f"^{name}$"))
    for _ in range(200):
        if label.count():
            return label
        page.evaluate(SCROLL, None)
    raise AssertionError(f"no row named {name!r}")


def _toggle(page: Any, name: str) -> None:
    _scrolled_to(page, name).locator("xpath=..").locator(".toggle").click()


def _drawn(page: Any, name: str) -> tuple[str, list[Any]]:
    """The height of every row, and the rows drawn around the row named ``name``."""
    _scrolled_to(page, name)
    height: str = page.evaluate("document.getElementById('wf-inner').style.height")
    return height, page.evaluate(ROWS)


def test_collapsing_and_opening_spans_draws_what_a_fresh_open_draws(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, _ = posted_big_trace(served_api, SPANS)
    live = log_in(browser, served.url)
    fresh = log_in(browser, served.url)
    try:
        for page in (live, fresh):
            page.goto("about:blank")
            page.goto(f"{served.url}/#trace={trace_id}")
            _spans(page, SPANS)
        # a step closed and opened again, another left closed, the run's root closed (every
        # row under it taken off, the closed step's among them) and opened again
        for name in ("step 1", "step 3", "step 1", "invoke_agent big-bot"):
            _toggle(live, name)
        assert live.locator(".wf-row").count() == 1
        _toggle(live, "invoke_agent big-bot")
        _toggle(fresh, "step 3")
        for around in ("step 1", "step 4"):
            assert _drawn(live, around) == _drawn(fresh, around)
        _, rows = _drawn(live, "step 4")
        assert [r[3] for r in rows if r[5] == "step 3"] == ["▸"]
    finally:
        live.context.close()
        fresh.context.close()


def test_a_click_on_a_toggle_costs_the_rows_under_it_not_the_run(
    browser: Any, served: EventLogServer, served_api: httpx.Client
) -> None:
    trace_id, _ = posted_big_trace(served_api, SPANS)
    page = log_in(browser, served.url)
    try:
        cdp = counted_open(page, served.url, trace_id, SPANS)
        assert _most_run(cdp) >= SPANS  # opening the run walks every span
        _toggle(page, "step 0")
        _toggle(page, "step 0")
        # before: each click drew the tree again, a block running for each of the 2,000 spans
        assert _most_run(cdp) < SPANS / 4
        assert page.locator(".wf-row .span-name", has_text=re.compile("^step 0$")).count() == 1
    finally:
        page.context.close()
