"""The pages recover, and say so meanwhile, when serve never answers one of their requests or fails
to answer a refresh: Debian's Chromium through Playwright against a real serve, Playwright's
router holding one of serve's real answers for ever (a silent proxy, a hung serve) or failing it,
and the page's own clock (Playwright's) run past the request's deadline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from tests.web._otlp import agent_run, ids, post, span
from tests.web._races import CHANGES, LISTING, ONE, OUTLINE, deny, until
from tests.web.conftest import AUTH, TOKEN, ask, clearing_inbox, click_answer, log_in

pytestmark = pytest.mark.timeout(90)

DEADLINE_MS = 20_000  # common.js: DEADLINE_S
POLL_DEADLINE_MS = 35_000  # common.js: POLL_S + POLL_GRACE_S


@pytest.fixture(scope="module")
def served() -> Iterator[EventLogServer]:
    # the cards here have no asker waiting: a lease longer than the module keeps them pending
    with clearing_inbox(serve(token=TOKEN, approval_lease_s=600)) as started:
        yield started


class Hang:
    """The first request of ``page`` matching ``pattern`` (and ``wanted``) gets no answer, ever:
    Playwright's router keeps it; every other one reaches serve."""

    def __init__(self, page: Any, pattern: Any, wanted: Any = lambda request: True) -> None:
        self.held: list[Any] = []
        self.wanted = wanted
        page.route(pattern, self._route)

    def _route(self, route: Any) -> None:
        if not self.held and self.wanted(route.request):
            self.held.append(route)  # never answered
        else:
            route.continue_()


