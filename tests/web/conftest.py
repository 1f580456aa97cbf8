"""Fixtures of the web view's tests: a real ``serve`` on 127.0.0.1, and Debian's Chromium driven
through Playwright (never Playwright's own browser download)."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from tests._realparts import require

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def screenshot(page: Any, name: str, tmp_path: Path) -> Path:
    """Take a real screenshot of ``page``; the README's copy in docs/images is replaced only when
    ``OTELHOOKS_UPDATE_SCREENSHOTS=1`` (a test run must not rewrite files of the checkout)."""
    shot = tmp_path / name
    page.screenshot(path=str(shot))
    assert shot.read_bytes().startswith(b"\x89PNG")
    if os.environ.get("OTELHOOKS_UPDATE_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, IMAGES / name)
    return shot


TOKEN = "web-admin-t0ken-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHROMIUM = os.environ.get("OTELHOOKS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EventLogServer]:
    with clearing_inbox(serve(token=TOKEN)) as started:
        yield started


@pytest.fixture(scope="module")
def served() -> Iterator[EventLogServer]:
    """One serve for a module's tests, each of which adds a run of its own."""
    with clearing_inbox(serve(token=TOKEN)) as started:
        yield started


def _client(of: EventLogServer) -> Iterator[httpx.Client]:
    # serve's ingest runs every received span through its hooks (about a millisecond a span
    # here): a 10,000-span request takes seconds on a loaded machine
    with httpx.Client(base_url=of.url, headers=AUTH, timeout=120) as client:
        yield client


@pytest.fixture
def api(server: EventLogServer) -> Iterator[httpx.Client]:
    yield from _client(server)


@pytest.fixture
def served_api(served: EventLogServer) -> Iterator[httpx.Client]:
    """A client of the module's one serve (:func:`served`)."""
    yield from _client(served)


@contextmanager
def chromium(*names: str) -> Iterator[Any]:
    """Debian's Chromium, resolving each of ``names`` to 127.0.0.1 by its own
    ``--host-resolver-rules`` (no DNS is asked, nothing but 127.0.0.1 is reached, never through
    a proxy)."""
    require(
        "Chromium (apt-get install chromium chromium-driver)", shutil.which(CHROMIUM) is not None
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require("the playwright package", False)
    args = list(CHROMIUM_ARGS)
    if names:
        rules = ", ".join(f"MAP {name} 127.0.0.1" for name in names)
        args += [f"--host-resolver-rules={rules}", "--no-proxy-server"]
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield launched
        finally:
            launched.close()


# one browser per module, not per session: Playwright's sync API keeps its event loop set as
# the thread's running loop while it is started, so a later test's asyncio.run() would fail
# for as long as the browser lives
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def log_in(browser: Any, url: str) -> Any:
    """A new page of a new browser context, logged in through the form."""
    context = browser.new_context(viewport={"width": 1400, "height": 860})
    page = context.new_page()
    page.goto(f"{url}/")
    page.wait_for_url(f"{url}/login")
    page.fill("#token", TOKEN)
    page.click("#login-submit")
    page.wait_for_url(f"{url}/")
    return page


STILL_MS = 1000  # the inbox answers no click this soon after its cards changed (approvals.js)


def click_answer(button: Any) -> None:
    """Click an inbox card's Approve or Deny as a person does: once the cards stood still."""
    button.wait_for(timeout=10_000)
    button.page.wait_for_timeout(STILL_MS + 100)
    button.click()


def approval_holder(
    server: EventLogServer, trace_id: str, approval: str | None, headers: dict[str, str] = AUTH
) -> str:
    """The one span of a trace of one approval that holds its ``approve``/``reject`` event and
    its 'asked' mark, once the caller's span (not serve's ``request_human_approve`` stand-in)
    holds it: serve writes the stand-in as the answer is given, the caller's span arrives when it
    ends. Never two at once."""
    deadline = time.monotonic() + 30
    while True:
        trace = httpx.get(f"{server.url}/v1/ui/traces/{trace_id}", headers=headers).json()
        holders = [
            s
            for s in trace["spans"]
            if any(e["a"].get("otelhooks.approval.id") == approval for e in s["e"])
        ]
        assert len(holders) <= 1, [s["n"] for s in holders]
        asked = [s["n"] for s in trace["spans"] if s["d"].get("kind") == "asked"]
        assert asked == [s["n"] for s in holders], asked
        stand_in = holders and holders[0]["a"].get("otelhooks.approval.stand_in")
        if (holders and not stand_in) or time.monotonic() > deadline:
            assert holders, "no span holds the approval"
            return str(holders[0]["n"])
        time.sleep(0.05)


# the token every agent on the machine holds (hook clients, scripts): it may ask, never answer
AGENT = {"Authorization": "Bearer agent-ingest-t0ken"}


@contextmanager
def serving_inbox(
    monkeypatch: pytest.MonkeyPatch, *hook_files: Path, **options: Any
) -> Iterator[EventLogServer]:
    """A serve (of ``hook_files``, with ``options``) whose agents hold :data:`AGENT`; what
    waits in the process's inbox (which outlives it) is denied before and as it stops
    (:func:`clearing_inbox`)."""
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", AGENT["Authorization"].removeprefix("Bearer "))
    with clearing_inbox(serve(list(hook_files), token=TOKEN, **options)) as started:
        yield started


@contextmanager
def clearing_inbox(
    started: EventLogServer, auth: dict[str, str] = AUTH
) -> Iterator[EventLogServer]:
    """``started`` for the block, its inbox holding only what the block asks: the process's
    inbox outlives each serve, so what waits in it is denied with the admin header ``auth``
    before the block (a card an earlier test on this worker left, which counted among this
    one's) and after it; then it stops."""

    def deny_waiting() -> None:
        with httpx.Client(base_url=started.url, headers=auth) as admin:
            for item in admin.get("/v1/approvals", params={"args": 0}).json()["pending"]:
                admin.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})

    try:
        deny_waiting()
        yield started
    finally:
        deny_waiting()
        started.stop()


