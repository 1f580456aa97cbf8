"""serve's web view behind a reverse proxy that sends serve its own address as ``Host`` (nginx's
bare ``proxy_pass http://127.0.0.1:PORT``): the browser's ``Origin`` and ``Referer`` name the
proxy's address, which is not serve's ``Host``.

Before, the own-page rule refused every such request the page made: the login form answered
``cross-origin login``, and with a session the inbox's buttons answered ``CSRF check failed``
(over plain HTTP by name, where Chromium sends no ``Sec-Fetch-Site``, every JSON route 403): no
card could be answered and nothing said why. Now ``--public-origin`` (``public_origins``) names
the proxy's address, and a refusal for an origin that is not serve's names that setting. A page
on another 127.0.0.1 port stays refused. A real proxy process (:mod:`tests.web._proxy`), real
serve, Debian's Chromium (``inbox.test`` resolved to 127.0.0.1 by the browser's own rules).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from otelhooks import EventLogServer
from tests.web._proxy import HostRewritingProxy, host_rewriting_proxy
from tests.web.conftest import (
    TOKEN,
    Seen,
    ask,
    card,
    chromium,
    deny_in_inbox,
    log_in,
    other_port_app,
)
from tests.web.conftest import serving_inbox as _serving_inbox

pytestmark = pytest.mark.timeout(90)

NAME = "inbox.test"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(NAME) as launched:
        yield launched


@pytest.fixture
def proxy() -> Iterator[HostRewritingProxy]:
    with host_rewriting_proxy() as started:
        yield started


def _state(server: EventLogServer, approval: str) -> tuple[str, str]:
    got = card(server, approval)
    return str(got["state"]), str(got["answered_by"])


# the proxy's address as the browser opens it: a loopback address (Chromium sends
# Sec-Fetch-Site) and a name over plain HTTP (it sends none: Origin and Referer alone)
ADDRESSES = ["127.0.0.1", NAME]


@pytest.mark.parametrize("address", ADDRESSES)
def test_behind_a_proxy_that_rewrites_host_the_inbox_answers_with_public_origin(
    browser: Any,
    proxy: HostRewritingProxy,
    monkeypatch: pytest.MonkeyPatch,
    address: str,
) -> None:
    public = f"http://{address}:{proxy.port}"
    options: dict[str, Any] = {"public_origins": [public]}
    if address == NAME:  # the setting's environment variable, spelled as an operator might
        options = {}
        monkeypatch.setenv("OTELHOOKS_PUBLIC_ORIGIN", f" https://other.example ,{public.upper()}/")
    with _serving_inbox(monkeypatch, **options) as server:
        proxy.upstream = server.port
        approval = str(ask(server)["id"])
        page = log_in(browser, public)
        try:
            deny_in_inbox(page, public, approval)
            assert page.inner_text("#live") == "live"
        finally:
            page.context.close()
        assert _state(server, approval) == ("denied", "browser")
        assert proxy.requests > 5, "the browser did not go through the proxy: nothing is tested"


@pytest.mark.parametrize("address", ADDRESSES)
def test_behind_a_proxy_without_public_origin_the_refusal_names_it(
    browser: Any,
    proxy: HostRewritingProxy,
    monkeypatch: pytest.MonkeyPatch,
    address: str,
) -> None:
    public = f"http://{address}:{proxy.port}"
    # a name the browser uses must be allowed (DNS rebinding): what an operator does first
    allowed = [NAME] if address == NAME else []
    with (
        _serving_inbox(monkeypatch, allowed_hosts=allowed) as server,
        structlog.testing.capture_logs() as logs,
    ):
        proxy.upstream = server.port
        page = browser.new_context().new_page()
        try:
            page.goto(f"{public}/login")
            page.fill("#token", TOKEN)
            page.click("#login-submit")
            page.wait_for_load_state()
            said = page.inner_text("body")
        finally:
            page.context.close()
    assert f"--public-origin {public}" in said, said
    assert "OTELHOOKS_PUBLIC_ORIGIN" in said, said
    warned = [e for e in logs if e["event"] == "browser request refused: its origin is not serve's"]
    assert [e["origin"] for e in warned] == [public], logs


_IMG = "(u) => { const i = new Image(); i.src = u; document.body.appendChild(i); }"
_FORM = """(u) => { const f = document.createElement('form'); f.method = 'POST'; f.action = u;
  f.enctype = 'text/plain'; const t = document.createElement('input');
  t.name = '{"decision": "allow", "x": "'; t.value = '"}'; f.append(t); document.body.append(f);
  f.submit(); }"""


@pytest.mark.parametrize("make", ["img", "form"])
def test_with_public_origin_a_page_on_another_port_is_still_refused(
    browser: Any, proxy: HostRewritingProxy, monkeypatch: pytest.MonkeyPatch, make: str
) -> None:
    public = f"http://127.0.0.1:{proxy.port}"
    with _serving_inbox(monkeypatch, public_origins=[public]) as server:
        proxy.upstream = server.port
        approval = str(ask(server)["id"])
        page = log_in(browser, public)
        try:
            other = page.context.new_page()
            seen = Seen(other)
            with other_port_app(b"<!doctype html><p>the app the agent built</p>") as app:
                other.goto(app)
                url = f"{public}/v1/approvals/{approval}"
                if make == "img":
                    url += "?wait=30&asker=1"
                other.evaluate(_IMG if make == "img" else _FORM, url)
                status, cookie = seen.answer(url)
            assert cookie, "the browser did not send the session cookie: nothing is tested"
            assert status == 403
        finally:
            page.context.close()
        assert _state(server, approval) == ("pending", "")


def test_a_public_origin_that_is_not_one_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from otelhooks import ConfigError, serve

    bad_ones = (
        "inbox.example.com",
        "https://inbox.example.com/otelhooks",
        "ftp://x",
        "http://in\x1bbox.test",  # echoed in a refusal and serve's log: a terminal's escape
    )
    for bad in bad_ones:
        with pytest.raises(ConfigError, match="--public-origin"):
            serve(token=TOKEN, public_origins=[bad], start=False)
    monkeypatch.setenv("OTELHOOKS_PUBLIC_ORIGIN", "https://a.example, nope")
    with pytest.raises(ConfigError, match=r"OTELHOOKS_PUBLIC_ORIGIN: .*'nope'"):
        serve(token=TOKEN, start=False)


def test_the_cli_refuses_a_public_origin_that_is_not_one() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "otelhooks", "serve", "--port", "0", "--public-origin", "x.test"],
        env={**os.environ, "OTELHOOKS_ADMIN_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert "otelhooks serve: --public-origin / OTELHOOKS_PUBLIC_ORIGIN: not an origin" in run.stderr


def test_an_inbox_that_cannot_read_serve_says_so_not_that_nothing_waits(
    browser: Any, proxy: HostRewritingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person logged in at serve's own address (by name), then opens the inbox through the
    new proxy: the browser sends the session (cookies ignore ports), the page loads, and its
    every JSON request is refused (no ``--public-origin`` yet). Before, the page said "Nothing
    is waiting." under a card that waited, its default to come."""
    with _serving_inbox(monkeypatch, allowed_hosts=[NAME]) as server:
        proxy.upstream = server.port
        approval = str(ask(server)["id"])
        page = log_in(browser, f"http://{NAME}:{server.port}")
        try:
            for path in ("/approvals", "/"):
                page.goto(f"http://{NAME}:{proxy.port}{path}")
                alert = page.locator("#page-error")
                alert.wait_for(timeout=10_000)
                assert "--public-origin" in alert.inner_text()
                assert page.locator("#none-pending").is_hidden()
        finally:
            page.context.close()
        assert _state(server, approval) == ("pending", "")
