"""Headers for the upstream MCP server, from ``allowedEnvVars``-style templates.

``Authorization: Bearer ${MCP_TOKEN}`` is sent with ``${MCP_TOKEN}`` read from the environment,
and only when ``MCP_TOKEN`` is an allowed variable: a template naming another variable is
refused when the gateway starts. Resolved values are registered as secrets, so they are scrubbed
from every log line and error text; headers are never logged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from otelhooks._actions._webhook_config import TEMPLATE
from otelhooks._redact import register_secret

__all__ = ["UpstreamHeaders"]

_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Headers the gateway owns on the upstream connection: configuration cannot set them.
_OWNED: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "mcp-session-id"}
)


@dataclass(frozen=True, slots=True)
class UpstreamHeaders:
    """Header templates and the environment variables they may read.

    Example:
        >>> h = UpstreamHeaders.parse(["Authorization: Bearer ${T}"], allowed_env_vars=["T"])
        >>> h.resolve({"T": "s3cret"})
        {'Authorization': 'Bearer s3cret'}
    """

    templates: Mapping[str, str]
    allowed_env_vars: frozenset[str]

    @classmethod
    def parse(
        cls, lines: Iterable[str], *, allowed_env_vars: Iterable[str] = ()
    ) -> UpstreamHeaders:
        """``NAME: VALUE`` lines, checked against ``allowed_env_vars``.

        Raises:
            ValueError: a malformed line, a header the gateway owns, or a template naming a
                variable that is not allowed.
        """
        allowed = frozenset(allowed_env_vars)
        templates: dict[str, str] = {}
        for line in lines:
            name, sep, value = line.partition(":")
            name = name.strip()
            if not sep or not _NAME.fullmatch(name):
                raise ValueError(f"--header wants 'NAME: VALUE', got {name or line!r}")
            if name.lower() in _OWNED:
                raise ValueError(f"header {name!r} cannot be set by configuration")
            for var in TEMPLATE.findall(value):
                if var not in allowed:
                    raise ValueError(
                        f"header {name!r} uses ${{{var}}}, which is not an allowed env var "
                        "(--allowed-env-var)"
                    )
            templates[name] = value.strip()
        return cls(templates, allowed)

    def resolve(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers with their templates filled in (each value registered as a secret).

        Raises:
            LookupError: an allowed variable is not set.
        """
        env = os.environ if environ is None else environ

        def value(match: re.Match[str]) -> str:
            var = match.group(1)
            if var not in self.allowed_env_vars:
                raise LookupError(f"${{{var}}} is not an allowed env var")
            resolved = env.get(var)
            if resolved is None:
                raise LookupError(f"environment variable {var} is not set")
            register_secret(resolved)
            return resolved

        return {name: TEMPLATE.sub(value, t) for name, t in self.templates.items()}
