"""``otelhooks claude-code install`` / ``uninstall``: our hook entries in Claude Code's settings.

:func:`install` merges one matcher group per hook event into a settings file, idempotently: it
first removes the entries that are ours, then adds the current ones, and never touches any other
hook, key or group. :func:`uninstall` removes exactly ours (and the groups and events they leave
empty). Each edit is a minimal splice of the file's text, under a lock, through symlinks
(:mod:`._settings_file`): removing what install added gives back the file's bytes and mode, and
no file where there was none. A file that cannot be edited without loss (a key given twice,
not strict JSON) is refused, untouched.

**Ours** means written by ``install``, recognised by a mark: a command ends with the shell
comment :data:`MARK`, an ``http`` hook carries the header :data:`MARK_HEADER`. Entries an older
version wrote carry no mark; they are recognised by their exact form (the hook client run by
path with ``-I -S``; the ``http`` hook with exactly the header, variable and timeout it wrote).
A user's own ``otelhooks claude-code --hooks ...`` entry is never ours.

:func:`~._install_project.install_project` is what the CLI runs: the command form's entries
name this machine's interpreter and checkout, so on a project they go to
``.claude/settings.local.json`` (Claude Code's file for one machine, kept out of git), never the
shared ``.claude/settings.json``; the ``http`` form has nothing machine-specific and goes to the
shared file. A project without a hook file gets the starter one
(:func:`otelhooks._starter.starter_hooks_yaml`); the command form records spans to
:data:`DEFAULT_TRACES` (``otelhooks claude-code tree`` reads it by default).

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

import math
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otelhooks._actions._approval import longest_approval_of
from otelhooks._config import load_config
from otelhooks._errors import ConfigError
from otelhooks.integrations.claude_code._hook_splices import add_groups, strip_ours
from otelhooks.integrations.claude_code._json_text import Node
from otelhooks.integrations.claude_code._settings_file import Edited, edit_settings
from otelhooks.integrations.claude_code._watch import DEFAULT_WATCH, watch_list
from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS

__all__ = [
    "ASYNC_EVENTS",
    "DEFAULT_HOOKS_FILE",
    "DEFAULT_TRACES",
    "EVENTS",
    "MARK",
    "MARK_HEADER",
    "TOKEN_ENV",
    "Change",
    "install",
    "is_ours",
    "settings_path",
    "uninstall",
]

TOKEN_ENV = "OTELHOOKS_INGEST_TOKEN"
ROUTE = "/v1/hooks/claude-code"
CLIENT_FILE = "otelhooks/integrations/claude_code/hook_client.py"
MARK = "# otelhooks:installed"
MARK_HEADER = "X-Otelhooks-Installed"
DEFAULT_HOOKS_FILE = ".claude/otelhooks.yaml"
DEFAULT_TRACES = "~/.otelhooks/claude-code-traces.jsonl"

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
# Synchronous: events whose hooks can decide (Claude Code does not wait for an async hook, so
# its answer would never arrive), that open or close a turn or a tool span, or that start or
# end the session (out of order, or after Claude Code exits, they would break the spans).
SYNC_EVENTS = frozenset(
    {
        *ANSWERING_EVENTS,
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
# events whose hooks may wait for a person (an ``approval:`` hook): their timeout is longer
APPROVAL_EVENTS = ("PreToolUse", "UserPromptSubmit", "PermissionRequest")


def _project_file(settings: Path, hooks_file: str) -> Path:
    """``hooks_file`` as Claude Code's hooks resolve it: relative to the project folder."""
    given = Path(hooks_file).expanduser()
    return given if given.is_absolute() else settings.parent.parent / given


def _longest_approval(hooks_file: Path) -> float:
    """The longest ``approval.timeout`` in the hooks file (0 when there is none, or the file is
    missing or invalid: ``validate`` reports that): Claude Code's own timeout must exceed it."""
    if not hooks_file.is_file():
        return 0.0
    try:
        return longest_approval_of(load_config([hooks_file]).hooks)
    except (ConfigError, OSError):
        return 0.0


@dataclass
class Change:
    """What :func:`install` or :func:`uninstall` did to one settings file."""

    path: Path
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    before: bytes | None = None
    after: bytes | None = None

    @property
    def changed(self) -> bool:
        """Whether the file's bytes differ from before (a re-install of the same is no change)."""
        return self.before != self.after

    @property
    def verb(self) -> str:
        """``created``, ``updated``, ``deleted`` or ``unchanged``: what happened to the file."""
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "updated"


def settings_path(
    *, user: bool = False, project: str | os.PathLike[str] = ".", local: bool = False
) -> Path:
    """``~/.claude/settings.json`` with ``user``, else ``PROJECT/.claude/settings.json`` (or
    ``settings.local.json`` with ``local``)."""
    if user:
        return Path("~/.claude/settings.json").expanduser()
    name = "settings.local.json" if local else "settings.json"
    return Path(project) / ".claude" / name


