"""An answer of the bridge that reached nobody, said by one rule.

The CLI kills its hook client at the hook's timeout and goes on (running the tool); the bridge
(the daemon, or the one-process bridge the client started) may answer after that. The event's
spans then say what the guards decided, not that the CLI never heard it: this module says it, in
the words and the count both bridges use. Apart from :mod:`._late_answers` and :mod:`._run`,
which both need it, so neither imports the other for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import structlog

from otelhooks.integrations.coding_agents._common import HookResponse

__all__ = ["tool_use_id_of", "unheard"]

_log = structlog.get_logger("otelhooks")
# the call an answer nobody heard was for, read without parsing (Claude Code's, Codex CLI's id)
_TOOL_USE = re.compile(rb'"tool_use_id"\s*:\s*"((?:[^"\\]|\\.){0,256})"')


def unheard(
    on_drop: Callable[[int, str], None] | None,
    event: str | None,
    tool_use_id: str | None,
    response: HookResponse,
) -> None:
    """Say that ``response`` reached nobody: its hook client was gone before it (its CLI
    killed it at the hook's timeout, and ran the tool, or an interrupt). The event's spans say
    what the guards decided (a deny), not that the CLI never heard it. Logged as an error and
    counted on ``on_drop`` (reason ``client_gone``), by the daemon and the one-process bridge
    alike (``None``: a process about to end, whose counts are never exported)."""
    if on_drop is not None:
        on_drop(1, "client_gone")
    _log.error(
        "the bridge's answer reached nobody: the hook client stopped waiting before it (its "
        "CLI's hook timeout, or an interrupt), and the CLI went on without it; give the hook "
        "a timeout longer than its guards take",
        hook_event=event,
        tool_use_id=tool_use_id,
        exit_code=response.exit_code,
        answer=response.stdout[:500],
    )


def tool_use_id_of(raw: bytes) -> str | None:
    """The call the event ``raw`` names (its ``tool_use_id``), read from its first MiB
    without parsing it."""
    found = _TOOL_USE.search(raw, 0, 1 << 20)
    return found.group(1).decode("utf-8", "replace") if found else None