def test_a_look_at_the_inbox_that_never_answers_is_said_and_asked_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the look at the list the live view asked for once a call was held never ended (a
    # fetch has no deadline): the card was never drawn, no later change was looked at, nothing
    # on the page said so, and the call got its default (allow here) unseen.
    page = log_in(browser, served.url)
    held = ""
    try:
        page.clock.install()
        page.goto(f"{served.url}/approvals")
        page.locator("#none-pending").wait_for(timeout=10_000)
        page.locator("#live.on").wait_for(timeout=10_000)
        hang = Hang(page, LISTING, lambda request: request.method == "GET")
        held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        until(page, lambda: hang.held)
        page.clock.fast_forward(DEADLINE_MS + 1000)
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert alert.inner_text() == "The inbox could not be read: serve did not answer in 20 s"
        card = page.locator(f"article[data-approval='{held}']")
        card.locator("button.deny").wait_for(timeout=10_000)  # asked again 2 s later
        alert.wait_for(state="detached", timeout=10_000)
        click_answer(card.locator("button.deny"))
        page.locator(f"tr.answered.denied[data-approval='{held}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
        if held:
            deny(served, held)


def test_a_look_for_changes_that_never_answers_is_said_and_asked_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the live view's long-poll through a proxy that held it (or a hung serve) waited
    # for ever: the badge said "live", nothing said the page was cut off, and a call held
    # meanwhile was never drawn.
    page = log_in(browser, served.url)
    held = ""
    try:
        # the runs page the log-in lands on has a long-poll of its own: its next one, asked
        # after the router below was set, was the one held, not the inbox's (a red CI run)
        page.goto("about:blank")
        page.clock.install()
        hang = Hang(page, CHANGES, lambda request: "since=-1&" not in request.url)
        page.goto(f"{served.url}/approvals")
        page.locator("#none-pending").wait_for(timeout=10_000)
        until(page, lambda: hang.held)
        held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        page.clock.fast_forward(POLL_DEADLINE_MS + 1000)
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert alert.inner_text() == (
            "serve cannot be reached (serve did not answer in 35 s): "
            "this page shows what it last read; trying again"
        )
        card = page.locator(f"article[data-approval='{held}']")
        card.locator("button.deny").wait_for(timeout=10_000)
        alert.wait_for(state="detached", timeout=10_000)
        assert page.inner_text("#live") == "live"
    finally:
        page.context.close()
        if held:
            deny(served, held)


def test_a_first_read_of_the_session_that_never_answers_is_asked_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the page's first read (its session) failing left the page with no live view at
    # all: "This page cannot read serve", and nothing more, whatever serve did next.
    held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
    page = log_in(browser, served.url)
    try:
        page.clock.install()
        hang = Hang(page, "**/v1/ui/session")
        page.goto(f"{served.url}/approvals")
        until(page, lambda: hang.held)
        page.clock.fast_forward(DEADLINE_MS + 1000)
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert "This page cannot read serve: serve did not answer in 20 s" in alert.inner_text()
        page.locator(f"article[data-approval='{held}'] button.deny").wait_for(timeout=10_000)
        alert.wait_for(state="detached", timeout=10_000)
    finally:
        page.context.close()
        deny(served, held)


def test_a_deny_all_whose_answer_never_comes_says_so_not_that_it_failed(
    browser: Any, served: EventLogServer
) -> None:
    # Before, a deny serve took whose reply never reached the page (held by a proxy) was
    # counted "could not be denied", while the call was denied: the note said the opposite of
    # what happened, and asked the person to deny it again.
    approval = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
    page = log_in(browser, served.url)
    taken: list[Any] = []

    def take_and_hold(route: Any) -> None:
        if route.request.method == "POST" and not taken:
            taken.append(route.fetch())  # serve takes the deny; its reply never reaches the page
        else:
            route.continue_()

    try:
        page.clock.install()
        page.route(ONE, take_and_hold)
        page.goto(f"{served.url}/approvals")
        page.locator(f"article[data-approval='{approval}']").wait_for(timeout=10_000)
        page.click("#deny-all")
        until(page, lambda: taken)
        assert taken[0].status == 200, taken[0].text()
        page.clock.fast_forward(DEADLINE_MS + 1000)
        note = page.locator("#all-note.error")
        note.wait_for(timeout=10_000)
        assert note.inner_text() == "1 got no reply from serve in time: deny the cards that stay"
        page.locator(f"tr.answered.denied[data-approval='{approval}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
        deny(served, approval)


def test_an_answer_that_never_reaches_serve_is_said_perhaps_not_given_and_offered_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, a Deny held for ever on its way (a proxy) left the card's buttons disabled for
    # good and nothing said: the person could answer the call no more, and it got its default
    # (allow) unseen.
    approval = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
    page = log_in(browser, served.url)
    try:
        page.clock.install()
        hang = Hang(page, ONE, lambda request: request.method == "POST")
        page.goto(f"{served.url}/approvals")
        card = page.locator(f"article[data-approval='{approval}']")
        click_answer(card.locator("button.deny"))
        until(page, lambda: hang.held)
        page.clock.fast_forward(DEADLINE_MS + 1000)
        said = card.locator("p.error")
        said.wait_for(timeout=10_000)
        assert said.inner_text() == (
            "Perhaps not answered (serve did not answer in 20 s): if this card stays, answer again"
        )
        click_answer(card.locator("button.deny"))
        page.locator(f"tr.answered.denied[data-approval='{approval}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
        deny(served, approval)


def test_an_open_trace_that_could_not_be_read_again_is_read_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the open trace's refresh failing (a proxy's hiccup) counted the change as seen:
    # the span that arrived (a tool call, a denial) stayed unshown until the run changed again.
    run = agent_run("epsilon-bot")
    trace_id, root = run[0]["traceId"], run[0]["spanId"]
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, run)
    page = log_in(browser, served.url)
    failed: list[Any] = []

    def fail_once(route: Any) -> None:
        if not failed:
            failed.append(route.request)
            route.abort()
        else:
            route.continue_()

    try:
        page.locator("#ops-body tr.op", has_text="epsilon-bot").click(timeout=10_000)
        page.locator("#trace-title", has_text=trace_id).wait_for(timeout=10_000)
        page.locator("#live.on").wait_for()
        page.route(OUTLINE, fail_once)
        late = span(trace_id, ids()[1], "execute_tool late-tool", parent=root)
        with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
            post(api, [late])
        page.locator(".wf-row .span-name", has_text="late-tool").wait_for(timeout=10_000)
        assert failed, "no refresh of the trace failed: nothing is tested"
        assert "epsilon-bot" in page.inner_text("#trace-title")
    finally:
        page.context.close()


def test_the_runs_page_s_count_of_held_calls_that_failed_to_load_is_read_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the runs page's count of held calls that failed to load once (a proxy's hiccup)
    # counted the change as seen: the menu said nothing was waiting while a call waited for
    # its default (allow here), until something else changed in the inbox.
    page = log_in(browser, served.url)
    failed: list[Any] = []
    held = ""

    def fail_once(route: Any) -> None:
        if not failed:
            failed.append(route.request)
            route.abort()
        else:
            route.continue_()

    try:
        page.locator("#live.on").wait_for(timeout=10_000)
        assert page.inner_text("#pending-count") == ""
        page.route(LISTING, fail_once)
        held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        page.locator("#pending-count", has_text="1").wait_for(timeout=10_000)
        assert failed, "no look at the list failed: nothing is tested"
    finally:
        page.context.close()
        if held:
            deny(served, held)


def test_a_run_whose_trace_cannot_be_read_shows_none_of_the_run_open_before(
    browser: Any, served: EventLogServer
) -> None:
    # Before, a click on run B whose trace could not be read left run A's spans (a denial
    # among them) drawn under "trace B: ...", A still selected in the list.
    first, second = agent_run("zeta-bot", denied_tool="rm"), agent_run("theta-bot")
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, first)
        post(api, second)
    wanted = second[0]["traceId"]
    page = log_in(browser, served.url)

    def refuse_second(route: Any) -> None:
        if wanted in route.request.url:
            route.fulfill(status=503, json={"error": "unavailable", "message": "store down"})
        else:
            route.continue_()

    try:
        page.locator("#ops-body tr.op", has_text="zeta-bot").click(timeout=10_000)
        page.locator(".wf-row .dec.denied").wait_for(timeout=10_000)
        page.route(OUTLINE, refuse_second)
        page.locator("#ops-body tr.op", has_text="theta-bot").click()
        title = page.locator("#trace-title", has_text=f"trace {wanted}: store down")
        title.wait_for(timeout=10_000)
        assert page.locator(".wf-row").count() == 0
        assert page.inner_text("#trace-meta") == ""
        assert page.locator("#ops-body tr.selected").get_attribute("data-trace") == wanted
    finally:
        page.context.close()
