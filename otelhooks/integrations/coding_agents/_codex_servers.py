"""MCP servers Codex CLI ignores, and the guards that name them.

Codex CLI 0.171 starts no MCP server whose configured name holds a character other than letters,
digits, ``-``, ``_``, ``.``, ``:``, ``@`` and ``/`` (``[mcp_servers."my files"]``, a non-ASCII
letter): ``codex exec`` says nothing, its ``tool_search`` finds none of the server's tools and the
model's call of one is refused as unknown (``tests/coding_agents_cli/test_codex_server_names.py``
runs the real CLI). The characters it keeps but renames (``my.files`` is ``mcp__my_files``)
are matched by the guards already (:mod:`otelhooks._codex_names`). A guard written for an
ignored server guards nothing: whoever renames the server to make it start must look at the
guard again, so install and ``hooks test`` say so, naming the server, the file and the guards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from otelhooks._hooks import Hook
from otelhooks.integrations.coding_agents._codex_toml import codex_toml

__all__ = ["codex_config_files", "ignored_server_notes"]

# what Codex CLI 0.171 starts a server under (its own message for `codex mcp add` lists them)
_STARTED: Final = re.compile(r"[A-Za-z0-9_\-.:@/]")


def codex_config_files(project: str | os.PathLike[str] | None) -> list[Path]:
    """The Codex ``config.toml`` files whose ``[mcp_servers]`` apply: the project's (with
    ``project``) and ``$CODEX_HOME/config.toml`` (``~/.codex``)."""
    user = Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser() / "config.toml"
    if project is None:
        return [user]
    return [Path(project).absolute() / ".codex" / "config.toml", user]


def _servers(path: Path) -> list[str]:
    config = codex_toml(path) or {}
    servers = config.get("mcp_servers")
    return [str(name) for name in servers] if isinstance(servers, dict) else []


def _names_server(hook: Hook, server: str) -> bool:
    matcher = hook.matcher or ""
    return f"mcp__{server}__" in matcher or f"{server}/" in matcher or f"{server}\\/" in matcher


def ignored_server_notes(files: Iterable[Path], hooks: Iterable[Hook] = ()) -> list[str]:
    """One sentence per MCP server of ``files`` that Codex CLI ignores for its name, naming the
    characters, the file and the ``hooks`` whose matcher names the server.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "config.toml").write_text('[mcp_servers."my files"]\\ncommand = "x"\\n')
        >>> "MCP server 'my files'" in ignored_server_notes([folder / "config.toml"])[0]
        True
    """
    hooks = list(hooks)
    notes = []
    for path in dict.fromkeys(files):
        for server in _servers(path):
            bad = sorted({c for c in server if not _STARTED.match(c)}) or ([] if server else [""])
            if not bad:
                continue
            named = [hook.id for hook in hooks if server and _names_server(hook, server)]
            shown = ", ".join(repr(c) for c in bad)
            guards = f"; hook {', '.join(named)} names it and guards nothing" if named else ""
            notes.append(
                f"Codex CLI ignores MCP server {server!r} of {path}: its name holds {shown}, and "
                "Codex starts no server whose name has a character other than letters, digits, "
                "'-', '_', '.', ':', '@' and '/' (without a word: none of its tools is offered)"
                f"{guards}; rename it (a guard naming it by the new name matches Codex's)"
            )
    return notes
