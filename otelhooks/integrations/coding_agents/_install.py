"""``otelhooks codex install`` / ``otelhooks gemini install``: our hooks in each CLI's file.

The same splices and marks as ``otelhooks claude-code install``
(:func:`otelhooks.integrations.claude_code.install`): one matcher group per event merged into
the file's ``hooks`` object, idempotently (ours removed, then the current ones added), every
other hook, key and group left byte for byte; ``uninstall`` removes exactly ours (a command
ending with the ``# otelhooks:installed`` mark) and gives back the file's earlier bytes, or no
file where there was none.

- **Codex CLI**: ``PROJECT/.codex/hooks.json``, or ``$CODEX_HOME/hooks.json`` (``~/.codex``)
  with ``user``. Codex loads a project's hooks only for a project its ``config.toml`` marks
  ``trust_level = "trusted"``, and runs a hook only once its content is trusted; an untrusted
  hook is skipped **silently** (:func:`codex_trust_notes` says what to do).
- **Gemini CLI**: the ``hooks`` of ``PROJECT/.gemini/settings.json``, or
  ``~/.gemini/settings.json`` with ``user``; each handler is named ``otelhooks`` and its
  timeout is in milliseconds (Gemini's unit). A project's hooks load only in a trusted folder.

Both run the fast command bridge (the standard-library hook client and its daemon, with
``--dialect``): neither CLI has an ``http`` hook type here (Codex 0.171 and Gemini 0.61 run
``command`` hooks), so ``otelhooks serve``'s HTTP route is not used by them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otelhooks._actions._approval import longest_approval_of
from otelhooks.integrations.claude_code._entries import (
    APPROVAL_EVENTS,
    MARK,
    cached_interpreter_notes,
    client_command,
    covering_timeout,
    is_ours,
    sudo_home_notes,
)
from otelhooks.integrations.claude_code._hook_splices import replace_ours
from otelhooks.integrations.claude_code._install import (
    SettingsChange,
    read_hooks,
    slow_hooks_warning,
    uninstall,
)
from otelhooks.integrations.claude_code._json_text import Node
from otelhooks.integrations.claude_code._settings_file import edit_settings
from otelhooks.integrations.coding_agents._codex_servers import (
    codex_config_files,
    ignored_server_notes,
)
from otelhooks.integrations.coding_agents._dialects import dialect_named
from otelhooks.integrations.coding_agents._gemini_redaction import redaction_notes
from otelhooks.integrations.coding_agents._hooks_off import (
    codex_home,
    codex_hooks_off,
    codex_trust_notes,
    gemini_hooks_off,
    gemini_reads,
    gemini_system_files,
)
from otelhooks.integrations.coding_agents._neighbours import neighbour_notes

__all__ = [
    "AgentInstall",
    "codex_hooks_off",
    "codex_trust_notes",
    "gemini_hooks_off",
    "gemini_system_files",
    "hooks_path",
    "install_agent",
    "uninstall_agent",
]

# the bridge decides within 25 s (its daemon's own limit): the CLI waits a little longer
_TIMEOUT_S = 30
# The handler types Codex 0.171 parses; for any other it rejects the whole hooks.json ("unknown
# variant"), so no hook of that file runs, ours included (tests/coding_agents_cli).
_CODEX_HANDLER_TYPES = frozenset({"command", "mcp_tool", "prompt", "agent"})
# Gemini CLI 0.61 reads a project's settings before it takes --skip-trust as trusting the
# folder: the run goes on with none of the project's hooks (tests/coding_agents_cli)
_GEMINI_TRUST = (
    "Gemini CLI runs a project's hooks only in a trusted folder, and `gemini --skip-trust` (what "
    "it suggests for headless runs) loads none of them: the guards never see a tool call, without "
    "a word; trust the folder (GEMINI_CLI_TRUST_WORKSPACE=true, or in interactive Gemini CLI), or "
    "install with --user (the user's hooks run in any folder)"
)
# Gemini CLI 0.61 reads the .gemini/settings.json of the folder it starts in, none above it (a
# git repository's root included): checked with the real CLI (tests/coding_agents_cli)
_GEMINI_FOLDER = (
    "Gemini CLI reads a project's .gemini/settings.json only when started in that folder "
    "({project}): a session started in a subfolder runs none of these hooks, without a word; "
    "start Gemini CLI there, or install with --user"
)
# what Gemini CLI 0.61 takes for a variable in a settings string (JavaScript's \w is ASCII)
_GEMINI_VARIABLE = re.compile(r"\$(?=[A-Za-z0-9_{])")
_TOOL_EVENTS = frozenset(
    {"PreToolUse", "PermissionRequest", "PostToolUse", "BeforeTool", "AfterTool"}
)


@dataclass(frozen=True, slots=True)
class AgentInstall:
    """Where one CLI's hooks go and how its handlers look."""

    dialect: str
    folder: str  # the project folder's config folder (.codex, .gemini)
    file: str  # hooks.json, settings.json
    timeout_scale: int  # Gemini counts milliseconds
    named: bool  # Gemini handlers carry a name

    def user_folder(self) -> Path:
        if self.dialect == "codex":
            return codex_home()
        # Gemini CLI 0.61 takes $GEMINI_CLI_HOME for the home its user settings are under
        return Path(os.environ.get("GEMINI_CLI_HOME") or "~").expanduser() / self.folder


