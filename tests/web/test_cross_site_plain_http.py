"""serve reached by a name over plain HTTP (``--allowed-host``, a machine's own name): the
browser sends no ``Sec-Fetch-Site`` there (it does not trust the origin), so serve tells its own
pages' requests by their ``Origin`` or ``Referer`` and refuses a cookie request naming neither.

Debian's Chromium resolves ``serve.test`` to 127.0.0.1 by its own ``--host-resolver-rules``
(no DNS is asked); the neighbour's page is another port of the same name, so the browser sends
it the person's cookie (cookies ignore ports) and its ``<img referrerpolicy="no-referrer">``
names no page at all. A page of ``rebind.test`` (its own name resolving to 127.0.0.1: DNS
rebinding) reaches serve by a name serve does not answer, and gets 403 even for the login form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from otelhooks import EventLogServer
from tests.web.conftest import (
    AGENT,
    Seen,
    ask,
    card,
    chromium,
    deny_in_inbox,
    log_in,
    other_port_app,
    serving_inbox,
)

pytestmark = pytest.mark.timeout(90)

NAME = "serve.test"
REBOUND = "rebind.test"  # a page's own name, resolving to 127.0.0.1 (DNS rebinding)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(NAME, REBOUND) as launched:
        yield launched


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    with serving_inbox(monkeypatch, allowed_hosts=[NAME]) as started:
        yield started


def _ask(server: EventLogServer) -> str:
    return str(ask(server, AGENT)["id"])


def _state(server: EventLogServer, approval: str) -> tuple[str, str]:
    got = card(server, approval)
    return str(got["state"]), str(got["answered_by"])


_NO_REFERRER_IMG = """(u) => new Promise((done) => { const i = new Image();
  i.referrerPolicy = 'no-referrer'; i.onload = i.onerror = () => done(0); i.src = u;
  document.body.append(i); setTimeout(() => { i.remove(); window.stop(); done(0); }, 800); })"""


def test_over_plain_http_the_inbox_works_and_a_neighbour_s_look_withdraws_nothing(
    browser: Any, server: EventLogServer
) -> None:
    port = server.url.rsplit(":", 1)[1]
    url = f"http://{NAME}:{port}"
    withdrawn, answered = _ask(server), _ask(server)
    page = log_in(browser, url)
    try:
        other = page.context.new_page()
        seen = Seen(other)
        look = f"{url}/v1/approvals/{withdrawn}?wait=30&asker=1"
        with other_port_app(b"<!doctype html><p>the app the agent built</p>") as app:
            other.goto(app.replace("127.0.0.1", NAME))
            other.evaluate(_NO_REFERRER_IMG, look)
        sent = seen.sent(look)
        assert "otelhooks_session=" in sent.get("cookie", ""), "no cookie: nothing is tested"
        assert not {"sec-fetch-site", "origin", "referer"} & set(sent), sent
        assert _state(server, withdrawn) == ("pending", "")
        assert seen.answer(look)[0] == 403
        # the person's own page, without Sec-Fetch-Site either, lists and answers
        deny_in_inbox(page, url, answered)
    finally:
        page.context.close()
    assert _state(server, answered) == ("denied", "browser")


_LOGIN_FORM = """(u) => { const f = document.createElement('form'); f.method = 'POST';
  f.action = u; const t = document.createElement('input'); t.name = 'token'; t.value = 'guess';
  f.append(t); document.body.append(f); f.submit(); }"""


def test_a_page_whose_own_name_resolves_to_127_0_0_1_is_refused(
    browser: Any, server: EventLogServer
) -> None:
    port = server.url.rsplit(":", 1)[1]
    page = browser.new_context().new_page()
    try:
        seen = Seen(page)
        with other_port_app(b"<!doctype html><p>a page of rebind.test</p>") as app:
            page.goto(app.replace("127.0.0.1", REBOUND))
            read = f"http://{REBOUND}:{port}/v1/ui/session"
            page.evaluate("(u) => { fetch(u, {mode: 'no-cors'}).catch(() => 0); }", read)
            assert seen.answer(read)[0] == 403
            guess = f"http://{REBOUND}:{port}/login"
            page.evaluate(_LOGIN_FORM, guess)
            assert seen.answer(guess)[0] == 403
            assert seen.sent(guess)["host"] == f"{REBOUND}:{port}"
    finally:
        page.context.close()
