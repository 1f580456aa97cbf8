"""Whether an installed Claude Code entry gives the guards it runs the time they may take.

``install`` writes each entry's ``timeout`` (and ``--hook-timeout``, which tells the bridge that
limit) from the hooks file as it was then. A guard whose own timeout grew afterwards, or an
entry whose ``timeout`` was lowered by hand, no longer fits: Claude Code ends the hook at its
``timeout`` and, a timed-out hook being a non-blocking error, runs the tool (unless the entry
says ``onFailure: block``); or the bridge stops waiting at ``--hook-timeout`` less its margin
and blocks a call the guard might have allowed. Either way the guard never has its time, and
nothing said so before the first call. :func:`short_guard_timeouts` is ``otelhooks validate``'s
warning of it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelhooks._config._claude_mark import our_entries, read_settings
from otelhooks.integrations.coding_agents._guard_time import MARGIN_S, guards_s, timed_guards

if TYPE_CHECKING:
    from otelhooks._config._load import ConfigSource
    from otelhooks._hooks import Hook

__all__ = ["CLAUDE_DEFAULT_TIMEOUT_S", "short_guard_timeouts"]

# what Claude Code waits for a command hook without a ``timeout`` of its own (Claude Code 2.1.332)
CLAUDE_DEFAULT_TIMEOUT_S = 600.0
# the bridge's answer time when the command does not tell it Claude Code's (``--hook-timeout``)
_BRIDGE_DEFAULT_S = 25.0


def _flag(words: Sequence[str], name: str) -> str | None:
    """The value after ``name`` in a command's words (``None``: not there)."""
    for i, word in enumerate(words[:-1]):
        if word == name:
            return words[i + 1]
    return None


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number > 0 else None


def _ours(path: str | Path) -> set[str]:
    """The loader's hook ids of the entries of ours in the settings file ``path``: it reads
    them as its hooks, but they are the bridge, not guards it runs."""
    return {f"{Path(path).stem}:{where}" for _, where, _ in our_entries(read_settings(path))}


def _guards_of(sources: Sequence[ConfigSource]) -> list[Hook]:
    """The hooks of ``sources``, entries of ours left out."""
    found: list[Hook] = []
    for source in sources:
        ours = _ours(source.path) if source.format == "claude_settings" else set()
        found.extend(hook for hook in source.hooks if hook.id not in ours)
    return found


def _hooks_run(
    handler: dict[str, Any], settings: Path, sources: Sequence[ConfigSource]
) -> Sequence[Hook]:
    """The hooks the entry runs: the file its command names (``--hooks``, read against the
    project folder the settings file is in) when that can be read, else every hook validated
    with it."""
    from otelhooks._config import inspect_config

    try:
        named = _flag(shlex.split(str(handler.get("command") or "")), "--hooks")
    except ValueError:
        named = None
    path = Path(named or "").expanduser()
    if named is not None and not path.is_absolute() and settings.parent.name == ".claude":
        path = settings.parent.parent / path
    if named is None or not path.is_absolute():
        return _guards_of(sources)  # a user's settings file: its project is the session's
    for source in sources:
        if Path(source.path).resolve() == path.resolve():
            return _guards_of([source])
    if not path.is_file():
        return _guards_of(sources)
    return _guards_of(inspect_config([path]))


def _short(event: str, handler: dict[str, Any], need_s: float) -> str | None:
    """What goes wrong on ``event`` when the entry's limits are shorter than ``need_s`` (the
    guards' time), ``None`` when nothing does."""
    timeout_s = _seconds(handler.get("timeout")) or CLAUDE_DEFAULT_TIMEOUT_S
    try:
        told = _seconds(_flag(shlex.split(str(handler.get("command") or "")), "--hook-timeout"))
    except ValueError:
        told = None
    # the bridge's own rule (``event_wait``): the guards' time and its margin, up to the limit
    # it is told less that margin; its default answer time when it is told none
    wait_s = _BRIDGE_DEFAULT_S
    if told:
        wait_s = min(max(_BRIDGE_DEFAULT_S, need_s + MARGIN_S), told - MARGIN_S)
    limits = f"timeout {timeout_s:g} s" + (f", --hook-timeout {told:g}" if told else "")
    if timeout_s < min(need_s, wait_s) + MARGIN_S:
        blocks = handler.get("onFailure") == "block"
        runs = "runs the tool unguarded" if event == "PreToolUse" else "goes on unguarded"
        then = "blocks the call (onFailure: block)" if blocks else runs
        return (
            f"{limits}: Claude Code ends the hook at {timeout_s:g} s, before the guards' time, "
            f"and {then}"
        )
    if wait_s < need_s:
        return f"{limits}: the bridge stops waiting at {wait_s:g} s and blocks the call"
    return None


def short_guard_timeouts(sources: Sequence[ConfigSource]) -> dict[str, list[str]]:
    """For each Claude Code settings file of ``sources``, a warning for each command entry
    ``install`` wrote whose ``timeout`` (or the ``--hook-timeout`` in its command) is shorter
    than the hooks deciding its event may take one after another (their own timeouts), naming
    the entry, the hooks and both times.

    Example:
        >>> short_guard_timeouts([])
        {}
    """
    from otelhooks.integrations.claude_code._entries import command_timeout

    found: dict[str, list[str]] = {}
    for source in sources:
        if source.format != "claude_settings":
            continue
        for event, where, handler in our_entries(read_settings(source.path)):
            if handler.get("type") != "command":
                continue  # serve's route has its own time, which no file validated gives
            guards = timed_guards(_hooks_run(handler, Path(source.path), sources), event)
            need_s = guards_s(guards)
            what = _short(event, handler, need_s) if need_s else None
            if what is None:
                continue
            ids = ", ".join(hook.id for hook in guards)
            own = "its own timeout" if len(guards) == 1 else "their own timeouts"
            found.setdefault(source.path, []).append(
                f"hooks.{where} (the otelhooks hook) is shorter than hook {ids} may take "
                f"({need_s:g} s, {own}): {what}; run `otelhooks claude-code install` again "
                f"(it writes {command_timeout(need_s)} s)"
            )
    return found
