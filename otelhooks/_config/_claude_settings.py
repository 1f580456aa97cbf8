"""Claude Code's ``settings.json`` hooks (``.claude/settings.json``, ``settings.local.json``).

::

    {
      "permissions": {"allow": ["Bash(npm test)"]},
      "hooks": {
        "PreToolUse": [
          {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "echo done >> /tmp/claude.log"}]}]
      }
    }

It differs from the workspace engine's ``*.hook.json`` (same event names) in nesting: an event
holds matcher groups, each with its list of handlers. Rules:

- Only ``hooks`` is read; the rest of a settings file (``permissions``, ``env``, ``model``...)
  is Claude Code's business and is left alone.
- Matchers follow Claude Code: absent, empty or ``*`` match everything, else a regex
  (``Edit|Write`` is one), with the ``claude`` dialect.
- A handler is ``{"type": "command", "command": ..., "timeout": seconds}``. otelhooks runs a
  command hook for at most 30 s (:data:`~otelhooks._actions._command.MAX_COMMAND_TIMEOUT_S`),
  so a handler without a timeout gets 30 s (Claude Code's default is 60 s) and a longer one is
  refused at load, never cut short silently. Other handler types (``prompt``) need Claude
  Code's own model and are refused with the reason.
- Handlers get ids ``<file stem>:<Event>[<group>].hooks[<handler>]``
  (``settings:PreToolUse[0].hooks[1]``).
"""

from __future__ import annotations

from typing import Any, Final

from otelhooks._actions._command import MAX_COMMAND_TIMEOUT_S
from otelhooks._config._build import build_hook
from otelhooks._config._parse import Document
from otelhooks._errors import ConfigError
from otelhooks._events import resolve_event
from otelhooks._hooks import Hook

__all__ = ["is_claude_settings", "load_claude_settings"]

_GROUP_KEYS: Final = ("matcher", "hooks")
_HANDLER_KEYS: Final = ("type", "command", "timeout")
_DEFAULT_TIMEOUT_S: Final = MAX_COMMAND_TIMEOUT_S
_FIELD_MAP: Final = {"command": "command", "timeout": "timeout", "matcher": "matcher"}


def is_claude_settings(data: Any) -> bool:
    """An object whose ``hooks`` maps events to matcher groups that hold ``hooks`` lists."""
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return False
    return any(
        isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
    )


def _handler_fields(
    doc: Document, handler: Any, where: tuple[str | int, ...], hook_id: str
) -> tuple[dict[str, Any] | None, list[ConfigError]]:
    problems: list[ConfigError] = []

    def bad(problem: str, key: str) -> None:
        problems.append(doc.error(problem, (*where, key), hook_id=hook_id, field=key))

    if not isinstance(handler, dict):
        problem = "a handler is an object {type, command, timeout}"
        return None, [doc.error(problem, where, hook_id=hook_id)]
    for key in handler:
        if key not in _HANDLER_KEYS:
            bad(f"unknown key; a handler has {', '.join(_HANDLER_KEYS)}", str(key))
    kind = handler.get("type")
    if kind != "command":
        bad(
            f"type {kind!r} is not supported: only command handlers run outside Claude Code "
            "(prompt handlers need its model)",
            "type",
        )
    command = handler.get("command")
    if not isinstance(command, str) or not command.strip():
        bad("a command handler needs 'command' (a non-empty string)", "command")
    timeout = handler.get("timeout", _DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        bad("timeout must be a number of seconds", "timeout")
    elif not 0 < timeout <= MAX_COMMAND_TIMEOUT_S:
        bad(
            f"timeout is in seconds: more than 0 and at most {MAX_COMMAND_TIMEOUT_S:g} "
            "(otelhooks' limit for command hooks)",
            "timeout",
        )
    if problems:
        return None, problems
    return {"command": command, "timeout": float(timeout)}, problems


def load_claude_settings(doc: Document, errors: list[ConfigError]) -> list[Hook]:
    """The hooks of one Claude Code settings document; problems go to ``errors``."""
    stem = doc.path.stem
    hooks: list[Hook] = []
    for event, groups in doc.data["hooks"].items():
        key_loc: tuple[str | int, ...] = ("hooks", event)
        try:
            resolve_event(str(event))
        except ConfigError as exc:
            errors.append(doc.error(exc.problem, key_loc, field=f"hooks.{event}"))
            continue
        if not isinstance(groups, list):
            errors.append(
                doc.error("must be a list of matcher groups", key_loc, field=f"hooks.{event}")
            )
            continue
        for g, group in enumerate(groups):
            group_loc = (*key_loc, g)
            group_id = f"{stem}:{event}[{g}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                errors.append(
                    doc.error(
                        "a matcher group is an object {matcher, hooks: [handlers]}",
                        group_loc,
                        hook_id=group_id,
                    )
                )
                continue
            for key in group:
                if key not in _GROUP_KEYS:
                    errors.append(
                        doc.error(
                            f"unknown key; a matcher group has {', '.join(_GROUP_KEYS)}",
                            (*group_loc, key),
                            hook_id=group_id,
                            field=str(key),
                        )
                    )
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                errors.append(
                    doc.error(
                        "matcher must be a string",
                        (*group_loc, "matcher"),
                        hook_id=group_id,
                        field="matcher",
                    )
                )
                continue
            for h, handler in enumerate(group["hooks"]):
                hook_id = f"{group_id}.hooks[{h}]"
                where = (*group_loc, "hooks", h)
                fields, problems = _handler_fields(doc, handler, where, hook_id)
                errors.extend(problems)
                if fields is None:
                    continue
                entry = {
                    "id": hook_id,
                    "type": event,
                    "dialect": "claude",
                    "matcher": None if matcher in (None, "", "*") else matcher,
                    **fields,
                }
                hook = build_hook(
                    doc,
                    entry,
                    where,
                    hook_id=hook_id,
                    field_map=_FIELD_MAP,
                    event_loc=key_loc,
                    errors=errors,
                )
                if hook is not None:
                    hooks.append(hook)
    return hooks
