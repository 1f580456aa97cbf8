"""The name the OpenAI Agents SDK gives the model for an MCP server's tool when the agent's
``mcp_config`` sets ``include_server_in_tool_names``: ``mcp_{server}__{tool}``, each part with
every character other than an ASCII letter, digit, ``_`` or ``-`` made ``_`` (trimmed of
``_`` and ``-``). otelhooks names such a tool by its server's own name for it
(``{server}/{tool}``), in its hooks' matching and in every record; these functions read the
SDK's name back."""

from __future__ import annotations

__all__ = ["prefixed_tool", "safe_part"]


def safe_part(value: str) -> str:
    """``value`` as the SDK writes it into a prefixed tool name.

    Example:
        >>> safe_part("my files.v2")
        'my_files_v2'
    """
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in value)
    return safe.strip("_-")


def prefixed_tool(server: str, called: str) -> str | None:
    """The tool of ``server`` that the SDK's prefixed name ``called`` names, as the prefix
    writes it (``None``: ``called`` is no prefixed name of ``server``'s).

    Example:
        >>> prefixed_tool("notes", "mcp_notes__add"), prefixed_tool("notes", "add")
        ('add', None)
    """
    prefix = f"mcp_{safe_part(server)}__"
    rest = called.removeprefix(prefix)
    return rest if rest and rest != called else None
