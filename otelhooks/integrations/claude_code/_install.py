"""``otelhooks claude-code install`` / ``uninstall``: our hook entries in Claude Code's settings.

:func:`install` merges one matcher group per hook event into a settings file, idempotently: it
first removes the entries that are ours, then adds the current ones, and never touches any other
hook, key or group. :func:`uninstall` removes exactly ours (and the groups and events they leave
empty). Each edit is a minimal splice of the file's text, under a lock, through symlinks
(:mod:`._settings_file`): removing what install added gives back the file's bytes and mode, and
no file where there was none. A file that cannot be edited without loss (a key given twice,
not strict JSON) is refused, untouched, and so is one Claude Code ignores whole, hooks included
(a known setting of the wrong type: :func:`refuse_skipped`).

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
crashes, a hook killed at its timeout): Claude Code treats it as a non-blocking error and runs
the tool. :attr:`SettingsChange.warnings` says so. ``--fail-closed`` closes both doors: the
bridge answers its own failures with a deny, and the guard entries carry ``onFailure: "block"``,
so Claude Code blocks the call when the hook gives no usable answer at all (a Claude Code that
predates the field ignores it).

What each entry looks like and how ours are known is :mod:`._entries`. The public names are
re-exported from :mod:`otelhooks.integrations.claude_code`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from otelhooks._actions._approval import longest_approval_of
from otelhooks._config import load_config
from otelhooks._config._claude_types import wrong_types
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook
from otelhooks.integrations.claude_code._entries import (
    ASYNC_EVENTS,
    CLIENT_FILE,
    GUARD_EVENTS,
    INSTALLED_EVENTS,
    MARK,
    MARK_HEADER,
    TOKEN_ENV,
    cached_interpreter_notes,
    client_command,
    groups,
    hook_url,
    is_ours,
)
from otelhooks.integrations.claude_code._hook_splices import replace_ours, strip_ours
from otelhooks.integrations.claude_code._json_text import Node
from otelhooks.integrations.claude_code._settings_file import Edited, edit_settings
from otelhooks.integrations.claude_code._watch import watch_list
from otelhooks.integrations.coding_agents._guard_time import longest_guards_s

# the rules of our entries live in _entries; these are named here too, where the installer is
__all__ = [
    "ASYNC_EVENTS",
    "CLIENT_FILE",
    "DEFAULT_HOOKS_FILE",
    "DEFAULT_TRACES",
    "INSTALLED_EVENTS",
    "MARK",
    "MARK_HEADER",
    "TOKEN_ENV",
    "SettingsChange",
    "client_command",
    "install",
    "is_ours",
    "settings_path",
    "uninstall",
]

DEFAULT_HOOKS_FILE = ".claude/otelhooks.yaml"
DEFAULT_TRACES = "~/.otelhooks/claude-code-traces.jsonl"
# the folder of the user's Claude Code settings, when it is not ~/.claude
USER_CONFIG_ENV = "CLAUDE_CONFIG_DIR"


def _project_file(settings: Path, hooks_file: str) -> Path:
    """``hooks_file`` as Claude Code's hooks resolve it: relative to the project folder."""
    given = Path(hooks_file).expanduser()
    return given if given.is_absolute() else settings.parent.parent / given


# How long install waits for the hooks file to load: loading imports its `script:` guards, and a
# module that hangs as it is imported must not hang the install with it.
READ_S = 5.0


def read_hooks(hooks_file: Path) -> tuple[Hook, ...] | None:
    """The hooks of ``hooks_file`` as install reads them: none when the file is missing or
    invalid (``validate`` reports that), None when it did not load within :data:`READ_S` (the
    load goes on, on a daemon thread left to it)."""
    if not hooks_file.is_file():
        return ()
    found: list[tuple[Hook, ...]] = []

    def load() -> None:
        try:
            found.append(load_config([hooks_file]).hooks)
        except (ConfigError, OSError):
            found.append(())

    reader = threading.Thread(target=load, name="otelhooks-install-read", daemon=True)
    reader.start()
    reader.join(READ_S)
    return found[0] if found else None


def slow_hooks_warning(hooks_file: Path, kept: str) -> str:
    """What install says when :func:`read_hooks` gave up on ``hooks_file``: the hook timeouts
    are ``kept``, not made to cover its approvals."""
    return (
        f"{hooks_file} did not load within {READ_S:g} s (a guard's module that hangs as it is "
        f"imported?), so the hook timeouts stay {kept}: the CLI runs the tool when an "
        "approval: holds a call longer than that; re-run install once the file loads"
    )


