"""The TLS context of every HTTP client of ours: made once per process, under the fork guard.

httpx makes a TLS context for every client, plain-HTTP ones too, and a process's first one is
where OpenSSL initialises itself: made under :data:`otelhooks._fork_guard.ONCE`, so a child
forked meanwhile does not inherit OpenSSL's lock held (its first context, ours or anyone's,
then waited forever), and reused by every client after, in a forked child too. Only the
context is shared: it holds the CA bundle, not connections.
"""

from __future__ import annotations

import os
import ssl

import httpx

from otelhooks._fork_guard import ONCE

__all__ = ["tls_context"]

_contexts: dict[tuple[bool, str, str], ssl.SSLContext] = {}


def tls_context(*, trust_env: bool) -> ssl.SSLContext:
    """httpx's default verifying context (its CA bundle, or with ``trust_env`` the
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` of the environment), one per setting.

    Example:
        >>> tls_context(trust_env=False) is tls_context(trust_env=False)
        True
    """
    key = (
        trust_env,
        os.environ.get("SSL_CERT_FILE", "") if trust_env else "",
        os.environ.get("SSL_CERT_DIR", "") if trust_env else "",
    )
    with ONCE:
        context = _contexts.get(key)
        if context is None:
            context = _contexts[key] = httpx.create_ssl_context(verify=True, trust_env=trust_env)
        return context
