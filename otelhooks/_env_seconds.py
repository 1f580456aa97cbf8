"""The rules for durations set from outside, in seconds: the one for a duration an
``OTELHOOKS_*`` environment variable sets, and the least timeout a hooks file may give
(:data:`LEAST_TIMEOUT_S`).

A tuning variable's typo must never turn a guard's answer into a failure, nor crash a process
after its answer: ``OTELHOOKS_BRIDGE_DAEMON_ANSWER_S=0.0001`` answered every event late (exit 1:
the CLI ran the tool), and ``OTELHOOKS_SHUTDOWN_TIMEOUT=1e308`` made the bridge's shutdown raise
``OverflowError`` in a thread's wait (its spans lost). So every such variable is read here:

- not a number, NaN, negative, infinite or past :data:`threading.TIMEOUT_MAX` (what a wait can
  take): logged (``invalid environment variable, using default``, naming it) and the default
  used; so is 0 where 0 is no time the variable can mean;
- above 0 but under the variable's least (``1e-300``, ``0.0001`` where a second is the least an
  answer needs): logged (``environment variable below its least, using the least``, naming it)
  and the least used, for the operator asked for a short time, not for the default.

The hook client's standard-library twin (``_late_client``, which runs under ``python -I -S``
and cannot import this) reads the answer time by the same rule; a test holds the two to one
reading.
"""

from __future__ import annotations

import math
import threading
from typing import Final

import structlog

__all__ = ["BRIDGE_LEAST_S", "LEAST_TIMEOUT_S", "seconds_setting"]

# the least a bridge duration may be (its answer time, a daemon's idle time): the daemon's own
# work for an event takes milliseconds, and the one-process bridge's clock starts once it loaded
BRIDGE_LEAST_S: Final = 1.0

# the least timeout a hooks file may give a hook or its webhook: ``timeout: 1e-300`` passed
# validation and failed every run, which ``on_error: continue`` turned into the call going on
# (a guard that never ran, said only in the logs); no action answers in under a millisecond
LEAST_TIMEOUT_S: Final = 0.001

_log = structlog.get_logger("otelhooks")


def seconds_setting(
    raw: str | None, name: str, default: float, *, least: float = 0.0
) -> tuple[float, bool]:
    """The seconds the value ``raw`` of the variable ``name`` sets, and whether it set them (a
    valid value, though raised to ``least``); ``default`` and ``False`` when it is unset or
    invalid. ``least`` 0 admits 0 (the shortest wait); above 0, 0 is invalid.

    Example:
        >>> seconds_setting("7.5", "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S", 25.0, least=1.0)
        (7.5, True)
        >>> seconds_setting(" ", "OTELHOOKS_SHUTDOWN_TIMEOUT", 10.0)
        (10.0, False)
    """
    text = (raw or "").strip()
    if not text:
        return default, False
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    # NaN fails every comparison: invalid too
    if not (0 <= value <= threading.TIMEOUT_MAX) or (value == 0 and least > 0):
        _log.warning("invalid environment variable, using default", var=name, default_s=default)
        return default, False
    if value < least:
        _log.warning(
            "environment variable below its least, using the least",
            var=name,
            value=text,
            least_s=least,
        )
        return least, True
    return value, True
