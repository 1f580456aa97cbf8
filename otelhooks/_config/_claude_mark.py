"""How an entry of a Claude Code settings file is known to be one ``claude-code install`` wrote.

The rule is read by the settings loader (a handler of ours is the bridge, not a hook to load) and
by the installers (what they strip and replace), so it lives here, beside the loader, and the
installers import it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

__all__ = [
    "CLIENT_FILE",
    "MARK",
    "MARK_HEADER",
    "ROUTE",
    "TOKEN_ENV",
    "is_ours",
    "our_entries",
    "read_settings",
]

TOKEN_ENV = "OTELHOOKS_INGEST_TOKEN"
ROUTE = "/v1/hooks/claude-code"
CLIENT_FILE = "otelhooks/integrations/claude_code/hook_client.py"
MARK = "# otelhooks:installed"
MARK_HEADER = "X-Otelhooks-Installed"


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

    Ours carry a mark (a command ends with :data:`MARK`, an ``http`` hook has the header
    :data:`MARK_HEADER`) or have the exact form an older version wrote; a user's own
    ``otelhooks claude-code`` entry is never ours. The coding agents' installers use the same
    rule.

    Example:
        >>> is_ours({"type": "command", "command": "otelhooks claude-code --fail-closed"})
        False
        >>> is_ours({"type": "command", "command": "python hook_client.py # otelhooks:installed"})
        True
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


def read_settings(path: str | Path) -> dict[str, Any] | None:
    """The settings document at ``path``, ``None`` when it cannot be read or is not an object
    (the loader reports such a file; its checks have nothing to read)."""
    try:
        settings = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return settings if isinstance(settings, dict) else None


def our_entries(settings: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The event, the loader's hook id and the handler of each entry of ours (:func:`is_ours`)
    in a settings document, whatever else its ``hooks`` holds.

    Example:
        >>> ours = {"type": "command", "command": "python c.py # otelhooks:installed"}
        >>> settings = {"hooks": {"Stop": [{"hooks": [{"type": "command"}, ours]}]}}
        >>> [(event, where) for event, where, _ in our_entries(settings)]
        [('Stop', 'Stop[0].hooks[1]')]
    """
    events = settings.get("hooks") if isinstance(settings, dict) else None
    found = []
    for event, groups in events.items() if isinstance(events, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if is_ours(handler):
                    found.append((str(event), f"{event}[{g}].hooks[{h}]", handler))
    return found
