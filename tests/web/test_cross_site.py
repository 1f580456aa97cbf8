"""No other site's page reaches serve's JSON routes with the person's session cookie.

``SameSite=Strict`` does not cover a page on another 127.0.0.1 port (the app an agent built,
which the person previews): the browser takes it for the same site and sends the cookie with
its ``<img>``, ``<script src>``, ``fetch(..., {mode: "no-cors"})`` and form requests. Before,
such a ``GET /v1/approvals/{id}?asker=1`` withdrew a card (denied by ``asker``: the call the
person was about to approve was blocked), a look every few seconds kept a card nobody waits for
in the inbox, and every JSON route answered (the browser only hid the answer from the page).
Real serve, a real neighbour server, Debian's Chromium; what serve answered is read from the
browser's own network events (:class:`~tests.web.conftest.Seen`): the page itself may not see
it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web.conftest import (
    AGENT,
    AUTH,
    TOKEN,
    Seen,
    ask,
    card,
    log_in,
    other_port_app,
    serving_inbox,
)

pytestmark = pytest.mark.timeout(90)

TRACE = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    with serving_inbox(monkeypatch) as started:
        yield started


@pytest.fixture
def short_lease_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    """A serve whose cards lapse after 3 s (its documented setting; 10 s by default)."""
    monkeypatch.setenv("OTELHOOKS_APPROVAL_LEASE", "3")
    with serving_inbox(monkeypatch) as started:
        yield started


@pytest.fixture
def elsewhere() -> Iterator[str]:
    with other_port_app(b"<!doctype html><title>the app the agent built</title><p>app</p>") as url:
        yield url


def _ask(server: EventLogServer) -> str:
    """A card asked by a process with the agents' token, which then looks at it no more."""
    return str(ask(server, AGENT)["id"])


_IMG = "(u) => { const i = new Image(); i.src = u; document.body.appendChild(i); }"
_SCRIPT = (
    "(u) => { const s = document.createElement('script'); s.src = u; document.body.append(s); }"
)
_NO_CORS = "(u) => { fetch(u, {mode: 'no-cors', credentials: 'include'}).catch(() => 0); }"
# a "simple" cross-site POST: no preflight, the body a JSON object all the same
_FORM = """(u) => { const f = document.createElement('form'); f.method = 'POST'; f.action = u;
  f.enctype = 'text/plain'; const t = document.createElement('input');
  t.name = '{"decision": "deny", "x": "'; t.value = '"}'; f.append(t); document.body.append(f);
  f.submit(); }"""

