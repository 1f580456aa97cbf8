"""The default limits of ``otelhooks serve``, in a module that imports nothing.

``otelhooks serve --help`` shows them, and the CLI builds every subcommand's parser on each
start: reading them from the event log's modules would import the whole server (Starlette,
the stores, structlog) into every ``otelhooks`` process, a hook bridge's included.
"""

from __future__ import annotations

__all__ = ["DEFAULT_BODY_TIMEOUT_S", "DEFAULT_HEADER_TIMEOUT_S", "DEFAULT_MAX_WAITERS"]

DEFAULT_HEADER_TIMEOUT_S = 10.0
# a 16 MiB OTLP request over a slow link; a hook input arrives in one packet
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_MAX_WAITERS = 64
