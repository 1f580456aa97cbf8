"""What a hook abandoned at its deadline answered when it did return: its answer never counts
(the call went on under its ``on_error``), and a refusal is said in the log, so a guard too slow
to refuse does not look like one that allowed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import structlog

from otelhooks._hooks import Block, Hook
from otelhooks._redact import scrub

__all__ = ["late_answer", "late_pooled", "late_task"]

_log = structlog.get_logger("otelhooks")


def late_answer(hook: Hook, answer: Any) -> None:
    """Log ``answer``, what ``hook`` returned past its deadline, when it is a refusal (a call
    judged on return, on the caller's thread, passes it at once)."""
    if isinstance(answer, Block):
        reason = answer.reason if isinstance(answer.reason, str) else str(answer.reason or "")
        _log.warning(
            "hook answered after its deadline: not applied",
            hook_id=hook.id,
            lifecycle_event=hook.event,
            decision=getattr(answer, "decision", "deny"),
            reason=scrub(reason),
        )


def late_pooled(hook: Hook) -> Callable[[Future[Any]], None]:
    """A done callback for a pooled call of ``hook`` abandoned at its deadline."""

    def done(future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            late_answer(hook, future.result())

    return done


def late_task(hook: Hook) -> Callable[[asyncio.Future[Any]], None]:
    """A done callback for the task of an async ``hook`` cancelled at its deadline (it may
    catch the cancellation and answer), whose result is ``(ok, value)``."""

    def done(task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            ok, value = task.result()
            if ok:
                late_answer(hook, value)

    return done