_AGENTS = {
    "codex": AgentInstall("codex", ".codex", "hooks.json", 1, named=False),
    "gemini": AgentInstall("gemini", ".gemini", "settings.json", 1000, named=True),
}


def _agent(dialect: str) -> AgentInstall:
    try:
        return _AGENTS[dialect]
    except KeyError:
        known = ", ".join(_AGENTS)
        raise ValueError(f"no installer for dialect {dialect!r} (known: {known})") from None


def hooks_path(dialect: str, *, project: str | os.PathLike[str] = ".", user: bool = False) -> Path:
    """The file :func:`install_agent` edits for ``dialect`` (``codex`` or ``gemini``): the
    project's, or with ``user`` the user's (``$CODEX_HOME/hooks.json``, ``~/.gemini/...``, or
    ``$GEMINI_CLI_HOME/.gemini/...`` when set, as Gemini CLI reads it).

    Raises:
        ValueError: ``dialect`` has no installer here (Claude Code's is
            :func:`otelhooks.integrations.claude_code.install_project`).

    Example:
        >>> hooks_path("gemini", project="/work/p").as_posix()
        '/work/p/.gemini/settings.json'
    """
    agent = _agent(dialect)
    folder = agent.user_folder() if user else Path(project) / agent.folder
    return folder / agent.file


def _command(dialect: str, hooks_file: Path, traces_out: str | None, fail_closed: bool) -> str:
    command = f"{client_command()} --dialect {dialect} --hooks {shlex.quote(str(hooks_file))}"
    if traces_out:
        command += f" --traces-out {shlex.quote(traces_out)}"
    if fail_closed:
        command += " --fail-closed"
    return f"{command} {MARK}"


def gemini_literal(command: str) -> str:
    """``command`` as Gemini CLI must be given it to run it as written.

    Gemini CLI replaces ``$NAME`` and ``${NAME}`` in every string of its settings with its own
    environment's value before it runs a hook, with no escape: a path with ``$HOME`` in it
    named another file, and the guard could not start (the tool ran). Every such ``$`` here is
    inside a :func:`shlex.quote` path (single quotes), and the commands use no shell variable
    (``$?`` only), so the quote is closed right after it: ``'a$''HOME'`` is ``a$HOME`` to the
    shell and holds no ``$`` followed by a name for Gemini CLI.

    Example:
        >>> gemini_literal("cat '/p/$HOME/x' # otelhooks:installed")
        "cat '/p/$''HOME/x' # otelhooks:installed"
    """
    return _GEMINI_VARIABLE.sub("$''", command)


def _closed(command: str) -> str:
    """The tool guard's command under ``--fail-closed``: the bridge's own answer (exit 0 or 2)
    as it is, any other exit (the interpreter gone, a crash) a block. Neither CLI has Claude
    Code's ``onFailure``, and Codex runs the tool after a hook that cannot start, fail-closed
    or not; both run hook commands with a shell."""
    bare = command.removesuffix(f" {MARK}")
    # `$?` still holds the bridge's exit inside a branch; no named variable, which Gemini CLI
    # would replace with its environment's (see gemini_literal)
    return (
        f"{bare}; case $? in 0|2) exit $?;; *) "
        'echo "otelhooks: the guard could not run (exit $?): blocked (--fail-closed)" >&2; '
        f"exit 2;; esac {MARK}"
    )


