"""Helpers of the page-race tests (tests/web/test_page_races.py, test_page_stalls.py): Playwright's
router holding, failing or releasing serve's real answers to a page, and the URL patterns of the
requests the pages make."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from otelhooks import EventLogServer
from tests.web.conftest import AUTH

OPERATIONS = re.compile(r"/v1/ui/operations\?")
OUTLINE = re.compile(r"/v1/ui/traces/[0-9a-f]{32}\?view=outline(&from=\d+&last=[0-9a-f]{16})?$")
LISTING = re.compile(r"/v1/approvals\?args=0$")
CHANGES = re.compile(r"/v1/ui/changes\?")
ONE = re.compile(r"/v1/approvals/[0-9a-f]{32}$")


def deny(server: EventLogServer, approval: str) -> None:
    """Deny ``approval`` through the API (a test's leftover card)."""
    httpx.post(f"{server.url}/v1/approvals/{approval}", json={"decision": "deny"}, headers=AUTH)


def until(page: Any, done: Any) -> None:
    """Let Playwright run (its route handlers run while the test calls it) until ``done()``."""
    deadline = time.monotonic() + 10
    while not done():
        assert time.monotonic() < deadline, "never happened"
        page.wait_for_timeout(20)


class HeldPolls:
    """The live view's looks for changes of the page ``page`` opens next, held by Playwright's
    router after its first (the page is drawn, then told of nothing) until :meth:`release`.

    ``page`` is first taken to a blank document: the runs page a log-in lands on has a live
    view of its own, whose next look would be the one held (and :meth:`waiting` return before
    the page tested waits on anything)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.held: list[Any] = []
        self.released = False
        page.goto("about:blank")
        page.route(CHANGES, self._route)

    def _route(self, route: Any) -> None:
        if "since=-1&" in route.request.url or self.released:
            route.continue_()
        else:
            self.held.append(route)

    def waiting(self) -> None:
        """Return once the page waits on a held look."""
        until(self.page, lambda: self.held)

    def release(self) -> None:
        """Let the held look and those after it reach serve."""
        self.released = True
        for route in self.held:
            route.continue_()


def rendered(page: Any) -> None:
    """Give the page a moment to apply an answer it has fully read (nothing to await when it
    rightly does nothing with it)."""
    page.evaluate("() => new Promise((done) => setTimeout(done, 300))")