def ask(server: EventLogServer, headers: dict[str, str] = AUTH, **fields: Any) -> dict[str, Any]:
    """A card asked over HTTP (``POST /v1/approvals``) with ``headers``' token: a ``Bash``
    call of hook ``ask``, 60 s, default ``allow``, no arguments, unless ``fields`` say else."""
    body = {"hook_id": "ask", "tool": "Bash", "timeout_s": 60, "default": "allow", "args": {}}
    created = httpx.post(f"{server.url}/v1/approvals", json={**body, **fields}, headers=headers)
    assert created.status_code == 201, created.text
    return dict(created.json())


def card(server: EventLogServer, approval: str) -> dict[str, Any]:
    """The card ``approval`` as the inbox lists it (a listing renews no asker's lease)."""
    got = httpx.get(f"{server.url}/v1/approvals", headers=AUTH).json()
    for item in [*got["pending"], *got["answered"]]:
        if item["id"] == approval:
            return dict(item)
    raise AssertionError(f"no card {approval}")


def deny_in_inbox(page: Any, url: str, approval: str) -> None:
    """Open the inbox at ``url``, click Deny on the card ``approval`` and see it answered."""
    page.goto(f"{url}/approvals")
    click_answer(page.locator(f"article[data-approval='{approval}'] button.deny"))
    page.locator(f"tr.answered[data-approval='{approval}']").wait_for(timeout=10_000)


CLAUDE_CODE_ROUTE = "/v1/hooks/claude-code"


def pre_tool_use(use_id: str, command: str = "ls") -> dict[str, Any]:
    """Claude Code's ``PreToolUse`` hook input for a ``Bash`` call, of session ``sess-{use_id}``."""
    return {
        "hook_event_name": "PreToolUse",
        "session_id": f"sess-{use_id}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use_id,
    }


