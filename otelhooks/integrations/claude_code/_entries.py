"""What our Claude Code hook entries look like, and how an entry is known to be ours.

:func:`handler` is one event's entry (the command form, or the ``http`` form with
:data:`TOKEN_ENV`); :func:`groups` the matcher group per event; :func:`is_ours` the mark rule
:func:`~._install.install` and :func:`~._install.uninstall` (and the coding agents' installers)
strip by. See :mod:`._install` for why each event is synchronous or ``async``.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otelhooks._config._claude_mark import (
    CLIENT_FILE,
    MARK,
    MARK_HEADER,
    ROUTE,
    TOKEN_ENV,
    is_ours,
)
from otelhooks.integrations.claude_code._watch import DEFAULT_WATCH
from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS

__all__ = [
    "APPROVAL_EVENTS",
    "ASYNC_EVENTS",
    "BLOCK_ON_FAILURE_EVENTS",
    "CLIENT_FILE",
    "GUARD_EVENTS",
    "INSTALLED_EVENTS",
    "MARK",
    "MARK_HEADER",
    "ROUTE",
    "TOKEN_ENV",
    "cached_interpreter_notes",
    "client_command",
    "command_timeout",
    "groups",
    "handler",
    "hook_url",
    "is_ours",
    "sudo_home_notes",
]


# Every event the bridge maps (Claude Code 2.1), in Claude's lifecycle order, except
# WorktreeCreate (Claude Code takes that hook's stdout as the worktree path) and MessageDisplay
# (a hook per batch of displayed lines).
INSTALLED_EVENTS: tuple[str, ...] = (
    "Setup",
    "SessionStart",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PreSkillShellCommand",
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
    "PreModelSwitch",
    "PostModelSwitch",
    "Elicitation",
    "ElicitationResult",
    "Stop",
    "StopFailure",
    "Interrupt",
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
        "Interrupt",
        "SessionEnd",
        "PreSkillShellCommand",
        *TOOL_EVENTS,
    }
)
ASYNC_EVENTS = frozenset(INSTALLED_EVENTS) - SYNC_EVENTS
# a skill's inline shell command (Claude Code 2.1.332) is judged as its shell tool's call
GUARD_EVENTS = ("PreToolUse", "PreSkillShellCommand", "UserPromptSubmit")
# Events whose hook can stop or change what goes through, where a hook that gives no usable
# answer lets it through: ``--fail-closed`` writes ``onFailure: "block"`` on each. Claude Code
# 2.1.332 honours it on every event but Stop, SubagentStop, TaskCompleted and TeammateIdle
# (it warns and goes on there) and never on an ``async`` hook; these are synchronous. On a
# PostToolUse the output has reached the model already: the block tells it the check failed.
# Not PermissionRequest: a hook that fails there leaves Claude Code's own question to the person.
BLOCK_ON_FAILURE_EVENTS = (
    *GUARD_EVENTS,
    "UserPromptExpansion",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "ConfigChange",
    "PreCompact",
    "TaskCreated",
    "PreModelSwitch",
    "Elicitation",
    "ElicitationResult",
)
# events whose hooks may wait for a person (an ``approval:`` hook): their timeout is longer
APPROVAL_EVENTS = ("PreToolUse", "PreSkillShellCommand", "UserPromptSubmit", "PermissionRequest")


def client_command() -> str:
    """The fast hook command: this interpreter running the standard-library hook client."""
    from otelhooks.integrations.claude_code import hook_client

    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(hook_client.__file__)}"


def _cache_folders() -> list[Path]:
    """Where ``uvx`` and ``pipx run`` keep the environments they make for one command (a cache
    their own ``cache clean``, or an expiry, removes): the user's cache folder (XDG, macOS)."""
    home = Path.home()
    found = [os.environ.get("XDG_CACHE_HOME") or home / ".cache", home / "Library" / "Caches"]
    found += [os.environ.get("UV_CACHE_DIR") or "", home / ".local" / "pipx" / ".cache"]
    if os.environ.get("PIPX_HOME"):
        found.append(Path(os.environ["PIPX_HOME"]) / ".cache")
    return [Path(os.path.abspath(f)) for f in found if str(f)]


def cached_interpreter_notes() -> list[str]:
    """What install says when the hook command it writes names an interpreter or a hook client
    in a cache folder (``uvx otelhooks ... install``, ``pipx run``): once the cache is cleaned
    the command cannot start, and the CLI runs every tool unguarded (only a fail-closed guard
    blocks instead)."""
    from otelhooks.integrations.claude_code import hook_client

    for named in (sys.executable, hook_client.__file__):
        for path in {Path(os.path.abspath(named)), Path(os.path.realpath(named))}:
            for cache in _cache_folders():
                if path.is_relative_to(cache) or path.is_relative_to(os.path.realpath(cache)):
                    return [
                        f"no installed hook will run once {cache} is cleaned: the hook command "
                        f"names {named}, in a cache (an environment `uvx` or `pipx run` made "
                        "for one command, removed by its cache clean or expiry), and the CLI "
                        "runs every tool unguarded when the command cannot start; run install "
                        "from a lasting environment (`uv tool install otelhooks`, `pipx "
                        "install otelhooks`, a virtualenv)"
                    ]
    return []


