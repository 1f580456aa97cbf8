"""``WebApp``: the page at ``/``, the inbox at ``/approvals`` and the JSON routes they read.

Served by ``otelhooks serve`` for every path its event-log app does not route itself:

=================================  ===============================================================
route                              what
=================================  ===============================================================
``GET /``, ``GET /approvals``      the pages (a browser without a session is sent to ``/login``)
``GET|POST /login``                the login form; ``POST /logout`` ends the session
``GET /static/{file}``             the page's own scripts and style (no build step, no CDN)
``GET /v1/ui/session``             the CSRF token and the Jaeger/Grafana base URLs
``GET /v1/ui/operations``          traces newest first; ``agent``, ``tool``, ``decision``,
                                   ``errors=1``, ``before`` (paging), ``limit``
``GET /v1/ui/traces/{trace_id}``   one trace's spans (``view=outline``: without attributes,
                                   events and links; ``from`` and ``last``: only the spans
                                   after the page's first ``from``, the last of them ``last``,
                                   as ``from`` in the answer says); ``.../spans/{span_id}``:
                                   one span whole
``GET /v1/ui/changes``             long-poll: returns when ``version`` or ``approvals`` moved
``/v1/approvals...``               :mod:`otelhooks.web._approval_routes`
=================================  ===============================================================

A request carrying the session cookie to any route but the pages and ``/login`` must come
from serve's own pages (:meth:`~otelhooks.web._auth.WebAuth.from_own_page`), else 403: no
other site's ``<img>``, form or ``no-cors`` fetch reaches a JSON route with the person's
session. Every response carries the headers of :data:`~otelhooks.web._auth.SECURITY_HEADERS` (a
Content-Security-Policy without inline scripts among them). Every route but ``/login`` and the
style sheet wants the admin token (see :mod:`otelhooks.web._auth`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import parse_qs

from otelhooks._actions._approval_inbox import ApprovalInbox
from otelhooks._eventlog._asgi import Receive, Scope, Send, header, read_body, respond
from otelhooks._store._errors import StoreError
from otelhooks.web._approval_routes import ApprovalRoutes, wait_seconds
from otelhooks.web._auth import COOKIE, SECURITY_HEADERS, Caller, WebAuth
from otelhooks.web._store import TraceIndex

__all__ = ["WebApp"]

_T = TypeVar("_T")

_STATIC_TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
_PUBLIC = frozenset({"/login", "/static/style.css", "/static/login.js"})
_TRACE = re.compile(r"^/v1/ui/traces/([0-9a-f]{32})(?:/spans/([0-9a-f]{16}))?$")
_MAX_WAITERS = 64
_LOOK_S = 1.0  # how often an open page's long-poll looks at the cards' leases and deadlines


def _static() -> dict[str, tuple[bytes, bytes]]:
    folder = resources.files("otelhooks.web").joinpath("static")
    files: dict[str, tuple[bytes, bytes]] = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if suffix in _STATIC_TYPES:
            files[item.name] = (item.read_bytes(), _STATIC_TYPES[suffix])
    return files


async def send_json(send: Send, status: int, body: Any, *extra: tuple[bytes, bytes]) -> None:
    """A JSON answer with the security headers."""
    data = json.dumps(body, separators=(",", ":"), default=str).encode()
    await respond(send, status, data, b"application/json", [*SECURITY_HEADERS, *extra])


def query(scope: Scope) -> dict[str, str]:
    """The query string's first value of each name."""
    raw = scope.get("query_string", b"").decode("latin-1")
    return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}


