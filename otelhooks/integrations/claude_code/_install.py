"""``otelhooks claude-code install`` / ``uninstall``: our hook entries in Claude Code's settings.

:func:`install` merges one matcher group per hook event into ``.claude/settings.json`` (or
``~/.claude/settings.json``), idempotently: it first removes the entries that are ours, then adds
the current ones, and never touches any other hook, key or group. An entry is ours when it is a
``command`` hook running ``otelhooks claude-code`` or an ``http`` hook posting to
``/v1/hooks/claude-code``. :func:`uninstall` removes exactly those (and the groups and events
they leave empty).

Two forms:

- **command** (default): each event starts the standard-library hook client
  (:mod:`~otelhooks.integrations.claude_code.hook_client`, run by path with this interpreter),
  which hands it to a bridge daemon it starts on first use. Point events that decide nothing and
  open or close no span (``Notification``, ``PreCompact``, ``SubagentStart``, ...:
  :data:`ASYNC_EVENTS`) run as Claude Code ``async`` hooks, off Claude's path. Tool, turn and
  session events stay synchronous: ``PreToolUse`` decides, and the bridge carries each tool span
  from ``PreToolUse`` to ``PostToolUse``, which ``SessionEnd`` closes: run in the background
  they could arrive out of order.
- **http** (``--http URL``): each event is an ``http`` hook posting to ``otelhooks serve``, the
  token read from ``$OTELHOOKS_INGEST_TOKEN`` through ``headers`` + ``allowedEnvVars`` (the
  token itself is never written to the file).

A guard written here fails open when it cannot run (a server that is down, a bridge that
crashes): Claude Code treats it as a non-blocking error and runs the tool. :attr:`Change.warnings`
says so; the command form's ``--fail-closed`` turns a crashed bridge into a deny.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ASYNC_EVENTS",
    "EVENTS",
    "TOKEN_ENV",
    "Change",
    "install",
    "is_ours",
    "settings_path",
    "uninstall",
]

TOKEN_ENV = "OTELHOOKS_INGEST_TOKEN"
ROUTE = "/v1/hooks/claude-code"
COMMAND = "otelhooks claude-code"
CLIENT_FILE = "otelhooks/integrations/claude_code/hook_client.py"

# Every event the bridge maps (Claude Code 2.1), in Claude's lifecycle order, except
# WorktreeCreate (Claude Code takes that hook's stdout as the worktree path) and MessageDisplay
# (a hook per batch of displayed lines).
EVENTS: tuple[str, ...] = (
    "Setup",
    "SessionStart",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
TOOL_EVENTS = frozenset(
    {"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure"}
)
# Synchronous: events that decide, that open or close a turn or a tool span, or that start or
# end the session (out of order, or after Claude Code exits, they would break the spans).
SYNC_EVENTS = frozenset(
    {
        "Setup",
        "SessionStart",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "Stop",
        "StopFailure",
        "SessionEnd",
        *TOOL_EVENTS,
    }
)
ASYNC_EVENTS = frozenset(EVENTS) - SYNC_EVENTS
GUARD_EVENTS = ("PreToolUse", "UserPromptSubmit")


@dataclass
class Change:
    """What :func:`install` or :func:`uninstall` did to one settings file."""

    path: Path
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the file's hooks differ from before (a re-install of the same is no change)."""
        return sorted(self.added) != sorted(self.removed)


def settings_path(*, user: bool = False, project: str | os.PathLike[str] = ".") -> Path:
    """``~/.claude/settings.json`` with ``user``, else ``PROJECT/.claude/settings.json``."""
    if user:
        return Path("~/.claude/settings.json").expanduser()
    return Path(project) / ".claude" / "settings.json"


def is_ours(handler: Any) -> bool:
    """Whether a hook handler entry was written by :func:`install`."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "command":
        command = str(handler.get("command") or "")
        return COMMAND in command or CLIENT_FILE in command
    if handler.get("type") == "http":
        return str(handler.get("url") or "").rstrip("/").endswith(ROUTE)
    return False


def client_command() -> str:
    """The fast hook command: this interpreter running the standard-library hook client."""
    from otelhooks.integrations.claude_code import hook_client

    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(hook_client.__file__)}"


def hook_url(base: str) -> str:
    """The hook route on a server given by its base URL (or the route itself)."""
    base = base.rstrip("/")
    return base if base.endswith(ROUTE) else base + ROUTE


def _handler(event: str, *, http: str | None, hooks_file: str, fail_closed: bool) -> dict[str, Any]:
    if http is not None:
        return {
            "type": "http",
            "url": hook_url(http),
            "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
            "allowedEnvVars": [TOKEN_ENV],
            "timeout": 10,
        }
    command = f"{client_command()} --hooks {shlex.quote(hooks_file)}"
    if fail_closed and event in GUARD_EVENTS:
        command += " --fail-closed"
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": 30}
    if event in ASYNC_EVENTS:
        handler["async"] = True
    return handler


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # write then rename: Claude Code may read the file at any moment
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)


def _strip(hooks: dict[str, Any]) -> list[str]:
    """Remove our handlers from a ``hooks`` mapping in place; returns the events touched."""
    removed: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [h for h in handlers if not is_ours(h)]
            if len(kept) != len(handlers):
                removed.append(event)
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def install(
    path: Path,
    *,
    http: str | None = None,
    hooks_file: str = ".claude/otelhooks.yaml",
    events: Sequence[str] = EVENTS,
    fail_closed: bool = False,
) -> Change:
    """Merge our hook entries into the settings file at ``path`` (see the module doc).

    Example:
        >>> change = install(Path("/tmp/p/.claude/settings.json"), http="http://127.0.0.1:4319")
        >>> "PreToolUse" in change.added
        True
    """
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object")
    change = Change(path, removed=_strip(hooks))
    for event in events:
        group: dict[str, Any] = {
            "hooks": [_handler(event, http=http, hooks_file=hooks_file, fail_closed=fail_closed)]
        }
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks.setdefault(event, []).append(group)
        change.added.append(event)
    _write(path, data)
    guards = [e for e in GUARD_EVENTS if e in events]
    if guards and http is not None:
        change.warnings.append(
            f"the {'/'.join(guards)} guards fail open: when {hook_url(http)} is down or slow, "
            "Claude Code reports a non-blocking hook error and runs the tool anyway; keep "
            "`otelhooks serve` running, or use the command form with --fail-closed"
        )
    elif guards and not fail_closed:
        change.warnings.append(
            f"the {'/'.join(guards)} guards fail open: if the bridge itself fails (a broken "
            "hooks file, a crash) Claude Code runs the tool anyway; add --fail-closed to deny"
        )
    return change


def uninstall(path: Path) -> Change:
    """Remove exactly our hook entries from the settings file at ``path``.

    Example:
        >>> uninstall(Path("/tmp/p/.claude/settings.json")).removed
        ['SessionStart', ...]
    """
    change = Change(path)
    if not path.exists():
        return change
    data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return change
    change.removed = _strip(hooks)
    if not hooks:
        del data["hooks"]
    if change.removed:
        _write(path, data)
    return change