def _groups(
    agent: AgentInstall,
    events: Sequence[str],
    command: str,
    *,
    fail_closed: bool,
    wait_s: float = 0.0,
) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    guard = dialect_named(agent.dialect).events
    # an approval holds the call until a person answers: a CLI that gave up first (it kills the
    # hook at its timeout) runs the tool, the approval's default deny never heard
    longer = covering_timeout(wait_s) if wait_s else 0
    for event in events:
        closed = fail_closed and guard.get(event) == "PreToolUse"
        text = _closed(command) if closed else command
        handler: dict[str, Any] = {
            "type": "command",
            "command": gemini_literal(text) if agent.dialect == "gemini" else text,
        }
        if agent.named:
            handler = {"name": "otelhooks", **handler}
        # Codex clamps a SessionEnd hook to 3 s (and says so on every run)
        seconds = 3 if agent.dialect == "codex" and event == "SessionEnd" else _TIMEOUT_S
        if guard.get(event) in APPROVAL_EVENTS:
            seconds = max(seconds, longer)
        handler["timeout"] = seconds * agent.timeout_scale
        group: dict[str, Any] = {"hooks": [handler]}
        if event in _TOOL_EVENTS:
            group = {"matcher": "*", **group}
        groups[event] = group
    return groups


def install_agent(
    dialect: str,
    *,
    project: str | os.PathLike[str] = ".",
    user: bool = False,
    hooks_file: str | os.PathLike[str],
    traces_out: str | None = None,
    fail_closed: bool = False,
) -> SettingsChange:
    """Merge our hooks into ``dialect``'s file, :func:`hooks_path` (see the module doc).

    What ``otelhooks codex|gemini install`` runs; the command also writes the starter hook
    file when ``hooks_file`` is missing and creates a ``~`` traces folder ``0700``.

    Args:
        dialect: ``codex`` or ``gemini``.
        project: the project folder (its ``.codex`` or ``.gemini`` folder gets the file).
        user: the user's file instead of the project's.
        hooks_file: the otelhooks hook file the hooks run, relative to ``project`` or absolute
            (written absolute: Codex gives hooks no project-folder variable).
        traces_out: the OTLP JSON lines file the spans go to (``None``: none).
        fail_closed: a failing bridge denies the tool call instead of letting it run, and the
            tool guard's command blocks when the bridge cannot answer at all (exit neither 0
            nor 2: the interpreter gone, a crash).

    Returns:
        What happened to the file; its warnings say first when the hook command names an
        interpreter in a cache folder (``uvx``, ``pipx run``: gone with the cache), and when the
        CLI would run none of the hooks (:func:`codex_hooks_off`, :func:`gemini_hooks_off`: a
        setting of the user's, the project's or an administrator's; a ``--user`` install run
        through ``sudo`` into root's home), then where a guard fails open and, for Codex, what
        it needs before it runs the hooks (:func:`codex_trust_notes`), for a Gemini project
        install that Gemini CLI runs them only in a trusted folder (``--skip-trust`` skips them),
        and the other hooks of the tool guard's event (in the file, and the user's for a project
        install), whose argument rewrites the CLI applies unchecked.

    Raises:
        ValueError: ``dialect`` has no installer, the file cannot be edited without loss, or
            (Codex) it holds a hook of a type Codex rejects the whole file for, so no hook in it
            would run; the file is left untouched.
        OSError: the file cannot be read or written.

    Example:
        >>> change = install_agent("gemini", project="p", hooks_file="hooks.yaml")
        >>> change.path.as_posix(), change.verb, "BeforeTool" in change.added
        ('p/.gemini/settings.json', 'created', True)
    """
    agent = _agent(dialect)
    path = hooks_path(dialect, project=project, user=user)
    # not parsed here: edit_settings refuses what it cannot edit (a parse of a 13 MB file took
    # seconds), and the checks below read it as read_regular does, never holding on a pipe
    hooks = Path(hooks_file).expanduser()
    hooks = hooks if hooks.is_absolute() else (Path(project) / hooks).absolute()
    command = _command(dialect, hooks, traces_out, fail_closed)
    loaded = read_hooks(hooks)
    wait_s = None if loaded is None else longest_approval_of(loaded)
    groups = _groups(
        agent,
        list(dialect_named(dialect).events),
        command,
        fail_closed=fail_closed,
        wait_s=wait_s or 0.0,
    )
    warnings = (
        []
        if fail_closed
        else [
            "the PreToolUse guards fail open: if the bridge itself fails (a broken hooks file, a "
            "crash) the CLI runs the tool anyway; add --fail-closed to deny"
        ]
    )
    if wait_s is None:
        warnings.append(slow_hooks_warning(hooks, f"{_TIMEOUT_S} s"))
    if dialect == "gemini":
        system, defaults = gemini_system_files()
        own = [path] if user else [path, hooks_path("gemini", user=True)]
        files = [system, *own, defaults]
        warnings[:0] = gemini_hooks_off(
            [f for f in files if f in own or gemini_reads(f)], system=system
        )
        if not user:
            warnings += [_GEMINI_TRUST, _GEMINI_FOLDER.format(project=Path(project).absolute())]
        layers = [defaults, hooks_path("gemini", user=True), *([] if user else [path]), system]
        warnings[:0] = redaction_notes(os.environ, hooks, loaded or (), layers)
    if dialect == "codex":
        if not fail_closed:
            warnings.append(
                "Codex does not say why a hook failed (`codex exec` prints `hook: PreToolUse "
                "Failed`, `codex exec --json` nothing): with --fail-closed the model is told"
            )
        warnings[:0] = codex_hooks_off(path, None if user else project)
        configs = codex_config_files(None if user else project)
        warnings[:0] = ignored_server_notes(configs, loaded or ())
        warnings += codex_trust_notes(path, None if user else Path(project))
    warnings[:0] = cached_interpreter_notes()
    if user:
        warnings[:0] = sudo_home_notes(path, dialect_named(dialect).display_name)
    others = [] if user else [hooks_path(dialect, user=True)]
    if dialect == "codex":  # Codex runs the hooks of its config.toml files' `[hooks]` too
        others += codex_config_files(None if user else project)
    warnings += neighbour_notes(dialect, dialect_named(dialect).display_name, [path, *others])
    change = SettingsChange(path, warnings=warnings)

    def edit(text: str, root: Node | None) -> str:
        if root is None:
            text = "{}\n"
        elif dialect == "codex":
            _refuse_what_codex_rejects(text, path)
        new, change.removed = replace_ours(text, path, is_ours, groups, root)
        change.added = list(groups)
        return new

    edited = edit_settings(path, edit)
    change.before, change.after = edited.before, edited.after
    return change