class WebApp:
    """The ASGI handler of the web view (see the module docstring).

    Args:
        index: the traces shown.
        inbox: the approvals listed and answered.
        auth: tokens and sessions.
        jaeger_url, grafana_url: base URLs the page links trace ids and metrics to.
        capture_content: show prompts and arguments (spans and approvals).
    """

    def __init__(
        self,
        index: TraceIndex,
        inbox: ApprovalInbox,
        auth: WebAuth,
        *,
        jaeger_url: str | None = None,
        grafana_url: str | None = None,
        capture_content: bool = False,
    ) -> None:
        self.index = index
        self.inbox = inbox
        self._looked = float("-inf")
        self.auth = auth
        self.jaeger_url = (jaeger_url or "").rstrip("/")
        self.grafana_url = (grafana_url or "").rstrip("/")
        self.capture_content = capture_content
        self.approvals = ApprovalRoutes(inbox, auth, capture_content=capture_content)
        self.waiting = 0
        self._files = _static()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        page = path in ("/", "/approvals") or path.startswith("/static/")
        if not page and path != "/login" and self._elsewhere(scope):
            # the one rule for every route a browser's cookie reaches but a page (see _auth)
            await self.refuse(
                scope, send, "a browser request from another site (Sec-Fetch-Site, Origin, Referer)"
            )
            return
        if path.startswith("/v1/approvals"):
            await self.approvals(scope, receive, send)
            return
        if path in _PUBLIC:
            if path == "/login":
                await (
                    self._login(scope, receive, send)
                    if method == "POST"
                    else self._file(send, "login.html")
                )
            else:
                await self._file(send, path.removeprefix("/static/"))
            return
        caller = self.auth.caller(scope)
        if caller is None or not caller.admin:
            if page and method == "GET" and caller is None:
                await _redirect(send, "/login")
            else:
                await send_json(send, 401 if caller is None else 403, {"error": "unauthorized"})
            return
        if method == "POST" and path == "/logout":
            await self._logout(scope, send, caller)
        elif method != "GET":
            await send_json(send, 405, {"error": "method_not_allowed"}, (b"allow", b"GET"))
        elif path == "/":
            await self._file(send, "index.html")
        elif path == "/approvals":
            await self._file(send, "approvals.html")
        elif path.startswith("/static/") and path[8:] in self._files:
            await self._file(send, path[8:])
        elif path == "/v1/ui/session":
            await send_json(send, 200, await self._read(self._session, caller))
        elif path == "/v1/ui/operations":
            await self._operations(scope, send)
        elif path == "/v1/ui/changes":
            await self._changes(scope, receive, send)
        elif (match := _TRACE.match(path)) is not None:
            if match.group(2):
                raw = query(scope).get("n", "0")
                nth = int(raw) if raw.isdigit() and len(raw) < 7 else 0
                read = functools.partial(self.index.span, match.group(1), match.group(2), nth=nth)
                found = await self._read(read)
            else:
                q = query(scope)
                raw, last = q.get("from", "0"), q.get("last", "")
                after = (int(raw) if raw.isdigit() and len(raw) < 7 else 0, last)
                outline = q.get("view") == "outline"
                read = functools.partial(
                    self.index.trace, match.group(1), outline=outline, after=after
                )
                found = await self._read(read)
            if found is None:
                await send_json(send, 404, {"error": "not_found", "message": "not kept"})
            else:
                await send_json(send, 200, found)
        else:
            await send_json(send, 404, {"error": "not_found"})

    async def refuse(self, scope: Scope, send: Send, why: str) -> None:
        """403 for a browser request, saying ``why`` (and, for an origin that is not serve's,
        what names it: :meth:`~otelhooks.web._auth.WebAuth.refusal`)."""
        message = self.auth.refusal(scope, why)
        await send_json(send, 403, {"error": "forbidden", "message": message})

    def _elsewhere(self, scope: Scope) -> bool:
        """A request carrying the session cookie that serve's own pages did not make: a page
        loads nothing but serve's static files, so only it may be opened from a link elsewhere."""
        caller = self.auth.caller(scope)
        return caller is not None and caller.how == "cookie" and not self.auth.from_own_page(scope)

    async def _read(self, method: Callable[..., _T], /, *args: Any) -> _T:
        """``method(*args)`` of the index: on a worker thread when the index waits for a
        database (a shared store's), never on the event loop."""
        if self.index.blocking:
            return await asyncio.to_thread(method, *args)
        return method(*args)

    async def _file(self, send: Send, name: str) -> None:
        body, ctype = self._files[name]
        await respond(send, 200, body, ctype, SECURITY_HEADERS)

    def _session(self, caller: Caller) -> dict[str, Any]:
        return {
            "csrf": caller.csrf,
            "via": caller.how,
            "jaeger_url": self.jaeger_url,
            "grafana_url": self.grafana_url,
            "capture_content": self.capture_content,
            "stats": self.index.stats(),
        }

    async def _operations(self, scope: Scope, send: Send) -> None:
        q = query(scope)
        try:
            limit = min(max(int(q.get("limit") or 100), 1), 1000)
            before = int(q.get("before") or 0)
        except ValueError:
            await send_json(send, 400, {"error": "bad_parameter"})
            return
        read = functools.partial(
            self.index.operations,
            agent=q.get("agent", ""),
            tool=q.get("tool", ""),
            decision=q.get("decision", ""),
            errors=q.get("errors") in ("1", "true"),
            before=before,
            limit=limit,
        )
        await send_json(send, 200, await self._read(read))

    async def _changes(self, scope: Scope, receive: Receive, send: Send) -> None:
        q = query(scope)
        try:
            since = int(q.get("since") or 0)
            seen = int(q.get("approvals") or 0)
            timeout = wait_seconds(q.get("timeout"), 25.0)
        except ValueError:
            await send_json(send, 400, {"error": "bad_parameter"})
            return
        if self.waiting >= _MAX_WAITERS:
            await send_json(send, 503, {"error": "too_many_waiters"}, (b"retry-after", b"1"))
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self.waiting += 1
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            while True:
                woken = [self.index.signal.arm(), self.inbox.signal.arm()]
                # a card whose askers are gone (its lease lapsed) or whose deadline passed
                # leaves the inbox only when something looks at it: the open page does, so it
                # never offers to answer a card nobody waits for
                if loop.time() >= self._looked + _LOOK_S:  # once a second, whatever the pages
                    self._looked = loop.time()
                    with contextlib.suppress(StoreError):  # the page's listing says it
                        await self.inbox.call(self.inbox.pending)
                now = {"version": self.index.version, "approvals": self.inbox.version}
                left = deadline - loop.time()
                if now["version"] != since or now["approvals"] != seen or left <= 0:
                    await send_json(send, 200, now)
                    return
                waits = [asyncio.ensure_future(w.wait()) for w in woken]
                try:
                    done, _ = await asyncio.wait(
                        [*waits, gone],
                        timeout=min(left, _LOOK_S),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    for w in waits:
                        w.cancel()
                if gone in done:
                    return
        finally:
            self.waiting -= 1
            gone.cancel()

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a browser always sends Origin with a form POST: one from elsewhere is a login CSRF
        if header(scope, b"origin") is not None and not self.auth.same_origin(scope):
            await self.refuse(scope, send, "cross-origin login")
            return
        raw = await read_body(receive, 8192)
        form = parse_qs((raw or b"").decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0]
        sid = self.auth.login(token)
        if sid is None:
            await _redirect(send, "/login?failed=1")
            return
        cookie = f"{COOKIE}={sid}; HttpOnly; SameSite=Strict; Path=/"
        await _redirect(send, "/", (b"set-cookie", cookie.encode()))

    async def _logout(self, scope: Scope, send: Send, caller: Caller) -> None:
        if not self.auth.allows_change(scope, caller):
            await self.refuse(scope, send, "CSRF check failed")
            return
        self.auth.logout(caller.session)
        cookie = f"{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
        await send_json(send, 200, {"ok": True}, (b"set-cookie", cookie.encode()))


async def _redirect(send: Send, where: str, *extra: tuple[bytes, bytes]) -> None:
    await respond(
        send, 303, b"", b"text/plain", [*SECURITY_HEADERS, (b"location", where.encode()), *extra]
    )


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
