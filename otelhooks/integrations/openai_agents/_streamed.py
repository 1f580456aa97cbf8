""":meth:`HookedRunner.run_streamed`: a streamed run of the Agents SDK as an otelhooks operation.

``Runner.run_streamed`` starts the run in a task of its own (``asyncio.create_task``), which
copies the contextvars current when it is called, and returns before the run ends. So the
operation is entered in a copy of the caller's context, where the run (``CURRENT_RUN``) is set
too, and ``Runner.run_streamed`` is called inside that copy: the SDK's task, and each tool task it
starts, inherit the operation's span and the run, so every hooked tool call goes through
:meth:`AgentRun.guard_tool` as in :meth:`HookedRunner.run`; the caller's own context never holds
them. The operation ends in a done callback of the SDK's task (``result.run_loop_task``), which
runs whether the stream is read to its end, left half read, cancelled or failed, and before a
reader's ``stream_events()`` returns.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

import structlog
from agents import (
    Agent,
    MaxTurnsExceeded,
    Runner,
)
from agents.result import RunResultStreaming

from otelhooks._errors import CriticalHookDeliveryError, RunBlockedError
from otelhooks._instrument import Operation
from otelhooks.integrations.openai_agents._agent_run import AgentRun
from otelhooks.integrations.openai_agents._guard import CURRENT_RUN

__all__ = ["streamed"]

_log = structlog.get_logger("otelhooks")


async def streamed(
    runnable: Agent[Any],
    operation: Operation,
    *,
    refusal: Callable[[Operation], str | None],
    start: Callable[[Operation], tuple[AgentRun, Any, dict[str, Any]]],
) -> RunResultStreaming:
    """Enter ``operation``, start the SDK's streamed run of ``runnable`` inside it, and return
    its result. ``refusal`` says why the entered operation does not run (``None``: it runs);
    ``start`` begins otelhooks' side of the run and gives the SDK's input and options (both
    :class:`HookedRunner`'s, shared with its ``run``)."""
    ctx = contextvars.copy_context()
    # before_agent_start hooks are awaited here, attached to ``ctx``, not the caller's context
    op = await asyncio.create_task(operation.__aenter__(), context=ctx)
    refused = refusal(op)
    if op.blocked or refused is not None:
        ctx.run(op.__exit__, None, None, None)
        raise RunBlockedError(refused or op.block_reason)
    run, prompt, options = start(op)
    ctx.run(CURRENT_RUN.set, run)
    try:
        result = ctx.run(lambda: Runner.run_streamed(runnable, prompt, **options))
    except BaseException as exc:  # the SDK refused its arguments: no run started
        ctx.run(_end, run, op, run.failure(exc), exc, None)
        raise
    task = result.run_loop_task
    if task is None:  # every SDK version that streams sets it: fail loudly, never unguarded
        result.cancel()
        error = RuntimeError("Runner.run_streamed returned no run_loop_task to end the run with")
        ctx.run(_end, run, op, error, error, None)
        raise error
    task.add_done_callback(lambda done: _ended(run, op, result, done), context=ctx)
    return result


def _raised(
    task: asyncio.Task[Any], result: RunResultStreaming, answered: bool
) -> BaseException | None:
    """What the SDK's finished run task ends the stream with, read as ``stream_events()`` reads
    it: the task's exception; else, for a run with no answer (``answered``: the SDK ran the
    final output's hooks) that paused for nothing, the turns run out, which the stream raises
    and the task does not."""
    if task.cancelled():
        return asyncio.CancelledError()
    error = task.exception()
    if error is not None or answered or result.interruptions:
        return error
    if result.max_turns is not None and result.current_turn > result.max_turns:
        return MaxTurnsExceeded(f"Max turns ({result.max_turns}) exceeded")
    return None


def _ended(
    run: AgentRun, op: Operation, result: RunResultStreaming, task: asyncio.Task[Any]
) -> None:
    """The SDK's run task is done: end the run's scopes and its operation (in ``ctx``)."""
    error = _raised(task, result, run.final)
    failed: BaseException | None = None
    if isinstance(error, asyncio.CancelledError):
        op.complete("interrupted")  # result.cancel(), or the event loop ended under it
    elif error is None and not run.final and not result.interruptions:
        op.complete("interrupted")  # result.cancel(mode="after_turn"): stopped with no answer
    elif error is not None:
        failed = run.failure(error)
    _end(run, op, failed, error, result)


def _end(
    run: AgentRun,
    op: Operation,
    failed: BaseException | None,
    error: BaseException | None,
    result: RunResultStreaming | None,
) -> None:
    """End ``run``'s scopes (``error``: what the SDK raised) and then ``op`` (``failed``: the
    error it fails with), whatever the first raises: an operation is never left open."""
    try:
        context = result.context_wrapper if result is not None else None
        run.end(error, context, result.interruptions if result is not None else None)
    finally:
        tb = failed.__traceback__ if failed is not None else None
        try:
            op.__exit__(type(failed) if failed is not None else None, failed, tb)
        except CriticalHookDeliveryError:
            # raised to no one from a done callback: say so (DetachedScope.exit does the same)
            _log.exception("critical hook delivery failed", span="Operation")
