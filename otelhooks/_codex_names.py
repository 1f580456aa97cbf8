"""The names Codex CLI gives MCP tools, and the regex that matches them.

Codex CLI names an MCP tool after its server and tool with every character a Responses API
function name cannot hold made ``_``: its hooks see server ``my-files``'s tool
``delete-file.v2`` as ``mcp__my_files__delete_file_v2``. Claude Code (and every other runtime)
keeps the configured names. A guard is written once, with the names as configured; these
functions give the name, or the regex, that matches the same tool as Codex names it.

A regex is rewritten token by token, not by a pattern over its text: a ``-`` or ``\\.`` can sit
anywhere (``mcp__.*__delete-file``, ``mcp__files__(rm|delete-all)``, ``mcp__[a-z-]+__rm``), and
only a literal character is renamed, never one of the regex's own syntax (``(?i-s:...)``,
``{1,3}``, the range of ``[a-z]``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from otelhooks._tool_kinds import MCP_PREFIX, mcp_parts

__all__ = ["CODEX_SHAPED", "codex_named", "codex_regex"]

# what Codex CLI makes "_" in an MCP server's or tool's name (tests/coding_agents_cli pins it)
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_]")
# a name Codex CLI can give an MCP tool: the only values a regex's Codex twin is tried on
CODEX_SHAPED: Final = re.compile(r"^mcp__[A-Za-z0-9_]+$")
# kept in the twin: no Codex name holds one, but the ``server/tool`` alias of one does
_KEPT: Final = frozenset("/")
_QUANTIFIER: Final = re.compile(r"\{\d*(?:,\d*)?\}")
_HEX_ESCAPES: Final = {"x": 2, "u": 4, "U": 8}


def codex_named(name: str) -> str | None:
    """The name Codex CLI gives the MCP tool ``name`` (``mcp__server__tool`` or
    ``server/tool``), when it differs from ``mcp__server__tool``.

    Example:
        >>> codex_named("mcp__my-files__delete-file.v2")
        'mcp__my_files__delete_file_v2'
        >>> codex_named("files/delete_file") is None
        True
    """
    parts = mcp_parts(name)
    if parts is None:
        server, sep, tool = name.partition("/")
        parts = (server, tool) if sep and server and tool and "/" not in tool else None
    if parts is None:
        return None
    codex = f"{MCP_PREFIX}{_UNSAFE.sub('_', parts[0])}__{_UNSAFE.sub('_', parts[1])}"
    return codex if codex != f"{MCP_PREFIX}{parts[0]}__{parts[1]}" else None


def _renamed(char: str) -> bool:
    return char not in _KEPT and _UNSAFE.match(char) is not None


def _escape(pattern: str, i: int) -> tuple[str, str | None, int]:
    """The escape at ``pattern[i] == "\\"``: its text, the one character it stands for (or
    ``None`` for a class such as ``\\d``, an anchor or a backreference), and where it ends."""
    if i + 1 >= len(pattern):
        return pattern[i:], None, len(pattern)
    c = pattern[i + 1]
    if c in _HEX_ESCAPES:
        end = i + 2 + _HEX_ESCAPES[c]
        digits = pattern[i + 2 : end]
        if len(digits) == _HEX_ESCAPES[c] and all(d in "0123456789abcdefABCDEF" for d in digits):
            return pattern[i:end], chr(int(digits, 16)), end
        return pattern[i : i + 2], None, i + 2
    if c == "N" and pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end < 0:
            return pattern[i:], None, len(pattern)
        try:
            char = unicodedata.lookup(pattern[i + 3 : end])
        except KeyError:
            char = None
        return pattern[i : end + 1], char, end + 1
    if c in "pP" and pattern.startswith("{", i + 2):  # RE2's \p{Greek}
        end = pattern.find("}", i + 3)
        end = len(pattern) if end < 0 else end + 1
        return pattern[i:end], None, end
    if c == "0":  # an octal escape: \0, \012
        j = i + 2
        while j < min(len(pattern), i + 4) and pattern[j] in "01234567":
            j += 1
        return pattern[i:j], chr(int(pattern[i + 1 : j], 8)), j
    if c.isalnum() or c == "_":  # \d \w \b \A, a backreference \1, RE2's \pL
        return pattern[i : i + 2], None, i + 2
    return pattern[i : i + 2], c, i + 2


def _range_renamed(low: str, high: str) -> bool:
    """Whether the class range ``low-high`` spans a character Codex renames: any range but one
    within the digits, the capitals or the small letters (or a single kept character)."""
    if low == high:
        return _renamed(low)
    return not any(a <= low and high <= b for a, b in (("0", "9"), ("A", "Z"), ("a", "z")))


def _group_head(pattern: str, i: int) -> int:
    """Where the syntax of the group opened at ``pattern[i:i+2] == "(?"`` ends: its name,
    flags, condition or comment are copied as they are."""
    rest = pattern[i + 2 :]
    if rest.startswith(("P<", "<")) and not rest.startswith(("<=", "<!")):
        end = pattern.find(">", i)
        return len(pattern) if end < 0 else end + 1
    if rest.startswith(("P=", "#", "(")):
        end = pattern.find(")", i + 2)
        return len(pattern) if end < 0 else end + 1
    if rest.startswith(("<=", "<!")):
        return i + 4
    if rest.startswith((":", "=", "!", ">")):
        return i + 3
    j = i + 2  # flags: (?i) (?i-s:...)
    while j < len(pattern) and (pattern[j].isalpha() or pattern[j] == "-"):
        j += 1
    return j + 1 if j < len(pattern) and pattern[j] == ":" else j


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """The class opened at ``pattern[i] == "["``, with ``_`` added when it holds a character
    Codex renames (``[a-z-]``, ``[.]``, ``[\\s]``), and taken out of a negated class
    (``[^_]``, ``[^\\w]``): what either matched, Codex may have made ``_``."""
    j = i + 1
    negated = pattern.startswith("^", j)
    j += negated
    renames = False
    first = True
    prev: str | None = None  # the character the last item stands for, when it is one
    out: list[str] = []
    while j < len(pattern) and (first or pattern[j] != "]"):
        c = pattern[j]
        char: str | None
        if c == "[" and pattern.startswith(":", j + 1):  # RE2's [[:alpha:]]
            end = pattern.find(":]", j + 2)
            end = len(pattern) if end < 0 else end + 2
            renames |= pattern[j:end] in ("[:punct:]", "[:space:]", "[:blank:]", "[:print:]")
            text, char, j = pattern[j:end], None, end
        elif c == "\\":
            text, char, j = _escape(pattern, j)
            renames |= text in ("\\s", "\\W")
        elif c == "-" and prev is not None and pattern[j + 1 : j + 2] not in ("", "]"):
            # a range: does it span a character Codex renames?
            if pattern[j + 1] == "\\":
                high_text, high, end = _escape(pattern, j + 1)
            else:
                high_text, high, end = pattern[j + 1], pattern[j + 1], j + 2
            renames |= high is not None and _range_renamed(prev, high)
            text, char, j = f"-{high_text}", None, end
        else:
            text, char, j = c, c, j + 1
        renames |= char is not None and _renamed(char)
        prev = char
        if negated and (char == "_" or text == "\\w"):
            # [^_] matched the "-" Codex makes "_": Codex's "_" is let through
            text = "" if char == "_" else "a-zA-Z0-9"
        out.append(text)
        first = False
    end = min(j + 1, len(pattern))
    if negated:
        body = "".join(out)
        return (f"[^{body}]" if body else "[\\s\\S]"), end
    if renames:  # first: after a range, "-_" could read as another range
        out.insert(0, "_\\" if out and out[0] == "]" else "_")
    return f"[{''.join(out)}{pattern[j:end]}", end


def codex_regex(pattern: str) -> str | None:
    """``pattern`` with each literal character Codex CLI renames in an MCP tool's name made
    ``_`` (a class holding one also takes ``_``), or ``None`` when nothing changes. It is
    meant for the names Codex gives MCP tools (:data:`CODEX_SHAPED`) and their aliases.

    Example:
        >>> codex_regex(r"mcp__files__(rm|delete-all)")
        'mcp__files__(rm|delete_all)'
        >>> codex_regex(r"^mcp__[a-z-]+__delete\\.v2$")
        '^mcp__[_a-z-]+__delete_v2$'
        >>> codex_regex("mcp__.*__rm") is None
        True
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            text, char, i = _escape(pattern, i)
            if char is not None and _renamed(char):
                text = "_"
            elif text in ("\\s", "\\W"):  # a space or punctuation: Codex's "_"
                text = f"[{text}_]"
            out.append(text)
        elif c == "[":
            text, i = _char_class(pattern, i)
            out.append(text)
        elif c == "(" and pattern.startswith("?", i + 1):
            end = _group_head(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif c == "{" and (quantifier := _QUANTIFIER.match(pattern, i)) is not None:
            out.append(quantifier.group())
            i = quantifier.end()
        elif c in ".^$*+?|()" or not _renamed(c):
            out.append(c)
            i += 1
        else:  # a literal: "-", " ", a lone "{" or "}"...
            out.append("_")
            i += 1
    twin = "".join(out)
    return None if twin == pattern else twin