@dataclass
class SettingsChange:
    """What :func:`install` or :func:`uninstall` did to one settings file.

    Attributes:
        path: the settings file.
        added: the hook events whose otelhooks entry was written.
        removed: the hook events whose earlier otelhooks entry was taken out (an install
            replaces ours: a re-install lists the same events in both).
        warnings: what the user should know (a guard that fails open), one sentence each.
        before: the file's bytes before (``None``: there was no file).
        after: the file's bytes after (``None``: there is no file now).

    Example:
        >>> change = install(Path("project/.claude/settings.json"), http="http://127.0.0.1:4319")
        >>> change.verb, install(change.path, http="http://127.0.0.1:4319").verb
        ('created', 'unchanged')
    """

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
    """``~/.claude/settings.json`` with ``user`` (``$CLAUDE_CONFIG_DIR/settings.json`` when that
    is set), else ``PROJECT/.claude/settings.json`` (or ``settings.local.json`` with ``local``):
    the files :func:`install` edits.

    Example:
        >>> settings_path(project="/work/p", local=True).as_posix()
        '/work/p/.claude/settings.local.json'
    """
    if user:
        # Claude Code reads the user's settings from $CLAUDE_CONFIG_DIR alone when it is set
        # (taken as written: it expands no `~`): hooks written to ~/.claude never ran
        folder = os.environ.get(USER_CONFIG_ENV)
        return Path(folder) / "settings.json" if folder else Path.home() / ".claude/settings.json"
    name = "settings.local.json" if local else "settings.json"
    return Path(project) / ".claude" / name


def _token_note(http: str | None, blocks: bool) -> list[str]:
    """Claude Code sends the token from its own environment: without it, serve refuses every
    hook (401), which Claude Code takes for a hook that failed, saying nothing in `-p` mode."""
    if http is None or os.environ.get(TOKEN_ENV):
        return []
    then = "blocks every call a guard would judge" if blocks else "runs every tool unguarded"
    return [
        f"${TOKEN_ENV} is not set here: run Claude Code with it set to serve's ingest token, "
        f"or {hook_url(http)} refuses every hook (HTTP 401) and Claude Code {then}"
    ]


def _warnings(events: Sequence[str], http: str | None, fail_closed: bool) -> list[str]:
    guards = [e for e in GUARD_EVENTS if e in events]
    if not guards or fail_closed:
        return _token_note(http, bool(guards))
    if http is not None:
        return [
            f"the {'/'.join(guards)} guards fail open when {hook_url(http)} is down, silent or "
            "refuses the token: Claude Code reports a non-blocking hook error and runs the tool "
            "anyway; add --fail-closed to have Claude Code block instead (and run `otelhooks "
            "serve --fail-closed` so a failing hook denies)",
            *_token_note(http, False),
        ]
    return [
        f"the {'/'.join(guards)} guards fail open: if the bridge itself fails (a broken "
        "hooks file, a crash, no answer in time) Claude Code runs the tool anyway; add "
        "--fail-closed to deny"
    ]


def refuse_skipped(path: Path, text: str) -> None:
    """Refuse a settings file Claude Code ignores whole (a known setting of the wrong type):
    hooks written there would never run, and install would say ``updated``."""
    try:
        wrong = wrong_types(json.loads(text)) if text.strip() else []
    except ValueError:
        return  # not JSON: the settings editor refuses it, saying why
    if wrong:
        raise ValueError(
            f"{path}: Claude Code ignores this whole file, hooks included, because "
            f"{'; '.join(wrong)}: a guard installed here would never run; fix "
            f"{'that setting' if len(wrong) == 1 else 'those settings'} and install again"
        )


def _record(change: SettingsChange, edited: Edited) -> SettingsChange:
    change.before, change.after = edited.before, edited.after
    return change


