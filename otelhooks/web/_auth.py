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
- **Behind a reverse proxy** that sends serve its own address as ``Host`` (nginx's bare
  ``proxy_pass``), the browser's ``Origin`` names the proxy's address, not ``Host``: the
  operator names that address (``public_origins``, serve's ``--public-origin``) and it counts
  as serve's own. A refusal for such a mismatch says so and names the setting.
- Nothing counts failed logins: a limit that anyone able to reach the port trips without a
  credential locks the person out of the inbox (and held calls get their default), while the
  bearer routes never limited guesses. The token's randomness is what stops guessing.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog

from otelhooks._errors import ConfigError
from otelhooks._eventlog._asgi import Scope, header
from otelhooks._loopback import loopback

__all__ = [
    "COOKIE",
    "PUBLIC_ORIGIN_ENV",
    "SECURITY_HEADERS",
    "Caller",
    "WebAuth",
    "origin_hosts",
    "public_origin",
    "public_origins_from",
]

COOKIE = "otelhooks_session"
PUBLIC_ORIGIN_ENV = "OTELHOOKS_PUBLIC_ORIGIN"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# a host name or IP address, nothing else: a refused origin is echoed in messages and serve's log
_HOST = re.compile(r"[a-z0-9._:%-]{1,255}")
_MAX_WARNED = 16  # refused origins serve's log names, each once
_log = structlog.get_logger("otelhooks")

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


def public_origin(value: str) -> str:
    """The origin ``scheme://host[:port]`` a browser names for ``value`` (lowercase, without
    the scheme's default port), as ``Origin`` headers write it.

    Example:
        >>> public_origin("HTTPS://Inbox.Example.com:443/")
        'https://inbox.example.com'

    Raises:
        ValueError: not an ``http``/``https`` URL of a host alone (a path, query or user
            would never match a browser's ``Origin``: serve's pages live at ``/``).
    """
    parts = urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not an origin (scheme://host[:port]): {value!r}: {exc}") from None
    if (
        parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
        or not _HOST.fullmatch(parts.hostname)
    ):
        raise ValueError(f"not an origin (scheme://host[:port], no path): {value!r}")
    return _origin(parts.scheme.lower(), parts.hostname, port)


def _origin(scheme: str, host: str, port: int | None) -> str:
    host = f"[{host}]" if ":" in host else host
    return (
        f"{scheme}://{host}"
        if port in (None, _DEFAULT_PORTS[scheme])
        else f"{scheme}://{host}:{port}"
    )


def _named_origin(value: str) -> str:
    """The origin of an ``Origin`` or ``Referer`` value; "" for anything else."""
    try:
        return public_origin(urlsplit(value)._replace(path="", query="", fragment="").geturl())
    except ValueError:
        return ""


def public_origins_from(given: Sequence[str]) -> list[str]:
    """The public origins ``given``, else ``OTELHOOKS_PUBLIC_ORIGIN``'s (comma-separated), each
    as :func:`public_origin` writes it.

    Raises:
        ConfigError: one is not an origin (the message names the setting).
    """
    raw = list(given) or (os.environ.get(PUBLIC_ORIGIN_ENV) or "").split(",")
    origins = []
    for value in (v.strip() for v in raw):
        if not value:
            continue
        try:
            origins.append(public_origin(value))
        except ValueError as exc:
            raise ConfigError(f"--public-origin / {PUBLIC_ORIGIN_ENV}: {exc}") from None
    return origins


def origin_hosts(allowed: Sequence[str], origins: Sequence[str], *, bound: str) -> list[str]:
    """The host names a server bound to ``bound`` answers: ``allowed`` and, where names are
    checked at all (a loopback address, or names given), the public origins' (the browser's
    ``Origin`` names them; see :mod:`otelhooks._local_hosts`)."""
    if not (loopback(bound) or allowed):
        return list(allowed)  # every name is answered: adding some would refuse the rest
    return [*allowed, *(urlsplit(o).hostname or "" for o in origins)]


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
        public_origins: Iterable[str] = (),
    ) -> None:
        self._token = token.encode()
        # raises ValueError for a value no browser would send as Origin
        self.public_origins = frozenset(public_origin(o) for o in public_origins)
        self._ingest = (ingest_token or token).encode()
        self.session_ttl_s = session_ttl_s
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._warned: set[str] = set()

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

    def same_origin(self, scope: Scope) -> bool:
        """The request's ``Origin`` (else ``Referer``) names this server's own host, or one of
        :attr:`public_origins` (the addresses a reverse proxy serves it at)."""
        host = header(scope, b"host")
        origin = header(scope, b"origin") or header(scope, b"referer")
        if not origin or origin == "null":
            return False
        scheme, _, rest = origin.partition("://")
        if host and scheme in ("http", "https") and rest.split("/", 1)[0] == host:
            return True
        return bool(self.public_origins) and _named_origin(origin) in self.public_origins

    def from_own_page(self, scope: Scope) -> bool:
        """A cookie request that serve's own pages made: ``Sec-Fetch-Site: same-origin`` (or
        ``none``, an address the person typed, for a ``GET``); from a browser that sends no
        ``Sec-Fetch-Site`` (an older one, or a host it does not trust, reached over plain HTTP),
        an ``Origin`` or ``Referer`` naming this server (the pages' ``Referrer-Policy`` keeps
        it). A request that names nothing is refused: another page can send one like that."""
        site = header(scope, b"sec-fetch-site")
        if site is not None:
            return site == "same-origin" or (site == "none" and scope["method"] == "GET")
        return self.same_origin(scope)

    def foreign_origin(self, scope: Scope) -> str | None:
        """The origin a refused browser request named when it is not this server's ``Host``
        nor a public origin (``None`` when it named none): behind a reverse proxy that
        rewrites ``Host``, serve's own page looks like this until its address is named."""
        origin = header(scope, b"origin") or header(scope, b"referer") or ""
        named = _named_origin(origin)
        if not named or named in self.public_origins:
            return None
        host = header(scope, b"host") or ""
        if urlsplit(named).netloc == host:
            return None
        return named

    def refusal(self, scope: Scope, default: str) -> str:
        """Why a browser request is refused: ``default``, or, when it named an origin that is
        not this server's (a reverse proxy that rewrites ``Host``), that cause and the setting
        that names the proxy's address."""
        named = self.foreign_origin(scope)
        if named is None:
            return default
        host = header(scope, b"host") or "none"
        with self._lock:  # once an origin, a bounded count of them: any page can send one
            first = named not in self._warned and len(self._warned) < _MAX_WARNED
            if first:
                self._warned.add(named)
        if first:
            # else the inbox's buttons fail with nothing on serve's side to say why
            _log.warning(
                "browser request refused: its origin is not serve's",
                origin=named[:100],
                host=host[:100],
                hint=f"behind a reverse proxy that rewrites Host: --public-origin {named[:100]}",
            )
        return (
            f"{default}: the page's origin {named[:100]!r} is not this server's (Host "
            f"{host[:100]!r}). If that is the address you open serve at (a reverse proxy that "
            f"rewrites Host), start serve with --public-origin {named[:100]} (or "
            f"{PUBLIC_ORIGIN_ENV}); a page of another site stays refused"
        )

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
