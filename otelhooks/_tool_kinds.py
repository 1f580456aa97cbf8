"""Tool kinds: ``@shell``, ``@file_write`` ... in a matcher match every agent's own name.

A hook written once (``matcher: "@shell"``) guards Claude Code's ``Bash``, Codex's ``Bash``
(its hooks name the ``exec_command`` shell tool so), Gemini CLI's ``run_shell_command`` and the
shell tools of the Python runtimes otelhooks instruments. The table (``docs/adapters.md`` shows
it) lists each agent's names as its hooks report them: :data:`KIND_NAMES` is that table.

``@mcp`` matches by name shape (Claude Code's and Codex's ``mcp__server__tool``, the gateway's
``server/tool`` through the alias rule of :mod:`otelhooks._matchers`, Gemini CLI's
``mcp_server_tool`` once its dialect has read the call's ``mcp_context``).

An MCP tool's annotations (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
``openWorldHint``) say what a tool may do, not what it is, so they give kinds of their own:
``@read_only``, ``@destructive``, ``@idempotent``, ``@open_world``
(:func:`annotation_kinds`, with the MCP specification's defaults for a hint a tool leaves out).
Only the MCP gateway sees them (``tools/list``); no CLI's hook input carries them. They never
make a tool ``@file_read`` or ``@web_fetch``: a read-only tool may as well query a database, and
an allow rule for file reads must not cover it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ANNOTATION_KINDS",
    "CLAUDE_FORMER_NAMES",
    "CLI_MATCHER_ALIASES",
    "GEMINI_LEGACY_NAMES",
    "KIND_NAMES",
    "MCP_KIND",
    "MCP_PATTERN",
    "MCP_PREFIX",
    "annotation_kinds",
    "cli_aliases",
    "kind_names",
    "mcp_parts",
]

MCP_PREFIX: Final = "mcp__"


def mcp_parts(value: str) -> tuple[str, str] | None:
    """The server and tool of Claude Code's ``mcp__server__tool`` (split at the first ``__``
    after the prefix), else None.

    Example:
        >>> mcp_parts("mcp__memory__create_entities")
        ('memory', 'create_entities')
    """
    if not value.startswith(MCP_PREFIX):
        return None
    server, sep, tool = value[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


KIND_NAMES: Final[dict[str, frozenset[str]]] = {
    # Claude Code's PowerShell tool (Windows) runs commands as Bash does, and is the shell of a
    # skill's ``shell: powershell`` inline command (its PreSkillShellCommand names it)
    "@shell": frozenset(
        {
            "Bash",
            "PowerShell",
            "exec_command",
            "shell",
            "local_shell",
            "run_shell_command",
            "terminal",
        }
    ),
    "@file_write": frozenset({"Write", "apply_patch", "write_file"}),
    "@file_edit": frozenset({"Edit", "MultiEdit", "NotebookEdit", "apply_patch", "replace"}),
    "@file_read": frozenset({"Read", "read_file", "read_many_files"}),
    "@web_fetch": frozenset({"WebFetch", "web_fetch"}),
    "@web_search": frozenset(
        {"WebSearch", "web_search", "google_web_search", "web_search_preview"}
    ),
}
# The names a coding agent's CLI also matches a tool by, under the agent name its spans carry:
# Codex CLI runs a hook whose matcher names ``Write`` or ``Edit`` on its ``apply_patch`` too (for
# hooks written with Claude Code's names; checked with the real CLI 0.171). The bridge offers
# them to matchers live, replay from the recorded agent name.
# Claude Code renamed tools and still runs a hook whose matcher or ``if`` rule names a tool by
# its former name (2.1.332: ``Task``, the subagent tool of years of hook examples, is ``Agent``);
# its own table, former name -> current name. A guard on either name fires on either.
CLAUDE_FORMER_NAMES: Final[dict[str, str]] = {
    "Task": "Agent",
    "KillShell": "TaskStop",
    "KillBash": "TaskStop",
    "ListPeers": "ListAgents",
    "Brief": "SendUserMessage",
    "ListMcpResources": "ListMcpResourcesTool",
    "ReadMcpResource": "ReadMcpResourceTool",
    "ReadMcpResourceDir": "ReadMcpResourceDirTool",
    "ProposeGoal": "SetGoal",
}


def _claude_names() -> dict[str, tuple[str, ...]]:
    names: dict[str, tuple[str, ...]] = {}
    for former, current in CLAUDE_FORMER_NAMES.items():
        names[current] = (*names.get(current, ()), former)
        names[former] = (current,)
    return names


CLI_MATCHER_ALIASES: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "codex": {"apply_patch": ("Write", "Edit")},
    "claude-code": _claude_names(),
    "claude-agent-sdk": _claude_names(),
}
# Codex CLI takes a shell command that runs its patcher (``apply_patch <<'EOF'`` ..., after a
# ``cd DIR &&`` too, or ``applypatch``) for an apply_patch and patches the files itself, while its
# hooks see that call as ``Bash`` (0.171): the command is matched by apply_patch's names too. Any
# command that names the patcher as a word counts (a superset of what Codex takes, on purpose: a
# file guard may fire on a command that only mentions it, never miss one that patches).
_CODEX_PATCHER = re.compile(r"(?<![\w.-])(?:apply_patch|applypatch)(?![\w.-])")
# Gemini CLI runs a tool the model asks for by a former name as the current one, and its hooks get
# the former name (0.61: ``search_file_content`` runs ``grep_search``): the dialect names the tool
# by its current name, and each is a matcher value of the other.
GEMINI_LEGACY_NAMES: Final[dict[str, str]] = {"search_file_content": "grep_search"}
# Gemini CLI names an MCP tool ``mcp_<server>_<tool>`` in its hooks (the bridge records it as
# the other CLIs name it, ``mcp__<server>__<tool>``, and offers Gemini's own name live).
GEMINI_AGENT: Final = "gemini-cli"
MCP_KIND: Final = "@mcp"
# Claude Code's and Codex's MCP tool names; the gateway's server/tool reaches it as an alias
MCP_PATTERN: Final = r"mcp__[^_].*__."


# An annotation kind is matched as a value of its own: the gateway adds ``@read_only`` ... to the
# matcher values of a call whose tool the server listed so (the hint, and its default).
ANNOTATION_KINDS: Final[dict[str, tuple[str, bool]]] = {
    "@read_only": ("readOnlyHint", False),
    "@destructive": ("destructiveHint", True),
    "@idempotent": ("idempotentHint", False),
    "@open_world": ("openWorldHint", True),
}


def annotation_kinds(annotations: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The annotation kinds of an MCP tool whose ``tools/list`` entry has ``annotations``
    (``None``: a tool listed without any, or never listed; the defaults apply).

    A hint that is not a boolean counts as left out. ``destructiveHint`` and ``idempotentHint``
    mean something only for a tool that is not read-only (the specification's words), so a
    read-only tool is neither ``@destructive`` nor ``@idempotent``.

    Example:
        >>> annotation_kinds({"readOnlyHint": True, "openWorldHint": False})
        ('@read_only',)
        >>> annotation_kinds(None)
        ('@destructive', '@open_world')
    """
    given = annotations if isinstance(annotations, Mapping) else {}

    def hint(kind: str) -> bool:
        key, default = ANNOTATION_KINDS[kind]
        value = given.get(key)
        return value if isinstance(value, bool) else default

    read_only = hint("@read_only")
    return tuple(
        kind
        for kind in ANNOTATION_KINDS
        if (kind == "@read_only" or kind == "@open_world" or not read_only) and hint(kind)
    )


