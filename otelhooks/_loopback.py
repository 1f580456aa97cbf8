"""This machine's own addresses, and the rule for our clients of them: no proxy.

An agent's environment often names a proxy (``HTTP_PROXY``, ``ALL_PROXY``, a sandbox's filtering
proxy), and httpx and requests send every request there unless ``NO_PROXY`` names the host, a
loopback one included. A client of ours asking a serve on 127.0.0.1 for an approval then took
the proxy's answer for the person's (a ``{"decision": "allow"}`` let the call through) and handed
it the bearer token; with ``ALL_PROXY=socks5://...`` and no SOCKS package the guard could never
ask at all. A loopback address is reached directly, so such clients ignore the environment's
proxies (``trust_env=False``); a client of another host keeps them (a corporate proxy may be the
only way out).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["loopback", "trust_env_for"]


def loopback(address: str) -> bool:
    """Whether ``address`` (an address to listen on) is this machine's own: a server bound
    there is reached by its own user's programs and web pages, and by nothing else."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def trust_env_for(url: str) -> bool:
    """The ``trust_env`` of a client of ours for ``url``: ``False`` for a loopback host, so no
    proxy (nor any other setting of the environment) stands between it and our own server.

    Example:
        >>> [trust_env_for(u) for u in ("http://127.0.0.1:4318", "http://[::1]:1", "https://x.test")]
        [False, False, True]
    """
    return not loopback((urlsplit(url).hostname or "").lower())
