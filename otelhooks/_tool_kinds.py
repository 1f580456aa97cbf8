"""Tool kinds: ``@shell``, ``@file_write`` ... in a matcher match every agent's own name.

A hook written once (``matcher: "@shell"``) guards Claude Code's ``Bash``, Codex's ``Bash``
(its hooks name the ``exec_command`` shell tool so), Gemini CLI's ``run_shell_command`` and the
shell tools of the Python runtimes otelhooks instruments. The table (``docs/adapters.md`` shows
it) lists each agent's names as its hooks report them: :data:`KIND_NAMES` is that table.

``@mcp`` matches by name shape (Claude Code's and Codex's ``mcp__server__tool``, the gateway's
``server/tool`` through the alias rule of :mod:`otelhooks._matchers`); tool annotations are not
in any CLI's hook input, so they are not consulted.
"""

from __future__ import annotations

from typing import Final

__all__ = ["KIND_NAMES", "MCP_KIND", "MCP_PATTERN", "kind_names"]

KIND_NAMES: Final[dict[str, frozenset[str]]] = {
    "@shell": frozenset(
        {"Bash", "exec_command", "shell", "local_shell", "run_shell_command", "terminal"}
    ),
    "@file_write": frozenset({"Write", "apply_patch", "write_file"}),
    "@file_edit": frozenset({"Edit", "MultiEdit", "NotebookEdit", "apply_patch", "replace"}),
    "@file_read": frozenset({"Read", "read_file", "read_many_files"}),
    "@web_fetch": frozenset({"WebFetch", "web_fetch"}),
    "@web_search": frozenset(
        {"WebSearch", "web_search", "google_web_search", "web_search_preview"}
    ),
}
MCP_KIND: Final = "@mcp"
# Claude Code's and Codex's MCP tool names; the gateway's server/tool reaches it as an alias
MCP_PATTERN: Final = r"mcp__[^_].*__."


def kind_names(kind: str) -> frozenset[str] | None:
    """The tool names of ``kind`` (``@shell`` ...), ``None`` for an unknown kind or ``@mcp``.

    Example:
        >>> "run_shell_command" in kind_names("@shell")
        True
    """
    return KIND_NAMES.get(kind)