def cli_aliases(
    agent: str | None, name: str, args: Mapping[str, Any] | None = None
) -> tuple[str, ...]:
    """The names the CLI ``agent`` (as its spans name it) also matches its tool ``name`` by:
    :data:`CLI_MATCHER_ALIASES`; Codex CLI's ``apply_patch`` names for a ``Bash`` call whose
    command (in ``args``) runs its patcher, which Codex applies as a patch; Gemini CLI's
    ``mcp_<server>_<tool>`` of an MCP tool recorded as ``mcp__<server>__<tool>`` (split where
    the gateway's alias rule splits it), and the former names of a tool
    (:data:`GEMINI_LEGACY_NAMES`, Claude Code's :data:`CLAUDE_FORMER_NAMES`).

    Example:
        >>> cli_aliases("gemini-cli", "mcp__memory__create_entities")
        ('mcp_memory_create_entities',)
        >>> cli_aliases("codex", "apply_patch")
        ('Write', 'Edit')
        >>> cli_aliases("codex", "Bash", {"command": "apply_patch <<'EOF'"})
        ('apply_patch', 'Write', 'Edit')
        >>> cli_aliases("gemini-cli", "grep_search")
        ('search_file_content',)
        >>> cli_aliases("claude-code", "Agent")
        ('Task',)
    """
    if agent == GEMINI_AGENT:
        parts = mcp_parts(name)
        if parts:
            return (f"mcp_{parts[0]}_{parts[1]}",)
        return tuple(old for old, current in GEMINI_LEGACY_NAMES.items() if current == name)
    cli = CLI_MATCHER_ALIASES.get(agent) if agent else None
    if not cli:
        return ()
    command = args.get("command") if agent == "codex" and name == "Bash" and args else None
    if isinstance(command, str) and _CODEX_PATCHER.search(command):
        return ("apply_patch", *cli.get("apply_patch", ()))
    return cli.get(name, ())


def kind_names(kind: str) -> frozenset[str] | None:
    """The tool names of ``kind`` (``@shell`` ...), ``None`` for an unknown kind or ``@mcp``.

    An annotation kind (``@read_only`` ...) is its own value (see :func:`annotation_kinds`).

    Example:
        >>> "run_shell_command" in kind_names("@shell")
        True
    """
    if kind in ANNOTATION_KINDS:
        return frozenset({kind})
    return KIND_NAMES.get(kind)