class Posted:
    """A hook input posted to serve's Claude Code route with :data:`AGENT` on a thread, its
    connection open until the answer (or ``read_s``)."""

    def __init__(self, url: str, body: dict[str, Any], read_s: float = 30) -> None:
        self.response: httpx.Response | None = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._post, args=(url, body, read_s))
        self._thread.start()

    def _post(self, url: str, body: dict[str, Any], read_s: float) -> None:
        try:
            timeout = httpx.Timeout(5, read=read_s)
            self.response = httpx.post(
                url + CLAUDE_CODE_ROUTE, json=body, headers=AGENT, timeout=timeout
            )
        except httpx.HTTPError as exc:
            self.error = exc

    def join(self) -> None:
        self._thread.join(30)

    def decision(self) -> str:
        """The hook's ``permissionDecision``, once it answered 200."""
        self.join()
        assert self.response is not None, self.error
        assert self.response.status_code == 200, self.response.text
        return str(self.response.json()["hookSpecificOutput"]["permissionDecision"])


def session_cards(admin: httpx.Client, use_id: str) -> dict[str, list[dict[str, Any]]]:
    """The pending and answered cards of :func:`pre_tool_use`'s session(s) starting with
    ``sess-{use_id}`` (the process's inbox outlives each test's serve)."""
    listing = admin.get("/v1/approvals").json()
    return {
        key: [a for a in listing[key] if a["session"].startswith(f"sess-{use_id}")]
        for key in ("pending", "answered")
    }


def first_pending(admin: httpx.Client, use_id: str) -> dict[str, Any]:
    """The first pending card of ``use_id``'s session, once there is one (30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pending = session_cards(admin, use_id)["pending"]
        if pending:
            return dict(pending[0])
        time.sleep(0.02)
    raise AssertionError("no card became pending")


@contextmanager
def other_port_app(page: bytes, *headers: tuple[str, str]) -> Iterator[str]:
    """The agent's own web app on another 127.0.0.1 port, answering ``page`` to every GET."""

    class App(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            for name, value in (*headers, ("content-type", "text/html")):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), App)
    thread = threading.Thread(target=app.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{app.server_port}/"
    finally:
        app.shutdown()
        app.server_close()


class Seen:
    """What serve answered each request of ``page`` (status, and whether it carried the
    session cookie), read from the browser's network events: an opaque or blocked answer
    included."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.urls: dict[str, str] = {}
        self.cookie: dict[str, bool] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.status: dict[str, int] = {}
        self.answer_headers: dict[str, dict[str, str]] = {}
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.on("Network.requestWillBeSent", self._sent)
        cdp.on("Network.requestWillBeSentExtraInfo", self._headers)
        cdp.on("Network.responseReceivedExtraInfo", self._answered)

    def _sent(self, event: dict[str, Any]) -> None:
        self.urls[event["requestId"]] = event["request"]["url"]

    def _headers(self, event: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in event["headers"].items()}
        self.headers[event["requestId"]] = headers
        self.cookie[event["requestId"]] = "otelhooks_session=" in headers.get("cookie", "")

    def _answered(self, event: dict[str, Any]) -> None:
        self.status[event["requestId"]] = event["statusCode"]
        self.answer_headers[event["requestId"]] = {
            k.lower(): v for k, v in event["headers"].items()
        }

    def sent(self, url: str) -> dict[str, str]:
        """The headers the browser sent with the request of ``url`` (cookies included)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for rid, sent in self.urls.items():
                if sent == url and rid in self.headers:
                    return self.headers[rid]
            self.page.wait_for_timeout(50)
        raise AssertionError(f"the browser never sent {url}")

    def cors(self, url: str) -> dict[str, str]:
        """The CORS headers of serve's answer to ``url`` (``Access-Control-*``)."""
        self.answer(url)
        rid = next(r for r, sent in self.urls.items() if sent == url and r in self.status)
        headers = self.answer_headers[rid]
        assert "x-content-type-options" in headers, "no headers read: nothing is tested"
        return {k: v for k, v in headers.items() if k.startswith("access-")}

    def answer(self, url: str) -> tuple[int, bool]:
        """The status serve gave the request of ``url``, and whether it carried the cookie."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for rid, sent in self.urls.items():
                if sent == url and rid in self.status and rid in self.cookie:
                    return self.status[rid], self.cookie[rid]
            self.page.wait_for_timeout(50)
        raise AssertionError(f"serve never answered {url} (or the browser never sent it)")