def sudo_home_notes(path: Path, cli: str) -> list[str]:
    """What a user install says when it ran as root through ``sudo`` and wrote ``path`` under
    root's home (``sudo`` sets ``HOME`` to root's): the user who ran ``sudo`` runs ``cli`` with
    their own home's settings, which hold none of these hooks."""
    uid = os.environ.get("SUDO_UID", "")
    if sys.platform == "win32" or os.geteuid() != 0 or not uid.isdigit() or int(uid) == 0:
        return []
    import pwd

    try:
        user = pwd.getpwuid(int(uid))
    except KeyError:
        return []
    written = Path(os.path.abspath(path))
    theirs = Path(user.pw_dir)
    if not written.is_relative_to(Path.home()) or written.is_relative_to(theirs):
        return []
    return [
        f"no installed hook will run for {user.pw_name}: install ran as root (sudo) and wrote "
        f"{path}, in root's home, while {user.pw_name}'s {cli} reads the user settings under "
        f"{theirs}; run install without sudo"
    ]


def hook_url(base: str) -> str:
    """The hook route on a server given by its base URL (or the route itself)."""
    base = base.rstrip("/")
    return base if base.endswith(ROUTE) else base + ROUTE


def covering_timeout(wait_s: float) -> int:
    """Claude Code's hook timeout for an event an approval of ``wait_s`` seconds may hold: an
    approval hook holds the call until a person answers, and a hook that times out first is a
    non-blocking error (the tool runs), so Claude Code must wait longer.

    Example:
        >>> covering_timeout(60)
        75
    """
    return math.ceil(wait_s) + 15


def command_timeout(guards_s: float) -> int:
    """The timeout of every command entry (and the ``--hook-timeout`` it tells the bridge):
    30 s, or one that covers ``guards_s``, the longest the hooks deciding one event may take
    one after another (their own timeouts: a Claude Code settings file's guard with
    ``"timeout": 90``). Claude Code would wait that long for them; the bridge does too, up to
    this timeout less 5 s, and blocks an event whose guards it cannot wait for.

    Example:
        >>> command_timeout(0), command_timeout(90)
        (30, 105)
    """
    return max(30, covering_timeout(guards_s) if guards_s else 0)


def handler(
    event: str,
    *,
    http: str | None,
    hooks_file: str,
    fail_closed: bool,
    traces_out: str | None,
    wait_s: float = 0.0,
    guards_s: float = 0.0,
) -> dict[str, Any]:
    """Our entry for ``event``: an ``http`` hook posting to ``http``, else the command form
    (``guards_s``: :func:`command_timeout`)."""
    longer = covering_timeout(wait_s) if wait_s and event in APPROVAL_EVENTS else 0
    guard_closed = fail_closed and event in GUARD_EVENTS
    entry: dict[str, Any]
    if http is not None:
        entry = {
            "type": "http",
            "url": hook_url(http),
            "headers": {"Authorization": f"Bearer ${TOKEN_ENV}", MARK_HEADER: "1"},
            "allowedEnvVars": [TOKEN_ENV],
            "timeout": max(10, longer),
        }
    else:
        command = f"{client_command()} --hooks {shlex.quote(hooks_file)}"
        if traces_out:
            command += f" --traces-out {shlex.quote(traces_out)}"
        if guard_closed:
            command += " --fail-closed"
        # one value for every event: the daemon's socket is named by the command's arguments
        timeout = command_timeout(guards_s)
        command += f" --hook-timeout {timeout}"
        entry = {"type": "command", "command": f"{command} {MARK}", "timeout": max(timeout, longer)}
        if event in ASYNC_EVENTS:
            entry["async"] = True
    if fail_closed and event in BLOCK_ON_FAILURE_EVENTS:
        # What the bridge cannot answer itself (a server that is down or silent, an interpreter
        # that is gone, a client killed at Claude Code's timeout) Claude Code blocks, instead of
        # its default of running the tool after a non-blocking error.
        entry["onFailure"] = "block"
    return entry


def groups(
    events: Sequence[str],
    *,
    http: str | None,
    hooks_file: str,
    fail_closed: bool,
    traces_out: str | None,
    wait_s: float = 0.0,
    watch: str = DEFAULT_WATCH,
    guards_s: float = 0.0,
) -> dict[str, dict[str, Any]]:
    """One matcher group per event, holding our entry (tool events match every tool)."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        entry = handler(
            event,
            http=http,
            hooks_file=hooks_file,
            fail_closed=fail_closed,
            traces_out=traces_out,
            wait_s=wait_s,
            guards_s=guards_s,
        )
        group: dict[str, Any] = {"hooks": [entry]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        elif event == "FileChanged":
            group = {"matcher": watch, **group}
        out[event] = group
    return out
