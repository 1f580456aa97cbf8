"""Gemini CLI's settings files read as Gemini CLI 0.61 reads them: JSON with comments.

Gemini CLI parses each settings file with ``JSON.parse(stripJsonComments(text))``: ``//`` and
``/* */`` comments outside strings are blanked first, nothing else is forgiven (a trailing comma
or a BOM makes it skip the file with an error). The installer's checks of the files it does not
edit (the user's, the system's) read them the same way: with Python's :mod:`json` alone, a user
file holding a comment and ``hooksConfig.enabled: false`` was read as no file, and install said
nothing while Gemini CLI ran none of the hooks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code._settings_file import read_regular

__all__ = ["gemini_json", "strip_comments"]

_VISIBLE = re.compile(r"\S")


def _blank(text: str) -> str:
    return _VISIBLE.sub(" ", text)


def _escaped(text: str, quote: int) -> bool:
    count = 0
    while quote - count - 1 >= 0 and text[quote - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def strip_comments(text: str) -> str:
    """``text`` with its comments blanked, as the ``strip-json-comments`` package Gemini CLI
    bundles does (a port of its loop: a ``"`` not escaped opens or closes a string, a comment
    is replaced by spaces, its line breaks kept).

    Example:
        >>> strip_comments('{"a": 1 // one\\n, "b": "//x" /* two */}')
        '{"a": 1       \\n, "b": "//x"          }'
    """
    out: list[str] = []
    in_string = False
    comment: str | None = None
    offset = 0
    i = 0
    while i < len(text):
        pair = text[i : i + 2]
        if comment is None and text[i] == '"' and not _escaped(text, i):
            in_string = not in_string
        if in_string:
            i += 1
            continue
        if comment is None and pair == "//":
            out.append(text[offset:i])
            offset, comment = i, "line"
            i += 1
        elif comment == "line" and pair == "\r\n":
            i += 1
            comment = None
            out.append(_blank(text[offset:i]))
            offset = i
            i += 1
            continue
        elif comment == "line" and text[i] == "\n":
            comment = None
            out.append(_blank(text[offset:i]))
            offset = i
        elif comment is None and pair == "/*":
            out.append(text[offset:i])
            offset, comment = i, "block"
            i += 2
            continue
        elif comment == "block" and pair == "*/":
            i += 1
            comment = None
            out.append(_blank(text[offset : i + 1]))
            offset = i + 1
        i += 1
    rest = text[offset:]
    out.append(_blank(rest) if comment is not None else rest)
    return "".join(out)


def gemini_json(path: Path) -> Any:
    """The settings in ``path`` as Gemini CLI reads them (``None``: no file, or one Gemini CLI
    skips as unparsable; it takes invalid UTF-8 as replacement characters)."""
    raw = read_regular(path)
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        # text that parses as it is holds no comment: the character loop (seconds for a large
        # file, run for each of install's checks) is only for one that does not
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return json.loads(strip_comments(text))
    except (ValueError, RecursionError):
        return None
