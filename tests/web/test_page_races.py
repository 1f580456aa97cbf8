"""The pages show the answer to the last thing asked, and the inbox keeps showing held calls when
its answers come back out of order or not at all: Debian's Chromium through Playwright against a
real serve, Playwright's router holding (or failing) one of serve's real answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from tests.web._otlp import agent_run, ids, post, span
from tests.web._races import LISTING, ONE, OPERATIONS, OUTLINE, HeldPolls
from tests.web._races import deny as _deny
from tests.web._races import rendered as _rendered
from tests.web._races import until as _until
from tests.web.conftest import AUTH, TOKEN, ask, clearing_inbox, click_answer, log_in

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def served() -> Iterator[EventLogServer]:
    # the cards here have no asker waiting: a lease longer than the module keeps them pending
    # (the next serve sets its own)
    with clearing_inbox(serve(token=TOKEN, approval_lease_s=600)) as started:
        yield started


def test_the_inbox_list_carries_the_version_of_what_it_lists(served: EventLogServer) -> None:
    # Before, the list's version was read before the listing applied the defaults due: the list
    # that showed a default just applied carried the version from before it, older than its
    # contents, and the next read of the same inbox, nothing changed since, carried another.
    # First in the module: no page (a live view looks once a second) applies the default here.
    item = ask(served, args={"command": "ls"}, default="deny", timeout_s=1)
    time.sleep(item["time_left_s"] + 0.1)  # the deadline passes; nothing reads the inbox
    with httpx.Client(base_url=served.url, headers=AUTH) as admin:
        looked_ms = time.time_ns() // 1_000_000
        first = admin.get("/v1/approvals").json()
        again = admin.get("/v1/approvals").json()
    (got,) = [a for a in first["answered"] if a["id"] == item["id"]]
    assert (got["state"], got["answered_by"]) == ("denied", "timeout")
    assert got["answered_ms"] >= looked_ms, "the default was applied before: nothing is tested"
    assert first["version"] == again["version"]


def test_a_trace_answered_after_another_run_was_clicked_does_not_replace_it(
    browser: Any, served: EventLogServer
) -> None:
    # Before, run A's trace answering after run B was clicked replaced B's: the page showed B
    # selected in the list and A's spans, title and denial (a person reviewing a denial read
    # the wrong run).
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, agent_run("first-bot", denied_tool="rm"))
        post(api, agent_run("second-bot"))
    page = log_in(browser, served.url)
    held: list[Any] = []

    def hold_first(route: Any) -> None:
        if not held:
            held.append(route)  # answered below, once the second run is shown
        else:
            route.continue_()

    try:
        first = page.locator("#ops-body tr.op", has_text="first-bot")
        second = page.locator("#ops-body tr.op", has_text="second-bot")
        wanted = second.get_attribute("data-trace", timeout=10_000)
        assert wanted
        page.route(OUTLINE, hold_first)
        first.click()
        _until(page, lambda: held)
        second.click()
        page.locator("#trace-title", has_text=wanted).wait_for(timeout=10_000)
        with page.expect_request_finished(lambda r: r.url == held[0].request.url):
            held[0].continue_()
        _rendered(page)
        assert wanted in page.inner_text("#trace-title")
        assert page.locator(".wf-row .span-name", has_text="invoke_agent second-bot").count() == 1
        assert page.locator(".wf-row .span-name", has_text="first-bot").count() == 0
        assert page.locator(".wf-row .dec.denied").count() == 0  # first-bot's denial
        assert page.locator("#ops-body tr.selected").get_attribute("data-trace") == wanted
    finally:
        page.context.close()


def test_more_runs_clicked_as_the_filter_changes_adds_none_of_the_old_list(
    browser: Any, served: EventLogServer
) -> None:
    # Before, "More" clicked while the list of a new filter was on its way asked for that
    # filter's runs past the old list's last one, and being asked last it was the list kept:
    # 100 runs of another agent stayed shown under the filter, "3 of ... runs" above them.
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, [s for _ in range(101) for s in agent_run("alpha-bot")])
        post(api, [s for _ in range(3) for s in agent_run("beta-bot")])
    page = log_in(browser, served.url)
    held: list[Any] = []

    def hold_filtered(route: Any) -> None:
        if "agent=beta-bot" in route.request.url and not held:
            held.append(route)  # answered below, after "More" was clicked if it was there
        else:
            route.continue_()

    try:
        page.locator("#ops-more").wait_for(timeout=10_000)
        page.route(OPERATIONS, hold_filtered)
        page.select_option("#f-agent", "beta-bot")
        _until(page, lambda: held)
        more = page.locator("#ops-more")
        if more.is_visible():  # a person clicks it as it is there
            with page.expect_request_finished(lambda r: "before=" in r.url):
                more.click()
        with page.expect_request_finished(lambda r: r.url == held[0].request.url):
            held[0].continue_()
        page.locator("#ops-count", has_text="3 of").wait_for(timeout=10_000)
        _rendered(page)
        agents = page.locator("#ops-body tr.op .agent-name").all_inner_texts()
        assert agents == ["beta-bot"] * 3
    finally:
        page.context.close()


def test_an_older_list_answered_last_does_not_hide_a_call_just_held(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the list the page asked for after the person's Deny, answering after the list the
    # live view asked for once another call was held, took that call's card away ("No longer
    # waiting."), and with nothing else changing in the inbox nothing drew it again: the call
    # got its default (allow) unseen.
    answered = str(ask(served, args={"command": "ls"})["id"])
    page = log_in(browser, served.url)
    lists: list[tuple[Any, Any]] = []  # the first list asked for after the Deny, held
    new = ""

    def hold_one(route: Any) -> None:
        if route.request.method == "GET" and not lists:
            lists.append((route, route.fetch()))  # serve's answer now, given to the page below
        else:
            route.continue_()

    try:
        polls = HeldPolls(page)
        page.goto(f"{served.url}/approvals")
        deny = page.locator(f"article[data-approval='{answered}'] button.deny")
        deny.wait_for(timeout=10_000)
        polls.waiting()
        page.route(LISTING, hold_one)
        click_answer(deny)  # the answer's own look at the list is held
        _until(page, lambda: lists)
        new = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        polls.release()  # the live view sees the Deny and the new call: it asks again
        card = page.locator(f"article[data-approval='{new}']")
        card.locator("button.approve").wait_for(timeout=10_000)
        route, answer = lists[0]
        with page.expect_request_finished(lambda r: r == route.request):
            route.fulfill(response=answer)
        _rendered(page)
        assert card.get_attribute("class") == "approval-card"
        assert "No longer waiting" not in card.inner_text()
        click_answer(card.locator("button.deny"))
        page.locator(f"tr.answered[data-approval='{new}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
        if new:
            _deny(served, new)
    assert httpx.get(f"{served.url}/v1/approvals/{new}", headers=AUTH).json()["state"] == "denied"


def test_a_list_that_failed_to_load_is_read_again_and_shows_the_call_held_meanwhile(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the live view counted a change as seen before the page had shown it: the inbox's
    # list failing once (a proxy's hiccup, serve restarting) left the new card undrawn until
    # something else changed in the inbox, the badge back to "live".
    page = log_in(browser, served.url)
    failed: list[Any] = []
    held = ""

    def fail_once(route: Any) -> None:
        if route.request.method == "GET" and not failed:
            failed.append(route.request)
            route.abort()
        else:
            route.continue_()

    try:
        page.goto(f"{served.url}/approvals")
        page.locator("#none-pending").wait_for()
        page.locator("#live.on").wait_for()
        page.route(LISTING, fail_once)
        held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        card = page.locator(f"article[data-approval='{held}']")
        card.locator("button.deny").wait_for(timeout=10_000)
        assert failed, "no look at the list failed: nothing is tested"
        assert page.locator("#page-error").count() == 0  # the list was read again
    finally:
        page.context.close()
        if held:
            _deny(served, held)


def test_a_first_look_that_failed_leaves_the_countdown_running_and_says_so_until_read(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the page's first look at the list failing stopped the countdowns for good: a card
    # drawn later said "59 s left" until its default (allow here) was applied.
    held = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
    page = log_in(browser, served.url)
    refusing = [True]

    def refuse(route: Any) -> None:
        if route.request.method == "GET" and refusing[0]:
            route.fulfill(status=503, json={"error": "unavailable", "message": "store down"})
        else:
            route.continue_()

    try:
        page.route(LISTING, refuse)
        page.goto(f"{served.url}/approvals")
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert "The inbox could not be read: store down" in alert.inner_text()
        refusing[0] = False
        left = page.locator(f"article[data-approval='{held}'] .time-left")
        left.wait_for(timeout=10_000)
        shown = left.inner_text()
        left.filter(has_not_text=shown).wait_for(timeout=5000)  # the countdown runs
        alert.wait_for(state="detached", timeout=5000)  # said while it was true only
    finally:
        page.context.close()
        _deny(served, held)


def test_deny_all_says_which_calls_had_been_allowed_already(
    browser: Any, served: EventLogServer
) -> None:
    # Before, Deny all said nothing of a call allowed before its deny reached it (in another
    # tab, by its default): it read as every call denied, and that one ran.
    allowed = str(ask(served, args={"command": "rm -rf ~"})["id"])
    other = str(ask(served, args={"command": "ls"})["id"])
    page = log_in(browser, served.url)
    try:
        polls = HeldPolls(page)
        page.goto(f"{served.url}/approvals")
        for approval in (allowed, other):
            page.locator(f"article[data-approval='{approval}']").wait_for(timeout=10_000)
        polls.waiting()
        given = httpx.post(
            f"{served.url}/v1/approvals/{allowed}", json={"decision": "allow"}, headers=AUTH
        )
        assert given.status_code == 200, given.text  # another person, in another tab
        page.click("#deny-all")
        note = page.locator("#all-note.error")
        note.wait_for(timeout=10_000)
        assert note.inner_text() == "1 had been allowed already (see Answered): not denied"
        polls.release()
        page.locator(f"tr.answered.allowed[data-approval='{allowed}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
    got = httpx.get(f"{served.url}/v1/approvals/{other}", headers=AUTH).json()
    assert got["state"] == "denied"


def test_an_answer_in_a_second_tab_after_the_first_s_is_said_not_given_and_not_offered_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the second tab said "Not answered" on a card still drawn as waiting, Approve
    # offered again, until the live view happened to look again; the card then left, and
    # nothing on the page said the person's Approve had not been given.
    approval = str(ask(served, args={"command": "rm -rf ~"}, default="deny")["id"])
    first = log_in(browser, served.url)
    second = log_in(browser, served.url)
    try:
        polls = HeldPolls(second)  # this tab is not told of the first tab's answer
        second.goto(f"{served.url}/approvals")
        late = second.locator(f"article[data-approval='{approval}']")
        late.locator("button.approve").wait_for(timeout=10_000)
        polls.waiting()
        first.goto(f"{served.url}/approvals")
        click_answer(first.locator(f"article[data-approval='{approval}'] button.deny"))
        first.locator(f"tr.answered.denied[data-approval='{approval}']").wait_for(timeout=10_000)
        click_answer(late.locator("button.approve"))
        row = second.locator(f"tr.answered.denied[data-approval='{approval}']")
        row.wait_for(timeout=10_000)  # read again at once, the live view still held
        assert row.inner_text().split("\t")[2:5] == ["ask", "deny", "browser"]
        assert "your allow here came after this answer: not given" in row.inner_text()
        assert late.locator("button").count() == 0  # no answer offered again
    finally:
        first.context.close()
        second.context.close()
    got = httpx.get(f"{served.url}/v1/approvals/{approval}", headers=AUTH).json()
    assert (got["state"], got["answered_by"]) == ("denied", "browser")


def test_an_approve_after_the_default_applied_is_said_not_given(
    browser: Any, served: EventLogServer
) -> None:
    # The asker's deadline passed while the page was not yet told (its look for changes held):
    # before, the card said "Not answered" and offered Approve again as if the call still
    # waited, then left with nothing saying the Approve had not been given.
    approval = str(ask(served, args={"command": "rm -rf ~"}, default="deny", timeout_s=6)["id"])
    page = log_in(browser, served.url)
    try:
        polls = HeldPolls(page)
        page.goto(f"{served.url}/approvals")
        card = page.locator(f"article[data-approval='{approval}']")
        card.locator("button.approve").wait_for(timeout=10_000)
        polls.waiting()
        deadline = time.monotonic() + 20
        while (
            httpx.get(f"{served.url}/v1/approvals/{approval}?wait=1", headers=AUTH).json()["state"]
            == "pending"
        ):  # a look past the deadline applies the default
            assert time.monotonic() < deadline
        click_answer(card.locator("button.approve"))
        row = page.locator(f"tr.answered.denied[data-approval='{approval}']")
        row.wait_for(timeout=10_000)
        assert "timeout" in row.inner_text()
        assert "your allow here came after this answer: not given" in row.inner_text()
        assert card.locator("button").count() == 0
    finally:
        page.context.close()


def test_an_inbox_that_cannot_reach_serve_says_so_above_its_cards(
    browser: Any, served: EventLogServer
) -> None:
    # Before, serve stopped (a restart, a crash) left the cards drawn with their countdowns and
    # buttons, and only the small badge said "reconnecting…": the person waited on calls that
    # no longer waited, and saw none of those held since.
    other = serve(token=TOKEN, approval_lease_s=600)  # the process's inbox: ``served``'s too
    approval = str(ask(other, args={"command": "rm -rf ~"})["id"])
    page = log_in(browser, other.url)
    try:
        page.goto(f"{other.url}/approvals")
        page.locator(f"article[data-approval='{approval}']").wait_for(timeout=10_000)
        page.locator("#live.on").wait_for()
        other.stop()
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert "serve cannot be reached" in alert.inner_text()
        assert "this page shows what it last read" in alert.inner_text()
    finally:
        page.context.close()
        other.stop()
        _deny(served, approval)


def test_a_note_shown_above_the_cards_makes_a_click_on_them_answer_nothing(
    browser: Any, served: EventLogServer
) -> None:
    # Before, "The inbox could not be read" (or "serve cannot be reached") appearing above the
    # cards moved them down with no card counted as moved: a click aimed at one card's button
    # landed on what had moved under the pointer, and answered it.
    approval = str(ask(served, args={"command": "rm -rf ~"}, default="deny")["id"])
    other = ""
    page = log_in(browser, served.url)
    refusing = [False]

    def refuse(route: Any) -> None:
        if route.request.method == "GET" and refusing[0]:
            route.fulfill(status=503, json={"error": "unavailable", "message": "store down"})
        else:
            route.continue_()

    try:
        page.clock.install()
        page.route(LISTING, refuse)
        page.goto(f"{served.url}/approvals")
        approve = page.locator(f"article[data-approval='{approval}'] button.approve")
        approve.wait_for(timeout=10_000)
        page.locator("#live.on").wait_for()
        # the page's time stands still from here: the click below comes "at once" however slow
        page.clock.pause_at(datetime.now() + timedelta(seconds=5))
        refusing[0] = True
        other = str(ask(served, args={"command": "ls"})["id"])  # the page looks: refused
        page.locator("#page-error").wait_for(timeout=10_000)
        approve.click()
        said = page.locator(f"article[data-approval='{approval}'] p.error")
        said.wait_for(timeout=5000)
        assert "nothing was answered" in said.inner_text()
        got = httpx.get(f"{served.url}/v1/approvals/{approval}", headers=AUTH).json()
        assert got["state"] == "pending"
    finally:
        page.context.close()
        for left in (approval, other):
            if left:
                _deny(served, left)


def test_a_filtered_list_that_cannot_be_read_says_so_above_the_old_one(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the list of a new filter failing (a proxy's hiccup, a 503) left the old list shown
    # under the new filter, its count above it, and nothing said so.
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, agent_run("gamma-bot", denied_tool="rm"))
    page = log_in(browser, served.url)

    def refuse_denied(route: Any) -> None:
        if "decision=denied" in route.request.url:
            route.fulfill(status=503, json={"error": "unavailable", "message": "store down"})
        else:
            route.continue_()

    try:
        page.locator("#ops-body tr.op", has_text="gamma-bot").wait_for(timeout=10_000)
        page.route(OPERATIONS, refuse_denied)
        page.select_option("#f-decision", "denied")
        alert = page.locator("#page-error")
        alert.wait_for(timeout=10_000)
        assert alert.inner_text() == "The runs could not be read: store down"
        page.unroute(OPERATIONS)
        page.select_option("#f-decision", "")
        alert.wait_for(state="detached", timeout=10_000)  # said while it was true only
    finally:
        page.context.close()


def test_a_live_look_replaced_by_an_answer_s_look_that_failed_is_asked_again(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the live view's look at the list, asked once a call was held, was dropped when the
    # person's Deny (taken by serve just before) asked for the list after it; that newer look
    # failing, the live view still counted the change as seen: the new card was not drawn
    # until something else changed in the inbox while the call waited for its default (allow).
    answered = str(ask(served, args={"command": "ls"})["id"])
    page = log_in(browser, served.url)
    posts: list[tuple[Any, Any]] = []  # the Deny, taken by serve, its answer held
    lists: list[Any] = []  # the looks at the list: the live view's held, the Deny's failed
    new = ""

    def hold_answer(route: Any) -> None:
        if route.request.method == "POST" and not posts:
            posts.append((route, route.fetch()))  # serve's answer now, given to the page below
        else:
            route.continue_()

    def hold_then_fail(route: Any) -> None:
        if route.request.method != "GET" or len(lists) >= 2:
            route.continue_()
            return
        lists.append(route)
        if len(lists) == 2:
            route.abort()

    try:
        polls = HeldPolls(page)
        page.goto(f"{served.url}/approvals")
        deny = page.locator(f"article[data-approval='{answered}'] button.deny")
        deny.wait_for(timeout=10_000)
        polls.waiting()
        new = str(ask(served, args={"command": "rm -rf ~"}, default="allow")["id"])
        page.route(ONE, hold_answer)
        click_answer(deny)
        _until(page, lambda: posts)
        page.route(LISTING, hold_then_fail)
        polls.release()  # the live view sees the Deny and the new call: it looks, held
        _until(page, lambda: lists)
        route, answer = posts[0]
        route.fulfill(response=answer)  # the page hears its Deny was taken: it looks, refused
        _until(page, lambda: len(lists) == 2)
        lists[0].continue_()  # the live view's look answers last
        card = page.locator(f"article[data-approval='{new}']")
        card.locator("button.deny").wait_for(timeout=10_000)
        page.locator("#page-error").wait_for(state="detached", timeout=10_000)
        click_answer(card.locator("button.deny"))
        page.locator(f"tr.answered[data-approval='{new}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
        if new:
            _deny(served, new)
    assert httpx.get(f"{served.url}/v1/approvals/{new}", headers=AUTH).json()["state"] == "denied"


def test_the_open_trace_is_read_again_when_a_filter_s_list_took_the_live_one_s_place(
    browser: Any, served: EventLogServer
) -> None:
    # Before, the list the live view asked for once the open run's trace grew was dropped when
    # the person changed a filter meanwhile, and the open trace was not read again: the span
    # that arrived (a tool call, a denial) stayed unshown until the run changed again.
    run = agent_run("delta-bot")
    trace_id, root = run[0]["traceId"], run[0]["spanId"]
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
        post(api, run)
    page = log_in(browser, served.url)
    held: list[Any] = []

    def hold_first(route: Any) -> None:
        if not held:
            held.append(route)  # the live view's list: answered below, after the filter's
        else:
            route.continue_()

    try:
        page.locator("#ops-body tr.op", has_text="delta-bot").click(timeout=10_000)
        page.locator("#trace-title", has_text=trace_id).wait_for(timeout=10_000)
        page.locator("#live.on").wait_for()
        page.route(OPERATIONS, hold_first)
        late = span(trace_id, ids()[1], "execute_tool late-tool", parent=root)
        with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as api:
            post(api, [late])
        _until(page, lambda: held)
        with page.expect_request_finished(lambda r: "agent=delta-bot" in r.url):
            page.select_option("#f-agent", "delta-bot")
        with page.expect_request_finished(lambda r: r == held[0].request):
            held[0].continue_()
        page.locator(".wf-row .span-name", has_text="late-tool").wait_for(timeout=10_000)
    finally:
        page.context.close()
