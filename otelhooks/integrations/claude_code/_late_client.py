"""The hook client's late answer while the one-process bridge runs: what the bridge told it on
its pipe (its late answer, when that is due, that it is printing its own), and until it tells,
the client's own.

Standard library only, as the hook client, which loads this module by path when it starts the
one-process bridge. The CLI's timeout for the hook runs from the client's start, and on a
loaded machine the bridge's own start (the interpreter, otelhooks's imports) takes seconds, 20
and more at a load of 30: a client that waited to be told its late answer waited for them, and
answered past the CLI's timeout, after which the CLI runs the tool. So before the bridge tells,
the client's own late answer is due (:func:`own_wait`): what the bridge answers for hooks it
could not load in time.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time

__all__ = ["LATE_GRACE_S", "Told", "own_wait"]

# how long past the time it was told the client leaves the bridge's own clock to answer first
# (the same answer)
LATE_GRACE_S = 0.5
# the bridge's answer time as it reads it (``_run.answer_seconds``), and the margin it keeps
# before the CLI's timeout for the hook (``--hook-timeout``; ``_guard_time.MARGIN_S``)
_ANSWER_ENVS = ("OTELHOOKS_BRIDGE_DAEMON_ANSWER_S", "OTELHOOKS_CLAUDE_DAEMON_ANSWER_S")
_DEFAULT_ANSWER_S = 25.0
_LEAST_ANSWER_S = 1.0  # ``otelhooks._env_seconds.BRIDGE_LEAST_S``
_MARGIN_S = 5.0
_INSTALLED_S = 30.0  # the hook timeout ``install`` writes when no guard needs longer


class Told:
    """What the one-process bridge told: its late answer (``due`` when), and the exit code of
    the answer it printed; until it tells, this client's own late answer, due :func:`own_wait`
    after ``asked`` (this client's start)."""

    def __init__(self, asked: float, args: list[str], *, after_daemon: bool) -> None:
        self.late: dict[str, object] | None = None
        self.answered: int | None = None
        self._rest = b""
        self._wait = own_wait(args, after_daemon=after_daemon)
        self._due = asked + self._wait
        self._fail_closed = "--fail-closed" in args

    def read(self, pipe: io.RawIOBase) -> None:
        lines = (self._rest + (pipe.read() or b"")).split(b"\n")
        self._rest = lines.pop()
        for line in lines:
            message = json.loads(line)
            if "answered" in message:
                self.answered = message["answered"]
            else:
                self.late = message

    def ended(self, code: int) -> dict[str, object]:
        """The late answer the bridge told, for a bridge that ended (exit ``code``) before it
        answered: its words for a bridge out of time replaced by what happened (a guard ended
        the process: ``os._exit``, a fault in a C extension), in the reason the agent shows."""
        late = dict(self.late or {})
        problem = late.pop("problem", None)
        if isinstance(problem, str) and problem:
            how = f"was killed by signal {-code}" if code < 0 else f"ended (exit {code})"
            happened = f"the bridge {how} before it answered"
            for key in ("stdout", "stderr"):
                text = late.get(key)
                if isinstance(text, str):
                    late[key] = text.replace(problem, happened)
        return late

    def overdue(self) -> dict[str, object] | None:
        """The late answer to print now: the bridge's, past the time it told, or, when it told
        none, this client's own, past its time; ``None`` while it is not due or the bridge is
        printing its answer (it is waited for)."""
        if self.answered is not None:
            return None
        late = self.late if self.late is not None else self._own()
        due = late.get("due")
        if isinstance(due, float) and time.monotonic() > due + LATE_GRACE_S:
            return late
        return None

    def _own(self) -> dict[str, object]:
        """The answer to hooks the bridge could not load in time: a block under
        ``--fail-closed`` (exit 2, a block in each CLI), else a failing hook (exit 1), and the
        problem on stderr either way."""
        problem = f"no answer within {self._wait:g} s: the bridge had not started"
        if self._fail_closed:
            reason = f"otelhooks could not check this tool call (fail-closed): {problem}"
            return {"due": self._due, "exit_code": 2, "stderr": reason}
        return {"due": self._due, "exit_code": 1, "stderr": f"otelhooks hook client: {problem}"}


def own_wait(args: list[str], *, after_daemon: bool) -> float:
    """How long from its start this client waits for the one-process bridge to tell it
    anything. After a daemon that gave no answer, the bridge's answer time runs from the
    client's start (``$OTELHOOKS_BRIDGE_ASKED_AT``), so that time: the bridge's own answer,
    had it started, would be the same. Else the bridge's time runs from its own start, and the
    bound is the CLI's timeout for the hook (``--hook-timeout``) less the margin, or, not
    known, the one ``install`` writes when no guard needs longer (30 s), or the answer time
    when longer."""
    answer_s, limit_s = _times(args)
    wait = answer_s if limit_s is None else min(answer_s, limit_s)
    if after_daemon:
        return wait
    return limit_s if limit_s is not None else max(wait, _INSTALLED_S - _MARGIN_S)


def _times(args: list[str]) -> tuple[float, float | None]:
    """The bridge's answer time (``$OTELHOOKS_BRIDGE_DAEMON_ANSWER_S``, default 25 s, read as
    the bridge reads it) and the most it may take, the CLI's timeout for the hook less the
    margin (``None``: not known)."""
    raw = next((os.environ[k] for k in _ANSWER_ENVS if os.environ.get(k)), "")
    try:
        answer_s = float(raw.strip())
    except ValueError:
        answer_s = 0.0
    # the bridge's rule (``otelhooks._env_seconds``): unset or invalid, its default; under the
    # least, the least
    if not 0 < answer_s <= threading.TIMEOUT_MAX:
        answer_s = _DEFAULT_ANSWER_S
    answer_s = max(answer_s, _LEAST_ANSWER_S)
    limit_s = None
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag == "--hook-timeout" and (eq or i + 1 < len(args)):
            try:
                timeout = float(value if eq else args[i + 1])
            except ValueError:
                continue
            if 0 < timeout < 1e6:
                limit_s = max(1.0, timeout - _MARGIN_S)
    return answer_s, limit_s
