"""Who may see the web view and change anything through it.

- **API clients** send ``Authorization: Bearer <admin token>``.
- **Browsers** log in once at ``/login`` (a form posting the admin token); the answer sets a
  random session id in an ``HttpOnly; SameSite=Strict`` cookie. The token never travels in a URL
  and is never stored in the browser. Sessions live in memory (at most ``max_sessions``, each
  for ``session_ttl_s``), so a restart logs everyone out.
- **Every browser request but a page's** (the JSON routes, ``GET`` ones included) must come
  from serve's own pages (:meth:`WebAuth.from_own_page`). ``SameSite=Strict`` does not stop a
  page on another port of the same host: the browser takes it for the same site and sends the
  cookie with its ``<img>``, ``fetch(..., {mode: "no-cors"})`` and form requests.
- **State-changing browser requests** (a ``POST`` carrying the cookie) need both a same-origin
  ``Origin`` header and the session's CSRF token in ``X-CSRF-Token`` (the page reads it from
  ``GET /v1/ui/session``). A bearer request has no ambient credential and needs neither.
- Nothing counts failed logins: a limit that anyone able to reach the port trips without a
  credential locks the person out of the inbox (and held calls get their default), while the
  bearer routes never limited guesses. The token's randomness is what stops guessing.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from otelhooks._eventlog._asgi import Scope, header

__all__ = ["COOKIE", "SECURITY_HEADERS", "Caller", "WebAuth"]

COOKIE = "otelhooks_session"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make Origin "null"
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated request: ``bearer`` (admin or ingest token) or ``cookie`` (a browser
    session, with its CSRF token)."""

    how: str
    admin: bool
    csrf: str = ""
    session: str = ""


@dataclass(slots=True)
class _Session:
    csrf: str
    expires: float


class WebAuth:
    """Bearer tokens, browser sessions and CSRF checks (see the module docstring).

    Example:
        >>> auth = WebAuth("s3cret")
        >>> session = auth.login("s3cret")
        >>> session is not None
        True
    """

    def __init__(
        self,
        token: str,
        *,
        ingest_token: str | None = None,
        session_ttl_s: float = 12 * 3600,
        max_sessions: int = 1000,
    ) -> None:
        self._token = token.encode()
        self._ingest = (ingest_token or token).encode()
        self.session_ttl_s = session_ttl_s
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def caller(self, scope: Scope) -> Caller | None:
        """Who sent the request, or ``None`` (no valid bearer token or session cookie)."""
        value = header(scope, b"authorization")
        if value is not None:
            scheme, _, credential = value.partition(" ")
            raw = credential.strip().encode()
            if scheme.lower() != "bearer" or not raw:
                return None
            if hmac.compare_digest(raw, self._token):
                return Caller("bearer", admin=True)
            if hmac.compare_digest(raw, self._ingest):
                return Caller("bearer", admin=False)
            return None
        # every value of the cookie: a page on another port of this host can set one of the
        # same name for a longer path, which the browser sends first (cookies ignore ports)
        with self._lock:
            for sid in _cookies(scope, COOKIE):
                session = self._sessions.get(sid)
                if session is not None and session.expires >= time.monotonic():
                    return Caller("cookie", admin=True, csrf=session.csrf, session=sid)
                if session is not None:
                    del self._sessions[sid]
        return None

    def login(self, token: str) -> str | None:
        """A new session id for the right token; ``None`` otherwise."""
        if not hmac.compare_digest(token.encode(), self._token):
            return None
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[sid] = _Session(
                secrets.token_urlsafe(32), time.monotonic() + self.session_ttl_s
            )
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return sid

    def logout(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)

    @staticmethod
    def same_origin(scope: Scope) -> bool:
        """The request's ``Origin`` (else ``Referer``) names this server's own host."""
        host = header(scope, b"host")
        origin = header(scope, b"origin") or header(scope, b"referer")
        if not host or not origin or origin == "null":
            return False
        scheme, _, rest = origin.partition("://")
        return scheme in ("http", "https") and rest.split("/", 1)[0] == host

    @staticmethod
    def from_own_page(scope: Scope) -> bool:
        """A cookie request that serve's own pages made: ``Sec-Fetch-Site: same-origin`` (or
        ``none``, an address the person typed, for a ``GET``); from a browser that sends no
        ``Sec-Fetch-Site`` (an older one, or a host it does not trust, reached over plain HTTP),
        an ``Origin`` or ``Referer`` naming this server (the pages' ``Referrer-Policy`` keeps
        it). A request that names nothing is refused: another page can send one like that."""
        site = header(scope, b"sec-fetch-site")
        if site is not None:
            return site == "same-origin" or (site == "none" and scope["method"] == "GET")
        return WebAuth.same_origin(scope)

    def allows_change(self, scope: Scope, caller: Caller) -> bool:
        """A state-changing request: bearer, or a cookie with same origin and the CSRF token."""
        if caller.how == "bearer":
            return True
        sent = header(scope, b"x-csrf-token") or ""
        return self.same_origin(scope) and hmac.compare_digest(sent.encode(), caller.csrf.encode())


def _cookies(scope: Scope, name: str) -> Iterator[str]:
    for key, value in scope.get("headers", ()):
        if key.lower() != b"cookie":
            continue
        for part in bytes(value).decode("latin-1").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name and v:
                yield v
