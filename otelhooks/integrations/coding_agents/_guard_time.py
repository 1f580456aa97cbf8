"""How long the hooks deciding one event may take, and whether the bridge's time cut them short.

Claude Code waits for a command hook up to the hook's own ``timeout`` (600 s when it has none,
Claude Code 2.1.332), and what the hook answers then holds: a guard with ``"timeout": 90`` that
denies after 25 s denies. The bridge fronts such guards (a Claude Code settings file given as
its hooks file), so it waits as long as they may: the hooks deciding an event run one after
another, so for the sum of their deadlines and :data:`MARGIN_S` for its own work, when that is
longer than its answer time (:func:`event_wait`); ``install`` gives the bridge's entry a
timeout that covers it (:func:`~otelhooks.integrations.claude_code._entries.covering_timeout`)
and writes that timeout into the command (``--hook-timeout``): the bridge waits longer only up
to a timeout it knows, for Claude Code ends the hook there (and Codex CLI then runs the tool).

Two limits the bridge cannot wait past: the CLI's own timeout for the entry (a hooks file that
gained a slower guard after ``install``), and an answer time set outright
(``$OTELHOOKS_BRIDGE_DAEMON_ANSWER_S``, ``serve --hook-timeout``). A late answer that came
before the guards' own time was up cut them short (:func:`cut_short`): they never had the time
they asked for, so nothing says they would not have denied. That answer is a block, with a
reason that names them (a deny on ``PreToolUse``), never the failing hook after which the CLI
runs the tool. A late answer after their time (a hook that overran its own timeout) stays what
Claude Code makes of a hook that times out: a non-blocking error, unless ``--fail-closed`` or
``on_error: block``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

__all__ = [
    "ASKS_ON_FAILURE",
    "MARGIN_S",
    "cut_short",
    "event_wait",
    "guards_s",
    "longest_guards_s",
    "timed_guards",
]

# Events whose hook's failure Claude Code answers by asking the person (its own permission
# question): a guard cut short there lets nothing through unasked, so it is left a failure
ASKS_ON_FAILURE: Final = frozenset({"PermissionRequest"})
# the bridge's own work around its hooks (state, spans, the answer), and the hook client's time
# to print the answer before the CLI's timeout
MARGIN_S: Final = 5.0


def _timed(hook: Any) -> bool:
    """A hook whose time counts: it runs (not ``disabled``), before the answer (a notification
    is queued on the deliverer, so the answer never waits for it, and it decides nothing) and
    is no approval (an approval holds a call for a person, and has its own rule:
    ``longest_approval_of``)."""
    from otelhooks._actions._approval import ApprovalAction

    return (
        getattr(hook, "mode", "enforce") != "disabled"
        and not getattr(hook, "notifies", False)
        and not isinstance(hook.action, ApprovalAction)
    )


def guards_s(hooks: Iterable[Any]) -> float:
    """How long ``hooks`` (those deciding one event) may take, one after another: the sum of
    their deadlines (a command hook's is its ``timeout`` and 1 s, for killing it).

    Example:
        >>> import otelhooks
        >>> slow = {"id": "g", "type": "PreToolUse", "command": "true", "timeout": 20}
        >>> told = {"id": "n", "type": "PostToolUse", "webhook": {"url": "http://127.0.0.1:9/"}}
        >>> oh = otelhooks.configure(hooks=[slow, told], set_global=False, otlp=False)
        >>> guards_s(oh.engine.registry.hooks())  # the queued notification is not waited for
        21.0
        >>> oh.shutdown().ok
        True
    """
    return float(sum(h.deadline_s for h in hooks if _timed(h)))


def event_wait(
    answer_s: float,
    hooks: Sequence[Any] | None,
    *,
    fixed: bool = False,
    limit_s: float | None = None,
) -> float:
    """How long the bridge waits for an event whose deciding ``hooks`` are known (``None``:
    not known): ``answer_s``, or, when the CLI's own timeout for the hook is known (``limit_s``,
    less the margin) and ``answer_s`` was not ``fixed`` (set outright), the guards' time
    (:func:`guards_s`) and :data:`MARGIN_S` when longer; never past ``limit_s``. Without a
    known limit the time is not made longer: the CLI could end the hook first, and run the
    tool, where the bridge's late answer blocks it.

    Example:
        >>> event_wait(25.0, [], limit_s=None)
        25.0
    """
    wait = answer_s
    if hooks and not fixed and limit_s is not None:
        wait = max(wait, guards_s(hooks) + MARGIN_S)
    return wait if limit_s is None else min(wait, limit_s)


def cut_short(waited_s: float, hooks: Iterable[Any] | None) -> list[str]:
    """The enforce-mode hooks deciding the event, when ``waited_s`` was less than their time
    (:func:`guards_s`): an answer given then did not wait for them (``[]`` when it did)."""
    deciding = [h for h in hooks or () if _timed(h)]
    if waited_s >= guards_s(deciding):
        return []
    return [h.id for h in deciding if getattr(h, "mode", "enforce") == "enforce"]


def longest_guards_s(hooks: Sequence[Any], events: Iterable[str]) -> float:
    """The longest :func:`guards_s` of one of ``events`` (Claude Code's names): the hooks of
    its canonical event, and of the events its answer waits for too, as the bridge runs them
    (``install`` makes the entry's timeout cover it).

    Example:
        >>> longest_guards_s([], ["PreToolUse"])
        0.0
    """
    return max((guards_s(timed_guards(hooks, name)) for name in events), default=0.0)


def timed_guards(hooks: Sequence[Any], event: str) -> list[Any]:
    """The hooks of ``hooks`` whose time the answer to ``event`` (Claude Code's name) waits
    for: those of its canonical event and of the events its answer waits for too, as the
    bridge runs them (``[]`` for an event whose hooks are observers, queued).

    Example:
        >>> timed_guards([], "PreToolUse")
        []
    """
    from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS
    from otelhooks.integrations.coding_agents._mapping import ALSO_NOW, EVENTS

    known = EVENTS.get(event)
    if known is None or event not in ANSWERING_EVENTS:
        return []  # its hooks are observers, queued: the answer does not wait for them
    names = {known.canonical, *ALSO_NOW.get(event, ())}
    return [h for h in hooks if h.event in names and _timed(h)]
