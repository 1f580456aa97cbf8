"""The inbox under a flood of approvals asked by an agent holding the ingest token (what every
hook client and agent on the machine holds): the person still sees, tells apart and answers the
real card in time. Real serve, Debian's Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from tests.web.conftest import AUTH, TOKEN, log_in

pytestmark = pytest.mark.timeout(60)

AGENT = {"Authorization": "Bearer agent-ingest-t0ken"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", AGENT["Authorization"].removeprefix("Bearer "))
    started = serve(token=TOKEN)
    try:
        yield started
    finally:
        # the inbox is the process's (it outlives this serve): leave nothing waiting in it
        with httpx.Client(base_url=started.url, headers=AUTH) as admin:
            for item in admin.get("/v1/approvals").json()["pending"]:
                admin.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})
        started.stop()


def _ask(server: EventLogServer, command: str, via: Any = httpx, **fields: Any) -> str:
    body = {"hook_id": "ask", "tool": "Bash", "timeout_s": 60, "default": "allow", **fields}
    created = via.post(
        f"{server.url}/v1/approvals", json={**body, "args": {"command": command}}, headers=AGENT
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _state(server: EventLogServer, approval: str) -> str:
    got = httpx.get(f"{server.url}/v1/approvals/{approval}", headers=AUTH).json()
    return str(got["state"])


def test_a_new_card_below_does_not_refuse_a_click_on_the_card_above(
    browser: Any, server: EventLogServer
) -> None:
    # before, any new card refused every click on every card for a second: an agent asking for
    # one every half second kept the person from answering anything, and its `rm -rf ~` got its
    # default (allow) after 20 refused clicks on Deny
    real = _ask(server, "rm -rf ~")
    page = log_in(browser, server.url)
    try:
        page.clock.install()
        page.goto(f"{server.url}/approvals")
        deny = page.locator(f"article[data-approval='{real}'] button.deny")
        deny.wait_for(timeout=5000)
        # the person has read the card; from here the page's time stands still, so the click
        # below comes "at once" after the new card however slow the machine
        page.clock.pause_at(datetime.now() + timedelta(seconds=2))
        flood = _ask(server, "ls")
        page.locator(f"article[data-approval='{flood}']").wait_for(timeout=5000)
        deny.click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=5000)
    finally:
        page.context.close()
    assert _state(server, real) == "denied"


def _leave(server: EventLogServer, approval: str) -> None:
    """Take ``approval`` off the inbox now: what its deadline passing does, without waiting."""
    httpx.post(f"{server.url}/v1/approvals/{approval}", json={"decision": "deny"}, headers=AUTH)


def test_cards_above_timed_to_leave_one_after_another_do_not_keep_moving_the_real_one(
    browser: Any, server: EventLogServer
) -> None:
    # cards asked before the real one are above it; their deadlines, chosen by the agent, can
    # pass one every half second (here they are answered instead: the page sees the same).
    # Before, each moved the real card up and refused the click on it for a second: 48 clicks
    # on Deny answered nothing and `rm -rf ~` got its default (allow)
    first, second = _ask(server, "ls"), _ask(server, "ls")
    real = _ask(server, "rm -rf ~")
    page = log_in(browser, server.url)
    try:
        page.clock.install()
        page.goto(f"{server.url}/approvals")
        deny = page.locator(f"article[data-approval='{real}'] button.deny")
        deny.wait_for(timeout=5000)
        page.clock.pause_at(datetime.now() + timedelta(seconds=2))
        _leave(server, first)  # the cards move up at once: the first move in a while
        page.locator(f"article[data-approval='{first}']").wait_for(state="detached")
        page.clock.fast_forward(1500)  # the person has found the real card again
        _leave(server, second)  # leaves a blank: the cards moved less than 5 s ago
        gone = page.locator(f"article[data-approval='{second}'] button.deny")
        gone.wait_for(state="detached", timeout=5000)
        deny.click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=5000)
    finally:
        page.context.close()
    assert _state(server, real) == "denied"


def test_one_click_denies_every_card_however_many_look_like_the_real_one(
    browser: Any, server: EventLogServer
) -> None:
    # 100 cards just like the real one (same hook, tool, arguments and session) asked before it
    # (the inbox takes 256): before, a person denying them from the top, a click every 0.4 s,
    # had not reached the real one of 40 when its 30 s were up: `rm -rf ~` got its default (allow)
    same = {"hook_id": "ask-before-shell", "session": "7f3c-the-person-s-session"}
    with httpx.Client() as agent:
        flood = [_ask(server, "rm -rf ~", agent, timeout_s=3600, **same) for _ in range(100)]
    real = _ask(server, "rm -rf ~", **same)
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        page.locator(f"article[data-approval='{real}']").wait_for(timeout=10_000)
        page.locator("#deny-all").click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=10_000)
        page.locator("#none-pending").wait_for(timeout=10_000)
    finally:
        page.context.close()
    assert _state(server, real) == "denied"
    assert {_state(server, i) for i in flood[::10]} == {"denied"}
