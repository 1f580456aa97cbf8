"""The hooks ``hooks_for`` cannot run: those on an event the Claude Agent SDK never calls back for.

The SDK hands its CLI every hook name of ``ClaudeAgentOptions(hooks=...)``, but the CLI calls a
Python callback only for some events: measured with claude-agent-sdk 0.2.190 and the CLI it
bundles (2.1.337), the settings-file command hook of ``SessionStart`` (at startup),
``SessionEnd`` and ``InstructionsLoaded`` runs and the callback never does
(``tests/agent_sdk/fixtures/delivered_events.json``). A hook on such an event would never run
and say nothing: :func:`undelivered` finds them, :func:`check_delivered` refuses the guards
among them (or warns).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS
from otelhooks.integrations.coding_agents._input import SKILL_COMMAND
from otelhooks.integrations.coding_agents._mapping import ALSO_NOW, EVENTS

__all__ = ["UndeliveredHookWarning", "check_delivered", "undelivered", "undelivered_events"]

# Canonical events the bridge runs on its own, from a delivered event or from close():
# ``on_tool_call_denied`` when a guard denies a PreToolUse, ``on_error`` when a turn ends
# interrupted, ``session_end`` when SdkHooks.close() ends the sessions.
_BRIDGE_MADE = frozenset({"on_tool_call_denied", "on_error", "session_end"})


class UndeliveredHookWarning(UserWarning):
    """A hook given to ``hooks_for`` is on an event the Claude Agent SDK never calls back for
    (``SessionStart``, ``SessionEnd``, ``InstructionsLoaded``, ...), or on no Claude Code event
    at all: it will never run under the SDK.

    Turn it into an error to refuse such engines: ``warnings.simplefilter("error",
    UndeliveredHookWarning)``.
    """


def undelivered_events(delivered: Iterable[str]) -> tuple[str, ...]:
    """The Claude Code hook events not in ``delivered``, in the bridge table's order.

    Example:
        >>> "SessionEnd" in undelivered_events(["PreToolUse"])
        True
    """
    hooked = set(delivered)
    return tuple(name for name in EVENTS if name not in hooked)


def _reached(delivered: Iterable[str]) -> frozenset[str]:
    """The canonical events the bridge dispatches from ``delivered`` (Claude Code's names)."""
    found = set(_BRIDGE_MADE)
    for name in delivered:
        if name == SKILL_COMMAND:  # judged as its shell tool's PreToolUse
            name = "PreToolUse"
        row = EVENTS.get(name)
        if row is not None:
            found.add(row.canonical)
        found.update(ALSO_NOW.get(name, ()))
    return frozenset(found)


def undelivered(hooks: Sequence[Any], delivered: Iterable[str]) -> list[tuple[Any, list[str]]]:
    """The hooks of ``hooks`` (not ``disabled``) on no canonical event the bridge dispatches
    when only ``delivered`` (Claude Code's names) reach it, each with the Claude Code events
    that would have run it (``[]``: no Claude Code event does).

    Example:
        >>> from otelhooks import Hook
        >>> start = Hook(id="hello", type="SessionStart", handler=print)
        >>> [(h.id, names) for h, names in undelivered([start], ["PreToolUse"])]
        [('hello', ['SessionStart'])]
    """
    reached = _reached(delivered)
    return [
        (hook, [name for name, row in EVENTS.items() if row.canonical == hook.event])
        for hook in hooks
        if hook.mode != "disabled" and hook.event not in reached
    ]


def _named(found: list[tuple[Any, list[str]]]) -> str:
    return "; ".join(
        f"{hook.id} ({hook.event}: {', '.join(names) if names else 'no Claude Code event'})"
        for hook, names in found
    )


def check_delivered(hooks: Sequence[Any], delivered: Iterable[str], *, accept: bool) -> None:
    """Refuse (``ValueError``) the guards of ``hooks`` that would never run when only
    ``delivered`` reach the bridge: enforcing hooks on an event whose hooks could decide under
    the Claude Code CLI; warn (:class:`UndeliveredHookWarning`) of every hook that would never
    run, the guards too when ``accept``.

    Example:
        >>> from otelhooks import Hook
        >>> check_delivered([Hook(id="t", type="PreToolUse", handler=print)], ["PreToolUse"],
        ...                 accept=False)
    """
    found = undelivered(hooks, delivered)
    if not found:
        return
    guards = [
        (hook, names)
        for hook, names in found
        if hook.mode == "enforce" and any(name in ANSWERING_EVENTS for name in names)
    ]
    if guards and not accept:
        raise ValueError(
            "hooks_for: the Claude Agent SDK never calls back for the events of these guards, "
            f"so they would never run: {_named(guards)}. Move them to an event the SDK "
            "delivers (SDK_EVENTS), or pass accept_undelivered=True to run without them"
        )
    warnings.warn(
        "hooks_for: these hooks will never run under the Claude Agent SDK (it never calls "
        f"back for their events): {_named(found)}",
        UndeliveredHookWarning,
        stacklevel=3,
    )
