"""The approvals inbox stays its person's whatever the agent's neighbourhood does.

A hostile agent runs programs on the person's machine: a web server on another 127.0.0.1 port
(the app it builds, which the person previews), scripts that call serve without a token. None of
that may keep the person from seeing and answering a held call: the agent would then get the
hook's default (``allow`` for some) without anybody having approved it. Real serve, real
neighbour server, Debian's Chromium.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web.conftest import AUTH, TOKEN, ask, card, deny_in_inbox, log_in
from tests.web.conftest import other_port_app as _app

pytestmark = pytest.mark.timeout(60)


def _ask(server: EventLogServer) -> dict[str, Any]:
    return ask(server, args={"command": "rm -rf ~"})


@pytest.fixture
def neighbour() -> Iterator[str]:
    """An app whose answer sets a cookie named like serve's session for the path of serve's
    routes (cookies are per host, not per port)."""
    shadow = ("set-cookie", "otelhooks_session=x; Path=/v1; Max-Age=86400")
    with _app(b"<p>the app the agent built</p>", shadow) as url:
        yield url


def test_a_cookie_set_by_a_page_on_another_port_does_not_take_the_inbox_away(
    browser: Any, server: EventLogServer, neighbour: str
) -> None:
    item = _ask(server)
    page = log_in(browser, server.url)
    try:
        page.goto(neighbour)  # the person looks at the agent's app
        shadow = [c for c in page.context.cookies() if c["path"] == "/v1"]
        assert shadow, "the browser did not keep the neighbour's cookie: nothing is tested"
        deny_in_inbox(page, server.url, item["id"])
    finally:
        page.context.close()
    answered = card(server, item["id"])
    assert (answered["state"], answered["answered_by"]) == ("denied", "browser")


def test_wrong_logins_from_a_script_do_not_keep_the_person_out(
    browser: Any, server: EventLogServer
) -> None:
    # what any process on the machine can do without a credential, a minute after minute
    with httpx.Client(base_url=server.url) as script:
        for n in range(30):
            assert script.post("/login", data={"token": f"guess-{n}"}).status_code == 303
    item = _ask(server)
    page = browser.new_context().new_page()
    try:
        page.goto(f"{server.url}/approvals")
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        page.wait_for_url(f"{server.url}/", timeout=5000)
        deny_in_inbox(page, server.url, item["id"])
    finally:
        page.context.close()
    answered = card(server, item["id"])
    assert (answered["state"], answered["answered_by"]) == ("denied", "browser")


# The first click of a double-click takes the page to the inbox; the second lands there, where
# the first card's Approve is (the page is open source: its place is known)
DOUBLE_CLICK = """<button id="b" style="position:fixed;inset:0">double-click to go on</button>
<script>document.getElementById("b").onmousedown = () => { location.href = "%s/approvals"; };
</script>"""


def test_a_double_click_on_a_page_on_another_port_approves_nothing(
    browser: Any, server: EventLogServer
) -> None:
    item = _ask(server)
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        box = page.locator("button.approve").first.bounding_box(timeout=5000)
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        with _app((DOUBLE_CLICK % server.url).encode()) as lure:
            page.goto(lure)
            # the page's time stands still from here: the second click comes "at once"
            page.clock.install()
            page.clock.pause_at(datetime.now() + timedelta(seconds=1))
            page.mouse.click(x, y)
            card = page.locator(f"article[data-approval='{item['id']}']")
            card.locator("button.approve").wait_for(timeout=5000)
            page.mouse.click(x, y)
            card.locator("p.error").wait_for(timeout=5000)
        assert "nothing was answered" in card.locator("p.error").inner_text()
        assert _state(server, item["id"]) == "pending"
    finally:
        page.context.close()
        httpx.post(
            f"{server.url}/v1/approvals/{item['id']}", json={"decision": "deny"}, headers=AUTH
        )


def _state(server: EventLogServer, approval: str) -> str:
    return str(card(server, approval)["state"])


# what a page on another port of the host can do: fill the host's cookie jar (cookies ignore
# ports), so that the browser's every request to serve carries hundreds of KB of cookies
FILL_JAR = """() => { for (let i = 0; i < 40; i++) {
  document.cookie = `fill${i}=${'x'.repeat(4000)}; path=/; max-age=86400`; } }"""


def _wait_for_the_jar(page: Any) -> None:
    """Chromium hands ``document.cookie`` writes to its network service without waiting: a
    navigation started at once can leave before the jar is full (it once got 200, not 431)."""
    deadline = time.monotonic() + 10
    while sum(c["name"].startswith("fill") for c in page.context.cookies()) < 40:
        assert time.monotonic() < deadline, "the browser never kept the page's 40 cookies"
        time.sleep(0.05)


def test_a_cookie_jar_filled_by_a_page_on_another_port_is_named_and_cleared(
    browser: Any, server: EventLogServer
) -> None:
    item = _ask(server)
    page = log_in(browser, server.url)
    try:
        with _app(b"<p>the app the agent built</p>") as app:
            page.goto(app)
            page.evaluate(FILL_JAR)
            _wait_for_the_jar(page)
        # before: serve reset the connection (net::ERR_CONNECTION_RESET), the cause nowhere
        refused = page.goto(f"{server.url}/approvals")
        assert refused is not None
        assert refused.status == 431
        assert "Clear this host's cookies" in page.inner_text("body")
        page.context.clear_cookies()  # what the answer asks of the person
        page.goto(f"{server.url}/login")
        page.fill("#token", TOKEN)
        page.click("#login-submit")
        page.wait_for_url(f"{server.url}/")
        deny_in_inbox(page, server.url, item["id"])
    finally:
        page.context.close()
    answered = card(server, item["id"])
    assert (answered["state"], answered["answered_by"]) == ("denied", "browser")
