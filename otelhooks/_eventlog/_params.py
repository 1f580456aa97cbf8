"""The query parameters of ``GET /v1/events``, validated; every error names its parameter."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import parse_qsl

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_WAIT_S",
    "MAX_LIMIT",
    "MAX_WAIT_S",
    "MODES",
    "BadParameter",
    "EventsQuery",
    "parse_query",
]

MODES: Final = ("drain", "wait", "events", "version")
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
DEFAULT_WAIT_S: Final = 30.0
MAX_WAIT_S: Final = 60.0
MAX_SEQ: Final = 2**63 - 1  # SQLite's INTEGER
_KNOWN: Final = frozenset({"mode", "since", "limit", "timeout", "log"})

Mode = Literal["drain", "wait", "events", "version"]


class BadParameter(ValueError):
    """A query parameter is missing its form or range; ``parameter`` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.message = message


@dataclass(frozen=True, slots=True)
class EventsQuery:
    """``mode``, ``since`` cursor, ``limit``, long-poll ``timeout`` (s) and the ``log`` name."""

    mode: Mode
    since: int
    limit: int
    timeout: float
    log: str


def _int(name: str, raw: str, low: int, high: int | None) -> int:
    # Plain ASCII digits only: int() also takes "5_000", "+7", " 5" and other scripts' digits,
    # forms no client means and a cache or a proxy in front may read differently.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 20:
        raise BadParameter(name, f"{name} must be a decimal integer, not {raw[:40]!r}")
    value = int(raw, 10)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadParameter(name, f"{name} must be {bound}, not {value}")
    return value


def parse_query(query: str, logs: Collection[str]) -> EventsQuery:
    """Parse and check a query string against the served ``logs``.

    Raises:
        BadParameter: an unknown or repeated parameter, a value of the wrong form or out of
            range, or a ``log`` that is not served (or missing while several are).
    """
    seen: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=False, max_num_fields=16)
    except ValueError:
        raise BadParameter("query", "too many query parameters") from None
    for name, value in pairs:
        if name not in _KNOWN:
            raise BadParameter(name[:40], f"unknown parameter {name[:40]!r}")
        if name in seen:
            raise BadParameter(name, f"{name} is given more than once")
        seen[name] = value
    mode = seen.get("mode", "drain")
    if mode not in MODES:
        raise BadParameter("mode", f"mode must be one of {', '.join(MODES)}, not {mode[:40]!r}")
    since = _int("since", seen["since"], 0, MAX_SEQ) if "since" in seen else 0
    limit = _int("limit", seen["limit"], 1, MAX_LIMIT) if "limit" in seen else DEFAULT_LIMIT
    timeout = DEFAULT_WAIT_S
    if "timeout" in seen:
        try:
            timeout = float(seen["timeout"])
        except ValueError:
            timeout = math.nan
        if not 0 <= timeout <= MAX_WAIT_S:  # also rejects NaN
            raise BadParameter(
                "timeout", f"timeout must be a number of seconds from 0 to {MAX_WAIT_S:g}"
            )
    log = seen.get("log")
    if log is None:
        if len(logs) != 1:
            served = ", ".join(sorted(logs)) or "none"
            raise BadParameter("log", f"choose a log with log=NAME (served: {served})")
        log = next(iter(logs))
    elif log not in logs:
        raise BadParameter("log", f"no event log named {log[:40]!r}")
    return EventsQuery(mode, since, limit, timeout, log)  # type: ignore[arg-type]
