"""What an answer to the inbox can and cannot change: serve's real routes, and its page in
Debian's Chromium."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from otelhooks._actions._approval_inbox import ApprovalInbox
from tests.web.conftest import AUTH, click_answer, log_in

pytestmark = pytest.mark.timeout(60)


def test_an_answer_after_the_deadline_loses_to_the_default(server: EventLogServer) -> None:
    with httpx.Client(base_url=server.url, headers=AUTH) as api:
        body = {"hook_id": "ask", "tool": "Bash", "timeout_s": 0.3, "default": "deny"}
        item = api.post("/v1/approvals", json={**body, "args": {"command": "rm -rf ~"}}).json()
        time.sleep(0.6)  # nobody answered in time, and the asker is between two long-polls
        late = api.post(f"/v1/approvals/{item['id']}", json={"decision": "allow"})
        got = api.get(f"/v1/approvals/{item['id']}").json()
    assert late.status_code == 409, late.json()
    assert late.json()["message"] == "answered already: deny by timeout"  # what the page says
    assert (got["state"], got["answered_by"]) == ("denied", "timeout")


def test_a_click_as_the_cards_move_answers_nothing(browser: Any, server: EventLogServer) -> None:
    def ask(command: str) -> str:
        body = {"tool": "Bash", "timeout_s": 60, "default": "deny", "args": {"command": command}}
        created = httpx.post(f"{server.url}/v1/approvals", json=body, headers=AUTH).json()
        return str(created["id"])

    oldest, benign, dangerous = ask("sleep 1"), ask("ls"), ask("rm -rf ~")
    page = log_in(browser, server.url)
    try:
        page.clock.install()
        page.goto(f"{server.url}/approvals")
        aimed = page.locator(f"article[data-approval='{benign}'] button.approve")
        box = aimed.bounding_box(timeout=5000)
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)  # the person is about to approve `ls`
        # the page's time stands still from here: the click below comes "at once" however slow
        page.clock.pause_at(datetime.now() + timedelta(seconds=1))
        # meanwhile the oldest call, on top, is answered (or its time is up): the cards move up
        httpx.post(f"{server.url}/v1/approvals/{oldest}", json={"decision": "deny"}, headers=AUTH)
        page.locator(f"article[data-approval='{oldest}']").wait_for(state="detached")
        page.mouse.click(x, y)  # now over the Approve of `rm -rf ~`
        moved = page.locator(f"article[data-approval='{dangerous}'] p.error")
        moved.wait_for(timeout=5000)
        assert "nothing was answered" in moved.inner_text()
        states = [_state(server, i) for i in (benign, dangerous)]
        assert states == ["pending", "pending"]
        page.clock.fast_forward(2000)
        page.locator(f"article[data-approval='{dangerous}'] button.deny").click()
        page.locator(f"tr.answered[data-approval='{dangerous}']").wait_for(timeout=5000)
    finally:
        page.context.close()
        httpx.post(f"{server.url}/v1/approvals/{benign}", json={"decision": "deny"}, headers=AUTH)
    assert _state(server, dangerous) == "denied"


def _state(server: EventLogServer, approval: str) -> str:
    got = httpx.get(f"{server.url}/v1/approvals/{approval}", headers=AUTH).json()
    return str(got["state"])


def test_a_wait_that_is_not_a_number_is_answered_at_once(server: EventLogServer) -> None:
    # float() reads "nan" and "inf": a NaN wait failed the asker's poll with a 500 (and a
    # traceback in serve's log), and held the page's long-poll for ever
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=10) as api:
        body = {"tool": "Bash", "timeout_s": 30, "default": "deny", "args": {}}
        item = api.post("/v1/approvals", json=body).json()
        polled = api.get(f"/v1/approvals/{item['id']}", params={"wait": "nan"})
        now = api.get("/v1/ui/changes", params={"timeout": "0"}).json()
        same = {"since": now["version"], "approvals": now["approvals"], "timeout": "nan"}
        changes = api.get("/v1/ui/changes", params=same)
        api.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})
    assert (polled.status_code, polled.json()["state"]) == (200, "pending")
    assert changes.status_code == 400


def test_an_answer_given_is_not_called_not_given_when_the_list_cannot_be_read(
    browser: Any, server: EventLogServer
) -> None:
    body = {"tool": "Bash", "timeout_s": 60, "default": "allow", "args": {"command": "rm -rf ~"}}
    item = httpx.post(f"{server.url}/v1/approvals", json=body, headers=AUTH).json()
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        card = page.locator(f"article[data-approval='{item['id']}']")
        card.wait_for(timeout=5000)
        # from now on the list does not load (a proxy's hiccup, a store's 503): answers still do
        page.route("**/v1/approvals?args=0", lambda route: route.abort())
        click_answer(card.locator("button.deny"))
        card.locator("p.error").wait_for(timeout=5000)
        said = card.locator("p.error").inner_text()
        assert _state(server, item["id"]) == "denied"
        assert "Not answered" not in said, said
        assert card.locator("button.approve").is_disabled()  # no second answer offered
    finally:
        page.context.close()


def test_a_default_applied_while_another_call_is_asked_is_recorded() -> None:
    # the listeners write the event-log record and the span of every answer; a default applied
    # as another call was asked (the one moment a quiet inbox looks at its deadlines) told none
    inbox = ApprovalInbox()
    told: list[str] = []
    inbox.add_listener(lambda item: told.append(item.id))
    ask = {"hook_id": "h", "event": "before_tool_call", "tool": "Bash", "default": "deny"}
    due = inbox.request(**ask, timeout_s=0.001)
    time.sleep(0.01)
    inbox.request(**ask, timeout_s=60)
    assert (due.state, due.answered_by) == ("denied", "timeout")
    assert told == [due.id]


def test_a_default_stays_readable_after_a_person_answered_hundreds_of_cards() -> None:
    # a person who clicks Deny all on 256 cards gives 256 answers at once; a default applied
    # after them was dropped as soon as it was kept (a default went before any person's answer),
    # so its asker, looking once a second, got 404 and blocked a call whose default was allow
    inbox = ApprovalInbox()
    ask = {"hook_id": "h", "event": "before_tool_call", "tool": "Bash"}
    for _ in range(256):
        card = inbox.request(**ask, timeout_s=60, default="deny")
        inbox.answer(card.id, "deny", by="browser")
    due = inbox.request(**ask, timeout_s=0.001, default="allow")
    time.sleep(0.01)
    inbox.pending()  # a look at the list applies the default
    got = inbox.get(due.id)
    assert got is not None
    assert (got.state, got.answered_by) == ("allowed", "timeout")
    assert len(inbox.answered()) == inbox.keep_answered + 1  # the last 200 of people, and it
