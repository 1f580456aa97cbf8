"""Known secret values, and scrubbing them out of the text otelhooks writes about hooks.

One job: a process-wide, thread-safe registry of secret values and :func:`scrub`, which replaces
every occurrence of one of them with :data:`REDACTED`.

What counts as a secret: the value of every environment variable a webhook hook lists in
``allowedEnvVars`` (what its ``${VAR}`` header templates resolve). They are registered when such a
hook is loaded and again whenever its headers are resolved at send time (a rotated token is
known from its first use). Values shorter than :data:`MIN_SECRET_LENGTH` characters are ignored:
replacing ``1`` or ``on`` everywhere would mangle every line and protect nothing.

Where it is applied: hook error messages (:class:`~otelhooks.HookError`), the ``otelhooks.hook.*``
attributes and block reasons that carry hook text, captured command output excerpts, errors the
agent's tools and operations raise (:func:`error_text`: span status, exception events, error
fields of results and payloads), and every structlog line through
:func:`otelhooks._logging.scrub_secrets`. Never on the agent's hot path: only where hook or error
text is written, and :func:`scrub` is a single attribute read when no secret is registered.

Only the value as written is recognised; an encoded form (base64, URL- or JSON-escaped) is not.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Final

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SecretRegistry",
    "error_text",
    "register_env_secrets",
    "register_secret",
    "registry",
    "scrub",
]

REDACTED: Final = "[REDACTED]"
MIN_SECRET_LENGTH: Final = 4


class SecretRegistry:
    """A set of secret values and the one pattern that finds any of them.

    Writers take a lock and publish a new compiled pattern; readers only read the attribute (one
    atomic load), so :meth:`scrub` never waits on a registration.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def register(self, value: str | None) -> bool:
        """Add ``value`` (ignored when ``None`` or shorter than :data:`MIN_SECRET_LENGTH`).

        Returns:
            True when the value is registered (now or before).
        """
        if value is None or len(value) < MIN_SECRET_LENGTH:
            return False
        if value in self._values:
            return True  # the common case at send time: no lock, no recompile
        with self._lock:
            values = self._values | {value}
            # Longest first, so a secret that contains another is replaced whole.
            alternatives = sorted(values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in alternatives))
            self._values = values
        return True

    def register_env(self, names: Iterable[str]) -> None:
        """Register the current values of the environment variables ``names`` (unset: skipped)."""
        for name in names:
            self.register(os.environ.get(name))

    def scrub(self, text: str) -> str:
        """``text`` with every registered secret replaced by :data:`REDACTED`."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(REDACTED, text)

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __len__(self) -> int:
        return len(self._values)


registry: Final = SecretRegistry()
"""The process's registry."""


def register_secret(value: str | None) -> bool:
    """Make ``value`` a known secret: from now on it is ``[REDACTED]`` in everything otelhooks
    writes about hooks (hook errors, block reasons, command output excerpts, tool errors, log
    lines through :func:`~otelhooks.scrub_secrets`).

    A webhook's ``allowedEnvVars`` values are registered by otelhooks itself; register the
    secrets your own hooks hold (a token a handler reads from your vault), so an error quoting
    one is scrubbed too. The registry is the process's and only grows; values shorter than
    :data:`MIN_SECRET_LENGTH` characters (or ``None``) are ignored.

    Returns:
        True when the value is a known secret (now or before).

    Example:
        >>> from otelhooks import register_secret
        >>> register_secret("vault-token-7f3a"), register_secret("on")
        (True, False)
    """
    return registry.register(value)


def register_env_secrets(names: Iterable[str]) -> None:
    """Register the values of the environment variables ``names`` in the process's registry."""
    registry.register_env(names)


def scrub(text: str) -> str:
    """``text`` with every secret of the process's registry replaced by ``[REDACTED]``."""
    return registry.scrub(text)


def error_text(exc: BaseException) -> str:
    """``str(exc)`` with known secrets scrubbed: what telemetry and hook payloads record of an
    error (a tool's exception can quote a token it was given)."""
    return scrub(str(exc))
