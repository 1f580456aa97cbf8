"""Other hooks on the tool event the installed guard answers, which the guard cannot check.

Codex CLI 0.171 and Gemini CLI 0.61 run the hooks of one tool event at once, each on the
arguments the model sent, then apply the rewrite any of them returned (``updatedInput``,
``hookSpecificOutput.tool_input``). The otelhooks guard never sees such a rewrite: with the real
CLIs, a neighbour that rewrote ``echo hi`` into ``rm -r victim`` had the deletion run past a guard
that denies it. Nothing in the hook process can see another hook's answer, so the installers say
so, naming each such hook they find (:func:`neighbour_notes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code._entries import is_ours
from otelhooks.integrations.claude_code._settings_file import read_regular
from otelhooks.integrations.coding_agents._codex_toml import codex_toml
from otelhooks.integrations.coding_agents._gemini_json import gemini_json

__all__ = ["neighbour_notes"]

# the event each CLI runs the tool guard on, under its own name
_GUARD_EVENT = {"codex": "PreToolUse", "gemini": "BeforeTool"}
_SHOWN = 80  # characters of a neighbour's command in the note


def _handlers(path: Path, event: str, dialect: str) -> list[dict[str, Any]]:
    if dialect == "gemini":  # with comments, as Gemini CLI reads its settings
        data = gemini_json(path)
    elif path.suffix == ".toml":  # Codex's config.toml: a `[hooks]` table, as in hooks.json
        data = codex_toml(path)
    else:
        raw = read_regular(path)
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            return []  # one the installer refuses on its own
    hooks = data.get("hooks") if isinstance(data, dict) else None
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    found = []
    for group in groups if isinstance(groups, list) else ():
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else ():
            if isinstance(handler, dict) and not is_ours(handler):
                found.append(handler)
    return found


def neighbour_notes(dialect: str, display: str, files: Sequence[Path]) -> list[str]:
    """A warning naming every hook of ``files`` (the CLI ``display``'s hook files) that runs on
    the tool guard's event beside ours, when there is one: its rewrite of a call's arguments
    is applied unchecked.

    Example:
        >>> neighbour_notes("codex", "Codex CLI", [Path("/nonexistent/hooks.json")])
        []
    """
    event = _GUARD_EVENT.get(dialect)
    if event is None:
        return []
    named = []
    for path in files:
        for handler in _handlers(path, event, dialect):
            # Gemini CLI names its handlers (what its warnings and /hooks show)
            what = str(handler.get("name") or handler.get("command") or handler.get("type"))
            what = what if len(what) <= _SHOWN else what[: _SHOWN - 3] + "..."
            named.append(f"`{what}` ({path})")
    if not named:
        return []
    return [
        f"{display} runs other {event} hooks beside the guard: {'; '.join(named)}. It runs "
        "them at once, each on the model's arguments, and applies an argument rewrite any of "
        "them returns unchecked: a call they rewrite runs past the guards. Move such a hook "
        "into the otelhooks hook file (a `command:` hook before the guards, whose rewrite they "
        "see), or keep it to hooks that only read"
    ]
