"""Reading one hook input: JSON text in, a dict out, whatever its depth.

Claude Code writes the event as JSON; its ``tool_input`` is whatever the model produced, so it can
be nested deeper than Python's recursion limit lets :func:`json.loads` go (or than pydantic will
serialise). Such input is never an error: every value nested more than :data:`MAX_DEPTH` levels
below the event is kept as its JSON **text** (a string), so its content stays readable to a guard
(``*'rm -rf'*`` still matches) and every later step (state file, spans, hooks) sees a tree of
bounded depth.
"""

from __future__ import annotations

import re
from typing import Any, Final

from otelhooks._json import MAX_DEPTH, JsonProblem, loads_bounded

__all__ = [
    "MAX_DEPTH",
    "SKILL_COMMAND",
    "SKILL_COMMAND_KEY",
    "InputProblem",
    "as_tool_call",
    "event_name_of",
    "parse_input",
    "tool_name_of",
    "whole_characters",
]

# Claude Code 2.1.332's event for a skill's (or command's) inline ``!`cmd` `` as it loads: the
# shell runs it, and no ``PreToolUse`` fires for it (checked with the real CLI). It names the
# shell tool (``Bash``, ``PowerShell``) and the command as ``tool_name`` / ``tool_input``, and a
# deny (JSON or exit 2) keeps it from running, as a ``PreToolUse`` deny keeps a call.
SKILL_COMMAND: Final = "PreSkillShellCommand"
# the input's mark that its ``PreToolUse`` is such a command (no ``PostToolUse`` follows it)
SKILL_COMMAND_KEY: Final = "otelhooks_skill_command"

_EVENT_NAME: Final = re.compile(r'"hook_event_name"\s*:\s*"([A-Za-z0-9_]{1,64})"')
_TOOL_NAME: Final = re.compile(r'"tool_name"\s*:\s*"([^"\\]{1,256})"')
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


class InputProblem(ValueError):
    """The hook input is not a JSON object (the message says why)."""


def parse_input(raw: str | bytes) -> dict[str, Any]:
    """Parse one hook input; values deeper than :data:`MAX_DEPTH` become their JSON text.

    Raises:
        InputProblem: the input is not JSON, or not a JSON object.

    Example:
        >>> parse_input('{"hook_event_name": "Stop", "session_id": "s"}')["hook_event_name"]
        'Stop'
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        data: Any = loads_bounded(text if text.strip() else "null", max_depth=MAX_DEPTH)
    except JsonProblem as exc:
        raise InputProblem(f"the hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputProblem("the hook input is not a JSON object")
    if _SURROGATE_ESCAPE.search(text):
        data = whole_characters(data)
    return dict(data)


def whole_characters(value: Any) -> Any:
    """Lone surrogates (``\\ud800`` escapes) replaced by U+FFFD: they cannot be UTF-8 encoded,
    and a pair written as two escapes becomes its one character.

    Example:
        >>> whole_characters({"tool_use_id": "toolu_\\ud800"}) == {"tool_use_id": "toolu_\\ufffd"}
        True
    """
    # without recursion: an agent's JSON may nest deeper than Python's recursion limit (a tool
    # call's arguments), and a guard must still judge it
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (value, its new container, key)
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, str):
            parent[key] = _whole(item)
        elif isinstance(item, dict):
            # keys made equal keep the last value, at the first one's place, as a dict does
            pairs = {_whole(k) if isinstance(k, str) else k: v for k, v in item.items()}
            copy: dict[Any, Any] = dict.fromkeys(pairs)
            parent[key] = copy
            stack.extend((v, copy, k) for k, v in pairs.items())
        elif isinstance(item, list):
            items: list[Any] = [None] * len(item)
            parent[key] = items
            stack.extend((v, items, i) for i, v in enumerate(item))
        else:
            parent[key] = item
    return root[0]


def _whole(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def event_name_of(raw: str | bytes) -> str | None:
    """The ``hook_event_name`` of an input that could not be parsed, when it can be read."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    found = _EVENT_NAME.search(text[: 1 << 20])
    return found.group(1) if found else None


def tool_name_of(raw: bytes) -> str | None:
    """The ``tool_name`` of an input that could not be parsed (its start), when it can be read.

    Example:
        >>> tool_name_of(b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_inp')
        'Bash'
    """
    found = _TOOL_NAME.search(raw[: 1 << 20].decode("utf-8", "replace"))
    return found.group(1) if found else None


def as_tool_call(payload: dict[str, Any]) -> dict[str, Any]:
    """A skill's inline shell command (:data:`SKILL_COMMAND`) as the ``PreToolUse`` of its
    shell tool, so the guards of that tool judge it (before, none ran and the command ran
    whatever they deny); any other input as it is.

    Example:
        >>> as_tool_call({"hook_event_name": "PreSkillShellCommand"})["hook_event_name"]
        'PreToolUse'
    """
    if payload.get("hook_event_name") != SKILL_COMMAND:
        return payload
    return {**payload, "hook_event_name": "PreToolUse", SKILL_COMMAND_KEY: True}