def _refuse_what_codex_rejects(text: str, path: Path) -> None:
    """Raise where Codex would reject the whole file: our guards there would never run, and
    Codex says so only in ``codex exec --json``'s items."""
    try:
        events = json.loads(text).get("hooks")
    except (ValueError, AttributeError):
        return  # edit_settings says what is wrong with the file itself
    if not isinstance(events, dict):
        return
    for event, groups in events.items():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            problems = [_codex_rejects(h) for h in (handlers if isinstance(handlers, list) else ())]
            matcher = group.get("matcher") if isinstance(group, dict) else None
            if matcher is not None and not isinstance(matcher, str):
                problems.insert(0, f"with a matcher that is not a string ({matcher!r})")
            for problem in filter(None, problems):
                raise ValueError(
                    f"{path}: a {event} hook {problem}: Codex CLI rejects the whole file for it "
                    f"(it runs {', '.join(sorted(_CODEX_HANDLER_TYPES))} hooks, each as its "
                    "schema says), without a word, so no hook there would run, otelhooks' "
                    "guards included; change or remove that hook first (the file is left "
                    "untouched)"
                )


def _codex_rejects(handler: Any) -> str | None:
    """What in one handler makes Codex 0.171 reject its file (each checked with the real CLI;
    a key it does not know it accepts)."""
    kind = handler.get("type") if isinstance(handler, dict) else None
    if kind not in _CODEX_HANDLER_TYPES:
        return f"of type {kind!r}"
    if kind == "command" and not isinstance(handler.get("command"), str):
        return "without a `command` string"
    timeout = handler.get("timeout")
    whole = isinstance(timeout, int) and not isinstance(timeout, bool) and timeout >= 0
    if timeout is not None and not whole:
        return f"with a timeout that is not a whole number of seconds ({timeout!r})"
    return None


def uninstall_agent(
    dialect: str, *, project: str | os.PathLike[str] = ".", user: bool = False
) -> SettingsChange:
    """Remove exactly our hooks from ``dialect``'s file (the commands ending with the mark).

    Every other hook, key and group stays byte for byte; a file that held only ours is deleted.

    Raises:
        ValueError: ``dialect`` has no installer, or the file cannot be edited without loss (it
            is left untouched).
        OSError: the file cannot be read or written.

    Example:
        >>> _ = install_agent("codex", project="p", hooks_file="hooks.yaml")
        >>> change = uninstall_agent("codex", project="p")
        >>> "PreToolUse" in change.removed, change.verb
        (True, 'deleted')
    """
    # the same edit as Claude Code's settings: our entries are found by the same mark
    return uninstall(hooks_path(dialect, project=project, user=user))
