"""Matchers: which tool (or other matcher value) a hook applies to, in each dialect's rules.

========== =================================================================================
dialect    rule
========== =================================================================================
lobehub    omitted, empty or ``*``: all. Otherwise a regex searched in ``identifier/apiName``.
workspace  ``*``: all. ``/re/``: a regex searched in the tool name. Otherwise the exact name
           (``Edit|Write`` lists names, as in Claude Code: tool names never contain ``|``).
claude     ``*``, empty or omitted: all. Only letters, digits, ``_ - , |`` and spaces: an exact
           name or a ``|``/``,`` list of names. Otherwise an unanchored regex.
otelhooks  as claude, plus ``/re/`` regexes and ``/`` inside names (``fs/readFile``); a name
           equals either the tool name or ``identifier/apiName``.
========== =================================================================================

An invalid regex never raises: a warning is logged and the matcher falls back to exact matching,
as the workspace engine does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import structlog

__all__ = ["MatchKind", "Matcher", "compile_matcher"]

_log = structlog.get_logger("otelhooks")

_CLAUDE_NAMES: Final = re.compile(r"^[A-Za-z0-9_\-, |]+$")
_NATIVE_NAMES: Final = re.compile(r"^[A-Za-z0-9_\-, |/.:]+$")


class MatchKind(StrEnum):
    ALL = "all"
    NAMES = "names"
    REGEX = "regex"


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled matcher. ``matches`` takes every value the event can be matched on."""

    source: str | None
    kind: MatchKind
    names: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None

    def matches(self, values: tuple[str, ...]) -> bool:
        if self.kind is MatchKind.ALL:
            return True
        if self.kind is MatchKind.NAMES:
            return any(v in self.names for v in values)
        assert self.pattern is not None
        return any(self.pattern.search(v) is not None for v in values)


ALL: Final = Matcher(None, MatchKind.ALL)


def _regex_or_exact(source: str, pattern: str, *, hook_id: str | None) -> Matcher:
    try:
        return Matcher(source, MatchKind.REGEX, pattern=re.compile(pattern))
    except re.error as exc:
        _log.warning(
            "invalid regex matcher, falling back to exact match",
            hook_id=hook_id,
            matcher=source,
            error=str(exc),
        )
        return Matcher(source, MatchKind.NAMES, names=frozenset({source}))


def _split_names(source: str) -> frozenset[str]:
    return frozenset(n.strip() for n in re.split(r"[|,]", source) if n.strip())


def compile_matcher(source: str | None, dialect: str, *, hook_id: str | None = None) -> Matcher:
    """Compile ``source`` by the rules of ``dialect`` (see the module docstring).

    Example:
        >>> compile_matcher("Edit|Write", "claude").matches(("Write",))
        True
    """
    if source is None or source.strip() in ("", "*"):
        return ALL
    if dialect == "lobehub":
        return _regex_or_exact(source, source, hook_id=hook_id)
    is_slashed = len(source) >= 2 and source.startswith("/") and source.endswith("/")
    if dialect == "workspace":
        if is_slashed:
            return _regex_or_exact(source, source[1:-1], hook_id=hook_id)
        # Tool names never contain "|": reading "Edit|Write" as a list (Claude Code's meaning)
        # keeps every exact name working and lets Claude-style configs run unchanged.
        return Matcher(source, MatchKind.NAMES, names=frozenset(n for n in source.split("|") if n))
    if dialect == "claude":
        if _CLAUDE_NAMES.match(source):
            return Matcher(source, MatchKind.NAMES, names=_split_names(source))
        return _regex_or_exact(source, source, hook_id=hook_id)
    # otelhooks (and the kernel, which has no matchers of its own)
    if is_slashed:
        return _regex_or_exact(source, source[1:-1], hook_id=hook_id)
    if _NATIVE_NAMES.match(source):
        return Matcher(source, MatchKind.NAMES, names=_split_names(source))
    return _regex_or_exact(source, source, hook_id=hook_id)
