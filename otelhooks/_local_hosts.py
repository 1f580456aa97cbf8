"""Which ``Host`` and ``Origin`` a server of ours on a loopback address answers.

A server listening on 127.0.0.1 can be reached by every web page the user opens. Through DNS
rebinding (a name of the page's own that resolves to 127.0.0.1 a moment later) the browser
takes the server for the page's own origin, so neither CORS nor a same-origin check stops the
page from reading and writing it: an MCP gateway without a token would run the page's tool
calls, and serve's login form would take its guesses. The MCP transport asks every server to
validate ``Origin`` for this reason.

So a server bound to a loopback address answers a request only when its ``Host`` is
``localhost``, an IP address or a name the user allowed (``--allowed-host``), and its
``Origin``, when it sends one, names such a host; anything else gets ``403``. A rebinding page
can only name its own host, which is none of these. A server bound to another address is meant
to be reached by its names (behind a load balancer, say): it checks only the names given, if
any. Clients that send no ``Host`` (HTTP/1.0) are not browsers and are answered.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from otelhooks._eventlog._asgi import header, send_json
from otelhooks._loopback import loopback

# serve and the MCP gateway each type their ASGI messages their own way
ASGIApp = Callable[..., Awaitable[None]]
# Host values answered that are remembered: a client names the same one on every request, and
# parsing it again (an IP address in Python) was a seventh of a refused request's CPU. Only
# answered values are kept, the first ones up to this count, none longer than a host name and
# port can be (a client choosing many cannot make the memory grow)
_KNOWN_HOSTS = 64
_KNOWN_HOST_CHARS = 270

__all__ = ["LocalHosts", "host_of"]


def host_of(value: str) -> str:
    """The host name of a ``Host`` header (``name:port``, ``[::1]:port``), lowercased.

    Example:
        >>> host_of("[::1]:8080"), host_of("LocalHost:1"), host_of("127.0.0.1")
        ('::1', 'localhost', '127.0.0.1')
    """
    return (urlsplit(f"//{value}").hostname or "").lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class LocalHosts:
    """The ASGI app ``app``, answering only the hosts the module doc names.

    Args:
        app: the server's application.
        bound: the address the server listens on.
        allowed: more host names the server answers to (``--allowed-host``).

    Example:
        >>> hosts = LocalHosts(lambda *a: None, bound="127.0.0.1", allowed=["mcp.internal"])
        >>> [hosts.answers(h) for h in ("localhost", "127.0.0.1", "mcp.internal", "evil.test")]
        [True, True, True, False]
        >>> LocalHosts(lambda *a: None, bound="0.0.0.0").answers("evil.test")
        True
    """

    def __init__(self, app: ASGIApp, *, bound: str, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.names = {host_of(name) for name in allowed}
        self.checked = bool(self.names) or loopback(bound)
        self._answered: set[str] = set()  # Host header values answered (_KNOWN_HOSTS)

    def answers(self, host: str) -> bool:
        """Whether a request naming ``host`` (a host name, no port) is answered."""
        return not self.checked or host == "localhost" or _is_ip(host) or host in self.names

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.checked:
            problem = self._problem(scope)
            if problem is not None:
                await send_json(send, 403, {"error": "forbidden", "message": problem})
                return
        await self.app(scope, receive, send)

    def _problem(self, scope: Any) -> str | None:
        host = header(scope, b"host")
        if host is not None and host not in self._answered:
            if not self.answers(host_of(host)):
                return (
                    f"this server does not answer the host {host_of(host)[:80]!r} (--allowed-host)"
                )
            if len(self._answered) < _KNOWN_HOSTS and len(host) <= _KNOWN_HOST_CHARS:
                self._answered.add(host)
        origin = header(scope, b"origin")
        if origin is not None and not self.answers((urlsplit(origin).hostname or "").lower()):
            return f"requests from the origin {origin[:80]!r} are refused (--allowed-host)"
        return None
