"""The inbox under a flood of approvals asked by an agent holding the ingest token (what every
hook client and agent on the machine holds): the person still sees, tells apart and answers the
real card in time. Real serve, Debian's Chromium."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from otelhooks.testing import pipeline
from tests.web.conftest import AGENT, AUTH, log_in, serving_inbox

# how long the page may take to show a change: the person's clicks are timed by the page's own
# (paused) clock, never by this
WAIT_MS = 30_000
# how long serve may take to answer a request (httpx's default of 5 s ran out at a load of 30)
HTTP_S = 60

# a loaded 2-core machine takes seconds to render a page of 256 cards
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    # the cards these tests ask over HTTP have no asker waiting on them: with the default lease
    # (10 s) they are withdrawn while a loaded machine still renders the page, and a full inbox
    # had room again (a call meant to be refused got 201)
    with serving_inbox(monkeypatch, approval_lease_s=3600) as started:
        yield started


def _ask(server: EventLogServer, command: str, via: Any = httpx, **fields: Any) -> str:
    body = {"hook_id": "ask", "tool": "Bash", "timeout_s": 60, "default": "allow", **fields}
    created = via.post(
        f"{server.url}/v1/approvals",
        json={**body, "args": {"command": command}},
        headers=AGENT,
        timeout=HTTP_S,
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _state(server: EventLogServer, approval: str) -> str:
    got = httpx.get(f"{server.url}/v1/approvals/{approval}", headers=AUTH, timeout=HTTP_S).json()
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
        deny.wait_for(timeout=WAIT_MS)
        # the person has read the card; from here the page's time stands still, so the click
        # below comes "at once" after the new card however slow the machine
        page.clock.pause_at(datetime.now() + timedelta(seconds=2))
        flood = _ask(server, "ls")
        page.locator(f"article[data-approval='{flood}']").wait_for(timeout=WAIT_MS)
        deny.click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=WAIT_MS)
    finally:
        page.context.close()
    assert _state(server, real) == "denied"


def _leave(server: EventLogServer, approval: str) -> None:
    """Take ``approval`` off the inbox now: what its deadline passing does, without waiting."""
    httpx.post(
        f"{server.url}/v1/approvals/{approval}",
        json={"decision": "deny"},
        headers=AUTH,
        timeout=HTTP_S,
    )


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
        deny.wait_for(timeout=WAIT_MS)
        page.clock.pause_at(datetime.now() + timedelta(seconds=2))
        _leave(server, first)  # the cards move up at once: the first move in a while
        page.locator(f"article[data-approval='{first}']").wait_for(state="detached")
        page.clock.fast_forward(1500)  # the person has found the real card again
        _leave(server, second)  # leaves a blank: the cards moved less than 5 s ago
        gone = page.locator(f"article[data-approval='{second}'] button.deny")
        gone.wait_for(state="detached")
        deny.click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=WAIT_MS)
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
    with httpx.Client(timeout=HTTP_S) as agent:
        flood = [_ask(server, "rm -rf ~", agent, timeout_s=3600, **same) for _ in range(100)]
    real = _ask(server, "rm -rf ~", **same)
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        card = page.locator(f"article[data-approval='{real}']")
        card.wait_for(timeout=WAIT_MS)
        assert card.locator("th", has_text="asked").count() == 1  # when serve took it
        page.locator("#deny-all").click()
        page.locator(f"tr.answered[data-approval='{real}']").wait_for(timeout=WAIT_MS)
        page.locator("#none-pending").wait_for(timeout=WAIT_MS)
    finally:
        page.context.close()
    assert _state(server, real) == "denied"
    assert {_state(server, i) for i in flood[::10]} == {"denied"}


def _waiting(admin: httpx.Client, tool: str) -> list[str]:
    return [a["id"] for a in admin.get("/v1/approvals").json()["pending"] if a["tool"] == tool]


@pytest.mark.parametrize("awaited", [False, True], ids=["sync", "async"])
def test_a_call_asked_from_another_process_waits_when_serve_has_no_room_for_its_long_poll(
    server: EventLogServer, awaited: bool
) -> None:
    # serve holds at most 256 long-polls; an agent holding the ingest token took them all on an
    # approval of its own. Before, the asker's first poll got 503 and its call was blocked at
    # once, while the card stayed in the inbox: the person approved it a second later, the
    # answer was recorded `allowed`, and the tool never ran
    own = _ask(server, "sleep 1", timeout_s=600)
    host, port = server.url.removeprefix("http://").split(":")
    poll = (
        f"GET /v1/approvals/{own}?wait=60 HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: {AGENT['Authorization']}\r\n\r\n"
    ).encode()
    polls = [socket.create_connection((host, int(port))) for _ in range(256)]
    for held in polls:
        held.sendall(poll)
    hook = {
        "id": "ask-from-afar",
        "type": "before_tool_call",
        "matcher": "rm",
        "approval": {"timeout": 30, "default": "deny", "url": server.url},
    }
    ran: list[dict[str, Any]] = []

    def agent(pipe: Any) -> None:
        with pipe.oh.operation("careful-bot") as op, op.step() as step:
            step.run_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw) or "ok")

    async def awaiting_agent(pipe: Any) -> None:
        async with pipe.oh.operation("careful-bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    try:
        deadline = time.monotonic() + 20
        probe = f"{server.url}/v1/approvals/{own}?wait=0.01"
        while httpx.get(probe, headers=AGENT, timeout=HTTP_S).status_code != 503:
            assert time.monotonic() < deadline, "the 256 long-polls never all waited"
            time.sleep(0.1)
        with (
            pipeline(hooks=[hook]) as pipe,
            httpx.Client(base_url=server.url, headers=AUTH) as admin,
        ):
            worker = (
                threading.Thread(target=asyncio.run, args=(awaiting_agent(pipe),))
                if awaited
                else threading.Thread(target=agent, args=(pipe,))
            )
            worker.start()
            while not (asked := _waiting(admin, "fs/rm")):
                assert time.monotonic() < deadline, "the call was never asked"
                time.sleep(0.05)
            time.sleep(1.2)  # the person reads the card; the asker's first poll was refused
            admin.post(f"/v1/approvals/{asked[0]}", json={"decision": "allow"})
            worker.join(60)
            assert not worker.is_alive(), "the asker never got the answer"
    finally:
        httpx.post(
            f"{server.url}/v1/approvals/{own}",
            json={"decision": "deny"},
            headers=AUTH,
            timeout=HTTP_S,
        )
        for held in polls:
            held.close()
    assert ran == [{"path": "/data"}]


def test_a_look_at_an_approval_past_its_deadline_gets_its_default(server: EventLogServer) -> None:
    # what an asker refused a long-poll does: it looks; before, the approval stayed `pending`
    # past its deadline until something else applied the default
    late = _ask(server, "rm -rf ~", timeout_s=0.2, default="deny")
    time.sleep(0.4)
    got = httpx.get(f"{server.url}/v1/approvals/{late}", headers=AGENT, timeout=HTTP_S).json()
    assert (got["state"], got["answered_by"]) == ("denied", "timeout")


def test_a_person_s_answer_outlasts_hundreds_of_defaults_applied_after_it(
    server: EventLogServer,
) -> None:
    # an asker refused a long-poll looks once a second; in between, an agent holding the ingest
    # token can have hundreds of its own cards time out (280 in 0.7 s here). Before, the inbox
    # kept the last 200 answers whatever they were: the look got 404 and the call the person
    # approved was blocked
    real = _ask(server, "rm -rf ~")
    httpx.post(
        f"{server.url}/v1/approvals/{real}",
        json={"decision": "allow"},
        headers=AUTH,
        timeout=HTTP_S,
    )
    with httpx.Client(base_url=server.url, headers=AGENT, timeout=HTTP_S) as agent:
        body = {"tool": "Bash", "timeout_s": 0.001, "default": "deny", "args": {}}
        for _ in range(250):  # each one asked applies the default of the one before
            agent.post("/v1/approvals", json=body)
        got = agent.get(f"/v1/approvals/{real}")
    assert got.status_code == 200, got.text
    assert got.json()["state"] == "allowed"


def test_the_page_says_how_many_calls_a_full_inbox_refused_and_since_when(
    browser: Any, server: EventLogServer
) -> None:
    # anything holding the ingest token can fill the 256 waiting places; every call asked after
    # that is refused and blocked, which only its asker's log said: the person saw a page of
    # cards and nothing telling them to act
    with httpx.Client(base_url=server.url, headers=AGENT, timeout=HTTP_S) as agent:
        body = {"tool": "Bash", "timeout_s": 600, "default": "deny", "args": {"command": "ls"}}
        for _ in range(256):
            assert agent.post("/v1/approvals", json=body).status_code == 201
    before = httpx.get(f"{server.url}/v1/approvals", headers=AUTH, timeout=HTTP_S).json()["refused"]
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        page.locator("article.approval-card").nth(255).wait_for(timeout=WAIT_MS)
        if not before["count"]:
            assert page.locator("#refused").is_hidden()
        for _ in range(3):  # the real calls, asked once the inbox is full
            refused = httpx.post(
                f"{server.url}/v1/approvals", json=body, headers=AGENT, timeout=HTTP_S
            )
            assert refused.status_code == 503
        note = page.locator("#refused")
        expected = f"{before['count'] + 3} calls refused since "
        page.wait_for_function(
            "t => document.getElementById('refused').textContent.startsWith(t)",
            arg=expected,
            timeout=WAIT_MS,
        )
        assert note.is_visible()
        assert "the inbox was full" in note.text_content()
    finally:
        page.context.close()
    after = httpx.get(f"{server.url}/v1/approvals", headers=AUTH, timeout=HTTP_S).json()["refused"]
    assert after["count"] == before["count"] + 3
    assert after["since_ms"] <= after["last_ms"] <= time.time() * 1000
    assert after["since_ms"] == (before["since_ms"] or after["since_ms"])