def install(
    path: str | os.PathLike[str],
    *,
    http: str | None = None,
    hooks_file: str = DEFAULT_HOOKS_FILE,
    events: Sequence[str] = INSTALLED_EVENTS,
    fail_closed: bool = False,
    traces_out: str | None = None,
) -> SettingsChange:
    """Merge our hook entries into the one settings file at ``path`` (see the module doc).

    :func:`~._install_project.install_project` chooses the file the way the CLI does; this
    writes where it is told, and nothing else (no starter hook file, no traces folder).

    Args:
        path: the settings file (created, with its folder, when missing).
        http: the base URL of ``otelhooks serve`` (or its hook route): write ``http`` hooks
            posting there; ``None``: command hooks running the hook client.
        hooks_file: the otelhooks hook file the command hooks run, relative to the project
            folder (the settings file's grandparent) or absolute.
        events: the Claude Code hook events to hook: some of :data:`INSTALLED_EVENTS` (the
            default; any other is refused: ``WorktreeCreate`` would take our output as a path).
        fail_closed: a failing bridge denies ``PreToolUse``, ``PreSkillShellCommand`` (a
            skill's inline shell command) and ``UserPromptSubmit`` (command form), and the
            entries of every event whose hook can stop or change what goes through
            (:data:`~._entries.BLOCK_ON_FAILURE_EVENTS`) carry ``onFailure: "block"`` (both
            forms): Claude Code blocks the call when the hook itself cannot answer (a server
            that is down, an interpreter that is gone, a timeout) instead of running the tool.
        traces_out: command form: the OTLP JSON lines file the spans go to (``None``: none).

    Returns:
        What happened to the file; :attr:`SettingsChange.warnings` says where a guard fails open
        and, first, when the command names an interpreter in a cache folder (``uvx``, ``pipx
        run``), which goes with the cache.

    Raises:
        ValueError: an event is not one of :data:`INSTALLED_EVENTS`, the file cannot be
            edited without loss, or Claude Code would ignore it whole (a known setting of the
            wrong type, named): it is left untouched.
        OSError: the file cannot be read or written.

    Example:
        >>> change = install("project/.claude/settings.json", http="http://127.0.0.1:4319")
        >>> "PreToolUse" in change.added, change.verb
        (True, 'created')
    """
    path = Path(path)
    # a str is a sequence too: its letters are no events
    unknown = (
        [events] if isinstance(events, str) else [e for e in events if e not in INSTALLED_EVENTS]
    )
    if unknown:
        raise ValueError(
            f"not events install hooks: {', '.join(map(repr, unknown))} (events is a list of "
            f"some of {', '.join(INSTALLED_EVENTS)})"
        )
    change = SettingsChange(path, warnings=_warnings(events, http, fail_closed))
    if http is None:  # the command form names this interpreter
        change.warnings[:0] = cached_interpreter_notes()
    project_hooks = _project_file(path, hooks_file)
    hooks = read_hooks(project_hooks)
    if hooks is None:
        change.warnings.append(slow_hooks_warning(project_hooks, "Claude Code's default"))
    ours = groups(
        events,
        http=http,
        hooks_file=hooks_file,
        fail_closed=fail_closed,
        traces_out=traces_out,
        wait_s=longest_approval_of(hooks or ()),
        watch=watch_list(hooks or ()),
        guards_s=longest_guards_s(hooks or (), events),
    )

    def edit(text: str, root: Node | None) -> str:
        if root is None:
            text = "{}\n"
        refuse_skipped(path, text)
        new, change.removed = replace_ours(text, path, is_ours, ours, root)
        change.added = list(ours)
        return new

    return _record(change, edit_settings(path, edit))


def uninstall(path: str | os.PathLike[str]) -> SettingsChange:
    """Remove exactly our hook entries from the settings file at ``path`` (:func:`is_ours`).

    Every other hook, key and group stays byte for byte; a file that held only ours is deleted,
    and a missing file is left missing.

    Raises:
        ValueError: the file cannot be edited without loss (it is left untouched).
        OSError: the file cannot be read or written.

    Example:
        >>> settings = Path("project/.claude/settings.json")
        >>> _ = install(settings, http="http://127.0.0.1:4319")
        >>> removed = uninstall(settings).removed
        >>> "PreToolUse" in removed, settings.exists()  # a file only we had written goes
        (True, False)
    """
    path = Path(path)
    change = SettingsChange(path)

    def edit(text: str, root: Node | None) -> str | None:
        if root is None:
            return None
        stripped, change.removed = strip_ours(text, path, is_ours, root)
        return stripped

    return _record(change, edit_settings(path, edit, create=False))
