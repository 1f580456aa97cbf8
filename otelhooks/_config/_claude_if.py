"""Claude Code's handler ``if`` field: one permission rule that gates a handler on a tool event.

``"if": "Bash(git *)"`` runs the handler only when the tool call matches the rule, in Claude
Code's permission-rule syntax (hooks reference, "Common fields" and the Bash ``if`` table, read
2026-11-30). Claude Code calls the filter best effort and lets it *fail open* (the handler runs)
when it cannot decide; so does this one:

- ``Tool`` or ``Tool(*)``: the tool name (``*`` wildcards; ``mcp__server`` covers the server's
  tools, also as Codex CLI names them: ``mcp__my-files`` its ``mcp__my_files__delete_file``).
- ``Bash(pattern)`` / ``PowerShell(pattern)``: the pattern (``*`` matches anything, a trailing
  ``:*`` is a prefix) against every subcommand: the command is split at ``&&``, ``||``, ``;``,
  ``|`` and line breaks, and also at ``&``, ``|&``, ``(``, ``)``, ``{`` and ``}`` (a background
  job, a subshell, a group), commands inside ``$(...)`` and backticks are checked too, and
  leading ``VAR=value`` assignments, ``!``, ``time`` and the shell's keywords (``if``, ``then``,
  ``do`` ...) are stripped. Each finer split only adds subcommands, so a handler runs for
  at least the commands it ran for before. A pattern that names more than the command runs the
  handler anyway when the command holds ``$(``, a backtick or ``$VAR``.
- File tools (``Read``, ``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit``, ``Glob``,
  ``Grep``): a gitignore-style glob against the path relative to the event's folder (its
  ``cwd``; the process's without one), ``..`` and a leading ``~/`` resolved as the tool does
  (``*.ts`` at any depth, ``src/**`` and ``./src/**`` under ``src``, ``//abs/**`` absolute,
  ``~/`` the home folder); ``/src/**`` is under the project's ``src`` (the folder Claude Code
  started in, its ``CLAUDE_PROJECT_DIR``, whatever folder a ``cd`` moved the session to; checked
  with Claude Code 2.1.332, which reads it so from project and user settings alike), under the
  event's folder when the project is not known. A path through a folder link matches as written
  and where it lands, so a guard narrowed to a folder is not escaped through a link to it.
- ``WebFetch(domain:example.com)``: the URL's host or a subdomain.
- Anything else with a pattern: runs (fail open), and so does a tool the CLI matches by the
  rule's tool name (Codex's ``apply_patch`` by ``Edit`` and ``Write``, and a Codex shell
  command that runs its patcher): its arguments are not that tool's.
- Another CLI's name of the rule's tool (Gemini CLI's ``run_shell_command`` for ``Bash``,
  ``write_file`` for ``Write``, ``replace`` for ``Edit``, ``read_file`` for ``Read``; Codex's
  ``exec_command``): its arguments are read as the rule's tool's. Before, such a call never
  matched the rule, and a guard gated by ``Bash(rm *)`` let Gemini CLI's ``rm -r`` run.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final
from urllib.parse import urlsplit

from otelhooks._events import HookEvent
from otelhooks._paths import working_folder
from otelhooks._tool_kinds import KIND_NAMES, cli_aliases

__all__ = ["IfGate", "IfRule", "parse_if"]

_RULE: Final = re.compile(r"^\s*(?P<tool>[^()\s]+)\s*(?:\((?P<spec>.*)\))?\s*$", re.DOTALL)
_SHELLS: Final = frozenset({"Bash", "PowerShell"})
_FILE_TOOLS: Final = frozenset(
    {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep"}
)
_SUBSTITUTION: Final = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_SEPARATORS: Final = re.compile(r"&&|\|\||;|\||\n")
_ASSIGNMENT: Final = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S*)\s+)+")
_DYNAMIC: Final = re.compile(r"\$\(|`|\$[A-Za-z_{]")
# what Codex CLI makes `_` in an MCP server's or tool's name (`*` stays the rule's wildcard)
_CODEX_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_*]")
# A finer split, added to the one above: a background job (`echo hi & rm -r x`), a subshell
# (`(rm -r x)`), a group (`{ rm -r x; }`) ran as a subcommand no rule saw, and the handler a
# `Bash(rm *)` rule gated was skipped while the CLI ran the `rm`.
_FINER: Final = re.compile(r"&|\(|\)|(?:^|(?<=\s))[{}](?=\s|$)")
# what may stand before a simple command in a pipeline or compound command
_PREFIX: Final = re.compile(
    r"^(?:(?:!|time(?:\s+-p)?|if|then|elif|else|do|while|until|fi|done|esac)(?:\s+|$))+"
)
# Claude Code's tool names, and another CLI's name of each (Gemini's run_shell_command is a
# Bash): an `if` naming Claude Code's tool reads that call's arguments. Codex's apply_patch is
# Edit and Write, but its patch is not their arguments (see `cli_aliases` below).
_CLAUDE_TOOLS: Final = frozenset(
    {"Bash", "Read", "Edit", "MultiEdit", "NotebookEdit", "Write", "WebFetch", "WebSearch"}
)
_AS_CLAUDE: Final = {
    name: frozenset(names & _CLAUDE_TOOLS)
    for names in KIND_NAMES.values()
    for name in names - _CLAUDE_TOOLS - {"apply_patch"}
}


def _star_regex(pattern: str) -> re.Pattern[str]:
    """A permission pattern where only ``*`` is special (it matches anything)."""
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern), re.DOTALL)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob: ``**`` any depth, ``*`` within a name, ``?`` one character."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _subcommands(command: str) -> list[str]:
    found: list[str] = []
    pending = [command]
    while pending:
        text = pending.pop()
        for match in _SUBSTITUTION.finditer(text):
            pending.append(match.group(1) if match.group(1) is not None else match.group(2))
        plain = _SUBSTITUTION.sub(" ", text)
        parts = _SEPARATORS.split(plain)
        finer = [p for part in parts for p in _FINER.split(part)]
        for part in [*parts, *(p for p in finer if p not in parts)]:
            part = _ASSIGNMENT.sub("", part.strip())
            part = _ASSIGNMENT.sub("", _PREFIX.sub("", part))
            if part and part not in found:
                found.append(part)
    return found


def _path_matches(spec: str, path: str, here: str) -> bool:
    """Whether the absolute ``path`` matches a file rule's ``spec`` read from the folder
    ``here`` (``//`` absolute, ``~/`` the home folder's)."""
    if spec.startswith("//"):
        return bool(_glob_regex(spec[1:]).fullmatch(path))
    if spec.startswith("~/"):
        return bool(_glob_regex(os.path.expanduser("~") + spec[1:]).fullmatch(path))
    full = PurePosixPath(path)
    relative = str(full.relative_to(here)) if full.is_relative_to(here) else path
    pattern = spec.lstrip("/").removeprefix("./")
    if "/" not in pattern:  # a bare name pattern matches at any depth (gitignore)
        return bool(_glob_regex(pattern).fullmatch(PurePosixPath(relative).name))
    return bool(_glob_regex(pattern).fullmatch(relative))


class IfRule:
    """One parsed ``if`` rule; :meth:`matches` says whether the handler runs for a call.

    Example:
        >>> IfRule("Bash(git *)").matches("Bash", {"command": "npm test && git push"})
        True
    """

    __slots__ = ("codex_tool", "raw", "spec", "tool")

    def __init__(self, raw: str) -> None:
        found = _RULE.match(raw)
        if found is None:
            raise ValueError(f"not a permission rule like 'Bash(git *)': {raw!r}")
        self.raw = raw
        self.tool: str = found.group("tool")
        # The name Codex CLI gives the MCP tools the rule names: a server `my-files` (or a tool
        # `delete-file.v2`) is `mcp__my_files__...` in its hooks. Before, such a rule never
        # matched the call the handler's matcher selected, and Codex ran it.
        renamed = _CODEX_UNSAFE.sub("_", self.tool)
        self.codex_tool = renamed if self.tool.startswith("mcp__") else self.tool
        spec = found.group("spec")
        self.spec = None if spec is None or spec.strip() in ("", "*") else spec.strip()

    @property
    def reads_project(self) -> bool:
        """Whether the rule names a path under the project's folder (``Edit(/src/**)``), which
        only a bridge told ``$CLAUDE_PROJECT_DIR`` reads there (else: under the event's ``cwd``).

        Example:
            >>> IfRule("Edit(/src/**)").reads_project, IfRule("Edit(//etc/**)").reads_project
            (True, False)
        """
        spec = self.spec or ""
        return self.tool in _FILE_TOOLS and spec.startswith("/") and not spec.startswith("//")

    def _tool_matches(self, tool: str) -> bool:
        names = (self.tool,) if self.codex_tool == self.tool else (self.tool, self.codex_tool)
        for name in names:
            if fnmatch.fnmatchcase(tool, name):
                return True
            # ``mcp__server`` names every tool of that server
            if name.startswith("mcp__") and tool.startswith(f"{name}__"):
                return True
        return False

    def _shell(self, spec: str, args: Mapping[str, Any]) -> bool:
        command = args.get("command")
        if not isinstance(command, str):
            return True  # cannot tell: fail open, as Claude Code does
        core = spec[:-1].rstrip() if spec.endswith("*") else spec
        if " " in core and _DYNAMIC.search(command):
            return True  # more than a command name, and a dynamic part: Claude Code runs it
        if spec.endswith(":*"):
            prefix = spec[:-2]
            return any(sub.startswith(prefix) for sub in _subcommands(command))
        regex = _star_regex(spec)
        return any(regex.fullmatch(sub) for sub in _subcommands(command))

    def _file(
        self, spec: str, args: Mapping[str, Any], cwd: str | None, project: str | None
    ) -> bool:
        path = args.get("file_path") or args.get("notebook_path") or args.get("path")
        if not isinstance(path, str) or not path:
            return True
        # The folder of the call, not the process's: a daemon serves sessions of many folders
        # (and one that moved); the tool edits `folder/a/../b` as `folder/b`, and `~/b` at home.
        if path == "~" or path.startswith("~/"):
            path = os.path.expanduser(path)
        here = os.path.normpath(cwd or working_folder())
        path = "/" + os.path.normpath(os.path.join(here, path)).lstrip("/")
        if spec.startswith("/") and project is not None:
            here = os.path.normpath(project)  # `/src/**`: the project's, not the session's folder
        # Where the tool lands too: a folder link on the way (`src/out -> /etc`) must not take
        # an edit out of a guard narrowed to `//etc/**` (Claude Code 2.1.332 matches the path
        # as written, and edits through such a link; it refuses to write a link to a file).
        landing = os.path.realpath(path)
        return _path_matches(spec, path, here) or (
            landing != path and _path_matches(spec, landing, here)
        )

    def matches(
        self,
        tool: str,
        args: Mapping[str, Any],
        cwd: str | None = None,
        project: str | None = None,
    ) -> bool:
        """Whether a call of ``tool`` with ``args``, made in the folder ``cwd`` (the process's
        when None) of the session started in ``project`` (unknown when None), passes the rule
        (``True`` when unsure)."""
        if not self._tool_matches(tool):
            # a tool the CLI matches by the rule's tool: the rule cannot read its arguments
            if any(self._tool_matches(name) for name in cli_aliases("codex", tool, args)):
                return True
            # a Claude Code tool's former name (``Task(*)`` for ``Agent``), as Claude Code reads it
            if any(self._tool_matches(name) for name in cli_aliases("claude-code", tool)):
                return True
            # another CLI's name of the rule's tool: its arguments are that tool's
            if not any(self._tool_matches(name) for name in _AS_CLAUDE.get(tool, ())):
                return False
        spec = self.spec
        if spec is None:
            return True
        if self.tool in _SHELLS:
            return self._shell(spec, args)
        if self.tool in _FILE_TOOLS:
            return self._file(spec, args, cwd, project)
        if self.tool == "WebFetch" and spec.startswith("domain:"):
            url = args.get("url")
            if not isinstance(url, str):
                return True
            host = (urlsplit(url).hostname or "").lower()
            domain = spec[len("domain:") :].strip().lower()
            return host == domain or host.endswith(f".{domain}")
        return True


def parse_if(raw: str) -> IfRule:
    """Parse an ``if`` rule. Raises ``ValueError`` when it is not one."""
    return IfRule(raw)


class IfGate:
    """A handler that runs ``inner`` only for tool calls that match ``rule``.

    ``inner`` is an action with the handler return protocol (a command or an ``http`` handler);
    a call the rule does not match is left alone (``None``: no decision).
    """

    def __init__(self, rule: IfRule, inner: Any) -> None:
        self.rule = rule
        self.inner = inner

    def __repr__(self) -> str:
        return f"IfGate({self.rule.raw!r}, {self.inner!r})"

    def __call__(self, payload: HookEvent) -> Any:
        tool = getattr(payload, "apiName", None)
        args = getattr(payload, "args", None)
        own = getattr(payload, "claudeCode", None)  # a coding agent's event: its own folders
        own = own if isinstance(own, Mapping) else {}
        cwd, project = own.get("cwd"), own.get("projectDir")
        if isinstance(tool, str) and not self.rule.matches(
            tool,
            args if isinstance(args, Mapping) else {},
            cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None,
            project if isinstance(project, str) and os.path.isabs(project) else None,
        ):
            return None
        return self.inner(payload)
