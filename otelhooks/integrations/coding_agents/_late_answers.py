"""When the bridge daemon's answer to an event is late, and what it answers then.

An event the daemon has not answered within its deadline is answered as a failure of the
bridge (a deny under ``--fail-closed``, else exit 1), or with the block of a hook that was to
decide it and blocks when it fails (:func:`~._run.late_refusal`); an approval hook moves the
deadline past the time it holds a call for a person. A hook client that stops waiting first
(its CLI killed it at the hook's timeout) withdraws the approvals asked for its event, for the
CLI went on without the answer. This module's one job is that end of an event's time; it is
apart from :mod:`._daemon`, which serves the socket and answers in time, because a late answer
reads the hooks and the dialect otherwise than a timely one does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog

from otelhooks._actions._approval import longest_approval_of
from otelhooks._actions._asker import Asker
from otelhooks._eventlog._asgi import Receive, disconnected
from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._fair import Late
from otelhooks.integrations.coding_agents._guard_time import event_wait
from otelhooks.integrations.coding_agents._input import InputProblem, parse_input
from otelhooks.integrations.coding_agents._run import BridgeOptions, late_refusal

if TYPE_CHECKING:
    from otelhooks._hooks import Hook
    from otelhooks.integrations.coding_agents._dialects import Dialect

__all__ = ["answer_deadline", "client_gone", "deciding", "late_answer"]

_log = structlog.get_logger("otelhooks")


def answer_deadline(
    bridge: CodingAgentBridge,
    answer_s: float,
    *,
    hooks: Sequence[Hook] | None = None,
    fixed: bool = False,
    limit_s: float | None = None,
) -> tuple[float, bool]:
    """When an event not answered yet counts as failed: an approval hook holds a call for
    a person, so its timeout (and the margin its own deadline takes) comes first; ``install``
    gives Claude Code's hook 15 s more than that. The event's deciding ``hooks`` may take their
    own timeouts, up to the CLI's timeout for the hook (``limit_s``) when it is known
    (:func:`~._guard_time.event_wait`). And whether an approval hook may ask."""
    wait_s = longest_approval_of(bridge.engine.registry.hooks())
    wait = event_wait(answer_s, hooks, fixed=fixed, limit_s=limit_s)
    if wait_s:  # install gives the approval events' entries a timeout of their own
        wait = max(wait, wait_s + 5.0)
    return wait, bool(wait_s)


def late_answer(
    bridge: CodingAgentBridge,
    dialect: Dialect,
    options: BridgeOptions,
    raw: bytes,
    late: Late,
    waited_s: float | None = None,
) -> HookResponse:
    """The answer, in ``dialect``, to the event ``raw`` that got none in ``waited_s`` (logged
    as an error): a failure's, or the block of a hook that was to decide it and blocks when it
    fails or had more time than that."""
    event = dialect.event_of(raw)
    _log.error(
        f"a {dialect.display_name} hook gave no answer in time: answered as a failure",
        hook_event=event,
        reason=late.reason,
        fail_closed=options.fail_closed,
    )
    hooks = deciding(bridge, dialect, raw)
    # a deadline's message says "no answer within N s" itself
    problem = str(late) if late.reason == "deadline" else f"no answer: {late}"
    # its guards had the time it ran, not the time it waited for a thread
    had_s = late.had_s(waited_s) if waited_s is not None else None
    refusal = late_refusal(event, problem, options, hooks, raw, had_s)
    return dialect.answer(refusal)


def deciding(bridge: CodingAgentBridge, dialect: Dialect, raw: bytes) -> list[Hook] | None:
    """The hooks that were to decide the event (``None``: its input does not parse)."""
    try:
        return bridge.hooks_now(dialect.to_bridge(parse_input(raw)), late=True)
    except InputProblem:
        return None


async def client_gone(receive: Receive, asker: Asker | None) -> None:
    """Wait for the hook client to close its connection before its answer (its CLI killed it
    at the hook's timeout, or it was interrupted), then withdraw the approvals asked for it."""
    await disconnected(receive)
    if asker is None:
        return
    if await asyncio.to_thread(asker.gone):
        _log.warning(
            "the hook client stopped waiting before the answer (its CLI's hook timeout, or an "
            "interrupt): its approvals are withdrawn; give the hook a timeout longer than the "
            "approval's"
        )