def _legacy_command(command: str) -> bool:
    """The exact command an earlier ``install`` wrote: the hook client run by path."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) in (6, 7)
        and words[1:3] == ["-I", "-S"]
        and words[3].endswith(CLIENT_FILE)
        and words[4] == "--hooks"
        and (len(words) == 6 or words[6] == "--fail-closed")
    )


def _legacy_http(handler: dict[str, Any]) -> bool:
    """The exact ``http`` hook an earlier ``install`` wrote."""
    return (
        set(handler) == {"type", "url", "headers", "allowedEnvVars", "timeout"}
        and str(handler.get("url") or "").rstrip("/").endswith(ROUTE)
        and handler.get("headers") == {"Authorization": f"Bearer ${TOKEN_ENV}"}
        and handler.get("allowedEnvVars") == [TOKEN_ENV]
        and handler.get("timeout") == 10
    )


def is_ours(handler: Any) -> bool:
    """Whether a hook handler entry was written by :func:`install` (this or an older version).

    Example:
        >>> is_ours({"type": "command", "command": "otelhooks claude-code --fail-closed"})
        False
    """
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "command":
        command = str(handler.get("command") or "")
        return command.rstrip().endswith(MARK) or _legacy_command(command)
    if handler.get("type") == "http":
        headers = handler.get("headers")
        marked = isinstance(headers, dict) and MARK_HEADER in headers
        return marked or _legacy_http(handler)
    return False


def client_command() -> str:
    """The fast hook command: this interpreter running the standard-library hook client."""
    from otelhooks.integrations.claude_code import hook_client

    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(hook_client.__file__)}"


def hook_url(base: str) -> str:
    """The hook route on a server given by its base URL (or the route itself)."""
    base = base.rstrip("/")
    return base if base.endswith(ROUTE) else base + ROUTE


def _handler(
    event: str,
    *,
    http: str | None,
    hooks_file: str,
    fail_closed: bool,
    traces_out: str | None,
    wait_s: float = 0.0,
) -> dict[str, Any]:
    # An approval hook holds the call until a person answers: Claude Code must wait longer.
    longer = math.ceil(wait_s) + 15 if wait_s and event in APPROVAL_EVENTS else 0
    if http is not None:
        return {
            "type": "http",
            "url": hook_url(http),
            "headers": {"Authorization": f"Bearer ${TOKEN_ENV}", MARK_HEADER: "1"},
            "allowedEnvVars": [TOKEN_ENV],
            "timeout": max(10, longer),
        }
    command = f"{client_command()} --hooks {shlex.quote(hooks_file)}"
    if traces_out:
        command += f" --traces-out {shlex.quote(traces_out)}"
    if fail_closed and event in GUARD_EVENTS:
        command += " --fail-closed"
    handler: dict[str, Any] = {
        "type": "command",
        "command": f"{command} {MARK}",
        "timeout": max(30, longer),
    }
    if event in ASYNC_EVENTS:
        handler["async"] = True
    return handler


def _groups(
    events: Sequence[str],
    *,
    http: str | None,
    hooks_file: str,
    fail_closed: bool,
    traces_out: str | None,
    wait_s: float = 0.0,
    watch: str = DEFAULT_WATCH,
) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for event in events:
        handler = _handler(
            event,
            http=http,
            hooks_file=hooks_file,
            fail_closed=fail_closed,
            traces_out=traces_out,
            wait_s=wait_s,
        )
        group: dict[str, Any] = {"hooks": [handler]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        elif event == "FileChanged":
            group = {"matcher": watch, **group}
        groups[event] = group
    return groups


def _warnings(events: Sequence[str], http: str | None, fail_closed: bool) -> list[str]:
    guards = [e for e in GUARD_EVENTS if e in events]
    if guards and http is not None:
        return [
            f"the {'/'.join(guards)} guards fail open when {hook_url(http)} is down: Claude "
            "Code reports a non-blocking hook error and runs the tool anyway; keep `otelhooks "
            "serve` running (with --fail-closed, a slow or failing hook denies), or use the "
            "command form with --fail-closed"
        ]
    if guards and not fail_closed:
        return [
            f"the {'/'.join(guards)} guards fail open: if the bridge itself fails (a broken "
            "hooks file, a crash) Claude Code runs the tool anyway; add --fail-closed to deny"
        ]
    return []


def _record(change: Change, edited: Edited) -> Change:
    change.before, change.after = edited.before, edited.after
    return change


def install(
    path: Path,
    *,
    http: str | None = None,
    hooks_file: str = DEFAULT_HOOKS_FILE,
    events: Sequence[str] = EVENTS,
    fail_closed: bool = False,
    traces_out: str | None = None,
) -> Change:
    """Merge our hook entries into the settings file at ``path`` (see the module doc).

    Raises:
        ValueError: the file cannot be edited without loss (it is left untouched).

    Example:
        >>> change = install(Path("/tmp/p/.claude/settings.json"), http="http://127.0.0.1:4319")
        >>> "PreToolUse" in change.added
        True
    """
    change = Change(path, warnings=_warnings(events, http, fail_closed))
    groups = _groups(
        events,
        http=http,
        hooks_file=hooks_file,
        fail_closed=fail_closed,
        traces_out=traces_out,
        wait_s=_longest_approval(_project_file(path, hooks_file)),
        watch=watch_list(_project_file(path, hooks_file)),
    )

    def edit(text: str, root: Node | None) -> str:
        if root is None:
            text = "{}\n"
        stripped, change.removed = strip_ours(text, path, is_ours)
        change.added = list(groups)
        return add_groups(stripped, path, groups)

    return _record(change, edit_settings(path, edit))


def uninstall(path: Path) -> Change:
    """Remove exactly our hook entries from the settings file at ``path``.

    Example:
        >>> settings = Path("project/.claude/settings.json")
        >>> _ = install(settings, http="http://127.0.0.1:4319")
        >>> removed = uninstall(settings).removed
        >>> "PreToolUse" in removed, settings.exists()  # a file only we had written goes
        (True, False)
    """
    change = Change(path)

    def edit(text: str, root: Node | None) -> str | None:
        if root is None:
            return None
        stripped, change.removed = strip_ours(text, path, is_ours)
        return stripped

    return _record(change, edit_settings(path, edit, create=False))
