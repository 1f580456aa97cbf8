"""FileChanged's watch list, which ``install`` writes as its matcher.

Claude Code's hooks reference ("FileChanged"): the matcher of a FileChanged group is the list of
literal file names, ``|``-separated, it watches in the session's directory; ``*`` or no matcher
watches nothing, so the hook never fires.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from otelhooks._errors import ConfigError
from otelhooks._events import resolve_event
from otelhooks._hooks import Hook

__all__ = ["DEFAULT_WATCH", "watch_list"]

# Without a file_changed hook of its own naming files, the bridge watches the docs' example:
# the environment files.
DEFAULT_WATCH = ".envrc|.env"
_LITERAL_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def watch_list(hooks: Iterable[Hook]) -> str:
    """FileChanged's matcher: the file names the ``file_changed`` hooks of ``hooks`` match
    (literal names, ``|``-separated; paths give their last part), else :data:`DEFAULT_WATCH`.

    Example:
        >>> watch_list(())
        '.envrc|.env'
    """
    names: list[str] = []
    for hook in hooks:
        if _canonical(hook.type) != "file_changed" or not isinstance(hook.matcher, str):
            continue
        for part in hook.matcher.split("|"):
            name = part.strip().rsplit("/", 1)[-1]
            if _LITERAL_NAME.fullmatch(name) and name not in (".", "..") and name not in names:
                names.append(name)
    return "|".join(names) or DEFAULT_WATCH


def _canonical(event: str) -> str:
    try:
        return resolve_event(event)[0].name
    except ConfigError:  # an unknown event name: validate reports it
        return event
