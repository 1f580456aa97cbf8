"""The SDK's ``HookMatcher`` whose timeout follows the hooks registered when the SDK starts its
CLI.

The CLI waits for a callback as long as its matcher's ``timeout`` says, and the SDK reads that
timeout once, as it starts the CLI (``query``, ``ClaudeSDKClient.connect``), not when
``hooks_for`` is called. An ``approval:`` hook holds its call until a person answers: registered
after ``hooks_for`` (``oh.register``), or given to the ``oh.operation(...)`` the SDK runs in, it
still gets the CLI's longer wait, as one registered before does.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from claude_agent_sdk import HookMatcher

__all__ = ["WaitingMatcher"]

# What each matcher (by id) told the SDK where it read the timeout: the SDK reads it as it starts
# a CLI, in the task that then starts the tasks calling that CLI's callbacks, which copy this
# context. Two CLIs started with other hooks registered (one in an operation with an approval,
# one not) are each answered by their own wait, not by the last one started.
_TOLD: ContextVar[dict[int, float]] = ContextVar("otelhooks_sdk_waits")


class WaitingMatcher(HookMatcher):
    """A ``HookMatcher`` whose ``timeout`` is ``wait()`` when read (at least a timeout set on
    it); :meth:`told_here` is what the SDK was told in the current context (the CLI it started
    there), :attr:`given` what the last reader was told.

    Example:
        >>> matcher = WaitingMatcher(matcher=None, hooks=[], wait=lambda: 75.0)
        >>> matcher.timeout, matcher.given
        (75.0, 75.0)
    """

    def __init__(
        self,
        *,
        matcher: str | None,
        hooks: list[Any],
        wait: Callable[[], float],
        on_failure: Any = None,
    ) -> None:
        self._wait = wait
        self._floor: float | None = None
        self.given: float | None = None
        # on_failure only when asked: a HookMatcher before claude-agent-sdk 0.2.177 has none
        more = {"on_failure": on_failure} if on_failure is not None else {}
        super().__init__(matcher=matcher, hooks=hooks, **more)

    @property
    def timeout(self) -> float:
        """How long the CLI waits for the callback: worked out now, from the hooks registered
        by now (the SDK reads it as it starts the CLI)."""
        wait = self._wait()
        value = wait if self._floor is None else max(wait, self._floor)
        self.given = value
        _TOLD.set({**_TOLD.get({}), id(self): value})
        return value

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        # the dataclass's __init__ sets it (None); a timeout set later is a floor
        self._floor = value

    def told_here(self) -> float | None:
        """What the CLI whose callback runs in this context was told (``None``: read in
        another context, so not known here)."""
        return _TOLD.get({}).get(id(self))