# each JSON route a page elsewhere can make the browser ask with the cookie, and how it does
ROUTES = {
    "session-by-script": ("/v1/ui/session", _SCRIPT),
    "operations-by-script": ("/v1/ui/operations", _SCRIPT),
    "trace-by-img": (f"/v1/ui/traces/{TRACE}", _IMG),
    "changes-by-no-cors-fetch": ("/v1/ui/changes?since=-1&timeout=0", _NO_CORS),
    "approvals-by-script": ("/v1/approvals", _SCRIPT),
    "one-approval-by-img": ("/v1/approvals/{id}", _IMG),
    "answer-by-form": ("/v1/approvals/{id}", _FORM),
    "logout-by-form": ("/logout", _FORM),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_no_json_route_answers_a_page_on_another_port(
    browser: Any, server: EventLogServer, elsewhere: str, route: str
) -> None:
    approval = _ask(server)
    path, make = ROUTES[route]
    url = server.url + path.replace("{id}", approval)
    page = log_in(browser, server.url)
    try:
        other = page.context.new_page()
        seen = Seen(other)
        other.goto(elsewhere)
        other.evaluate(make, url)
        status, cookie = seen.answer(url)
        assert cookie, "the browser did not send the session cookie: nothing is tested"
        assert status == 403, f"{route}: serve answered {status}"
        assert seen.cors(url) == {}  # no Origin echoed: no other page's script reads it
        # the person's own page goes on as before: still logged in, the card still theirs
        page.goto(f"{server.url}/approvals")
        page.locator(f"article[data-approval='{approval}']").wait_for(timeout=10_000)
    finally:
        page.context.close()
    assert card(server, approval)["state"] == "pending"


# the asker's long-poll, made by the neighbour's page and cut short: with asker=1 its closing
# withdrew a card no asker held at that moment (between two of its long-polls, say)
_CUT_SHORT = """async (u) => { const stop = new AbortController();
  fetch(u, {mode: 'no-cors', credentials: 'include', signal: stop.signal}).catch(() => 0);
  await new Promise((done) => setTimeout(done, 800)); stop.abort(); }"""


def test_a_page_on_another_port_cannot_withdraw_a_card(
    browser: Any, server: EventLogServer, elsewhere: str
) -> None:
    approval = _ask(server)
    url = f"{server.url}/v1/approvals/{approval}?wait=30&asker=1"
    page = log_in(browser, server.url)
    try:
        other = page.context.new_page()
        seen = Seen(other)
        other.goto(elsewhere)
        other.evaluate(_CUT_SHORT, url)
        other.evaluate(_IMG, url)
        other.wait_for_timeout(300)
        other.goto(elsewhere)  # the image's long-poll closes with the page
        status, cookie = seen.answer(url)
        assert cookie, "the browser did not send the session cookie: nothing is tested"
        assert status == 403
    finally:
        page.context.close()
    left = card(server, approval)
    assert (left["state"], left["answered_by"]) == ("pending", ""), left


def test_a_page_on_another_port_cannot_keep_a_card_nobody_waits_for(
    browser: Any, short_lease_server: EventLogServer, elsewhere: str
) -> None:
    # its asker was killed after asking: the card goes when its lease lapses (3 s here),
    # however often a page elsewhere looks at it with the person's cookie
    server = short_lease_server
    approval = _ask(server)
    url = f"{server.url}/v1/approvals/{approval}"
    page = log_in(browser, server.url)
    try:
        other = page.context.new_page()
        other.goto(elsewhere)
        other.evaluate(
            "(u) => setInterval(() => { new Image().src = u + '?n=' + Date.now(); }, 400)", url
        )
        deadline = time.monotonic() + 20
        while card(server, approval)["state"] == "pending" and time.monotonic() < deadline:
            other.wait_for_timeout(250)
    finally:
        page.context.close()
    left = card(server, approval)
    assert (left["state"], left["answered_by"]) == ("denied", "asker"), left
    assert left["answer_reason"].startswith("no asker has waited on this card for 3 s"), left


def test_the_person_s_own_browser_is_never_a_card_s_asker(
    browser: Any, server: EventLogServer
) -> None:
    # the address of an asker's long-poll, opened by the person and left: a look, no asker
    approval = _ask(server)
    page = log_in(browser, server.url)
    try:
        url = f"{server.url}/v1/approvals/{approval}?wait=30&asker=1"
        page.evaluate(_CUT_SHORT, url)
        page.wait_for_timeout(300)
    finally:
        page.context.close()
    left = card(server, approval)
    assert (left["state"], left["answered_by"]) == ("pending", ""), left


def test_a_cookie_request_that_names_no_page_of_serve_is_refused(server: EventLogServer) -> None:
    """Browsers without ``Sec-Fetch-Site`` (or on a host they do not trust over plain HTTP)
    name the page by ``Origin`` or ``Referer``; an ``<img referrerpolicy="no-referrer">`` of
    another page names none. Bearer clients (hooks, the CLIs, curl) send none of these."""
    with httpx.Client(base_url=server.url, timeout=10) as client:
        client.post("/login", data={"token": TOKEN}, headers={"origin": server.url})
        assert client.cookies.get("otelhooks_session")
        named = {
            "none": {},
            "same-site": {"sec-fetch-site": "same-site", "referer": f"{server.url}/approvals"},
            "cross-site": {"sec-fetch-site": "cross-site"},
            "other-port": {"referer": "http://127.0.0.1:9/"},
            "own-referer": {"referer": f"{server.url}/approvals"},
            "own-fetch": {"sec-fetch-site": "same-origin"},
            "typed": {"sec-fetch-site": "none"},
        }
        got = {n: client.get("/v1/ui/session", headers=h).status_code for n, h in named.items()}
    assert got == {
        "none": 403,
        "same-site": 403,
        "cross-site": 403,
        "other-port": 403,
        "own-referer": 200,
        "own-fetch": 200,
        "typed": 200,
    }
    bearer = {**AUTH, "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors"}
    assert httpx.get(f"{server.url}/v1/ui/session", headers=bearer).status_code == 200
    assert httpx.get(f"{server.url}/v1/approvals", headers=AUTH).status_code == 200
