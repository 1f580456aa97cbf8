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

**One name for one tool.** Claude Code names an MCP tool ``mcp__<server>__<tool>``; the MCP
gateway and the other runtimes name it ``<server>/<tool>`` (and ``<tool>``). A matcher written
either way matches the tool under the other name too (:func:`tool_aliases`): names are compiled
with their alias, a regex is also tried on the aliases of the values, and the registry's prefix
index knows a regex's aliased prefix (:attr:`Matcher.index_prefixes`).

**Codex CLI's names.** Codex CLI makes every character but letters, digits and ``_`` of an MCP
server's and tool's name ``_`` (``mcp__my_files__delete_file`` for ``my-files``'s
``delete-file``): an exact name also matches its Codex name, and a regex holding such a
character has a twin (:mod:`otelhooks._codex_names`) tried on the names Codex gives MCP tools.

**Bounded time.** A user's regex runs on RE2 (the ``google-re2`` package, ``otelhooks[re2]``),
whose matching time is linear in the input: ``(a+)+$`` costs microseconds on any tool name. What
RE2 cannot run (lookarounds; also every regex when the package is not installed) runs on Python's
``re`` only if it cannot backtrack catastrophically (:func:`backtracking_risk`: no backreference,
no quantifier or alternation inside a quantified group, at most
:data:`MAX_FALLBACK_QUANTIFIERS` quantifiers) and then on the first :data:`MAX_FALLBACK_INPUT`
characters of each value; a pattern that fails that check is an
:class:`~otelhooks.InvalidMatcherError` at load time, naming the hook and the ``matcher`` field
(the loaders add the file and line).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol

import structlog

from otelhooks._codex_names import CODEX_SHAPED, codex_named, codex_regex
from otelhooks._encoding import clean_text
from otelhooks._errors import InvalidMatcherError
from otelhooks._tool_kinds import (
    ANNOTATION_KINDS,
    KIND_NAMES,
    MCP_KIND,
    MCP_PATTERN,
    MCP_PREFIX,
    kind_names,
    mcp_parts,
)

# CPython's regex parser: private since 3.11 (``sre_parse`` is its deprecated alias) and the
# only parser of Python's own regex syntax; typeshed has no stubs for it. docs/design.md
# ("Private names that remain") says why; tests/test_private_names.py fails if it changes.
_sre: Any = importlib.import_module("re._constants")
_sre_parse: Any = importlib.import_module("re._parser")

_re2: Any
try:  # optional: linear-time matching (otelhooks[re2])
    _re2 = importlib.import_module("re2")
except ImportError:  # pragma: no cover - depends on the installation
    _re2 = None

__all__ = [
    "MAX_FALLBACK_INPUT",
    "MAX_FALLBACK_QUANTIFIERS",
    "RE2_AVAILABLE",
    "MatchKind",
    "Matcher",
    "backtracking_risk",
    "compile_matcher",
    "never_matches",
    "tool_aliases",
]

RE2_AVAILABLE: Final = _re2 is not None
MAX_FALLBACK_INPUT: Final = 128
MAX_FALLBACK_QUANTIFIERS: Final = 2

_log = structlog.get_logger("otelhooks")

_CLAUDE_NAMES: Final = re.compile(r"^[A-Za-z0-9_\-, |]+$")


def tool_aliases(value: str) -> tuple[str, ...]:
    """The other names of the tool ``value`` names: ``server/tool`` for Claude Code's
    ``mcp__server__tool`` (and the bare ``tool``, as the gateway offers it), and the reverse.

    Example:
        >>> tool_aliases("mcp__memory__create_entities")
        ('memory/create_entities', 'create_entities')
        >>> tool_aliases("memory/create_entities")
        ('mcp__memory__create_entities',)
        >>> tool_aliases("Bash")
        ()
    """
    if value.startswith(MCP_PREFIX):
        parts = mcp_parts(value)
        return (f"{parts[0]}/{parts[1]}", parts[1]) if parts else ()
    server, sep, tool = value.partition("/")
    if sep and server and tool and "/" not in tool:
        return (f"{MCP_PREFIX}{server}__{tool}",)
    return ()


def _with_aliases(names: frozenset[str]) -> frozenset[str]:
    """Exact names and the ``server/tool`` or ``mcp__server__tool`` twin of each (not the bare
    tool: ``mcp__memory__create`` names the memory server's tool, not every ``create``), and
    the name Codex CLI gives an MCP tool whose server or tool name holds a ``-`` or ``.``."""
    twins = {alias for name in names for alias in tool_aliases(name)[:1]}
    codex = {c for name in names if (c := codex_named(name)) is not None}
    return names | twins | codex


_NATIVE_NAMES: Final = re.compile(r"^[A-Za-z0-9_\-, |/.:]+$")


class MatchKind(StrEnum):
    ALL = "all"
    NAMES = "names"
    REGEX = "regex"


class Searcher(Protocol):
    """A compiled regex: RE2's or (bounded) Python's."""

    def search(self, text: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled matcher. ``matches`` takes every value the event can be matched on.

    ``engine`` says what runs a regex: ``re2`` (linear time) or ``re`` (a pattern that passed
    :func:`backtracking_risk`, on at most :data:`MAX_FALLBACK_INPUT` characters of a value).
    ``prefix`` is a regex's :func:`anchored_prefix`: a value not starting with it never matches
    (the registry's index rules out many regex hooks at once by it). ``codex`` is the regex
    written as Codex CLI names MCP tools, tried on Codex-shaped names when it differs.
    """

    source: str | None
    kind: MatchKind
    names: frozenset[str] = frozenset()
    pattern: Searcher | None = None
    engine: str | None = None
    prefix: str | None = None
    codex: Matcher | None = None

    def matches(self, values: tuple[str, ...]) -> bool:
        if self.kind is MatchKind.ALL:
            return True
        if self.kind is MatchKind.NAMES:
            return any(v in self.names for v in values)
        if self._search(values):
            return True
        # the same tool under its other name (mcp__server__tool <-> server/tool)
        aliases = tuple(a for v in values for a in tool_aliases(v))
        if aliases and self._search(aliases):
            return True
        if self.codex is None:
            return False
        # an MCP tool as Codex CLI names it, against the regex written Codex's way
        codex = tuple(v for v in values if CODEX_SHAPED.match(v))
        return bool(codex) and self.codex.matches(codex)

    def _search(self, values: tuple[str, ...]) -> bool:
        assert self.pattern is not None
        if self.engine == "re":
            return any(self.pattern.search(v[:MAX_FALLBACK_INPUT]) is not None for v in values)
        return any(self.pattern.search(v) is not None for v in values)

    @property
    def index_prefixes(self) -> tuple[str, ...] | None:
        """Prefixes one of which a value (or its alias) starts with if this regex can match it;
        ``None``: any value may match. The anchored prefix and that of the tool's other name.

        Example:
            >>> compile_matcher(r"/^db\\/.*/", "otelhooks").index_prefixes
            ('db/', 'mcp__db__')
        """
        prefixes = self._own_prefixes()
        if prefixes is None or self.codex is None:
            return prefixes
        codex = self.codex.index_prefixes
        return None if codex is None else prefixes + codex

    def _own_prefixes(self) -> tuple[str, ...] | None:
        prefix = self.prefix
        if prefix is None:
            return None
        if prefix.startswith(MCP_PREFIX):
            rest = prefix[len(MCP_PREFIX) :]
            server, sep, tool = rest.partition("__")
            if sep:
                return (prefix, f"{server}/{tool}")
            return (prefix, rest) if rest else None
        if MCP_PREFIX.startswith(prefix):
            return None  # "mcp_": any Claude Code MCP name, or any name an alias starts with
        if "/" in prefix:
            server, _, tool = prefix.partition("/")
            return (prefix, f"{MCP_PREFIX}{server}__{tool}")
        return (prefix, MCP_PREFIX)  # a bare tool name ends Claude Code's MCP names


ALL: Final = Matcher(None, MatchKind.ALL)


_REPEATS: Final = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT)


def anchored_prefix(pattern: str) -> str | None:
    r"""The literal text every match of ``pattern`` starts the value with (``^db/...`` gives
    ``db/``), or ``None`` when there is none or the pattern has flags. A value without it cannot
    match, which a ``str.startswith`` says without running the regex: most matchers are anchored
    names, and a registry with many of them looks each up for every new tool name.

    Example:
        >>> anchored_prefix(r"^shell\/.*$")
        'shell/'
        >>> anchored_prefix("fs/read") is None
        True
    """
    try:
        tree = _sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    if tree.state.flags & ~(re.UNICODE | re.ASCII):  # (?i), (?m), (?s)... change what ^ means
        return None
    items = list(tree)
    if not items or items[0] != (_sre.AT, _sre.AT_BEGINNING):
        return None
    prefix = []
    for op, arg in items[1:]:
        if op is not _sre.LITERAL:
            break
        prefix.append(chr(arg))
    return "".join(prefix) or None


def backtracking_risk(pattern: str) -> str | None:
    """Why Python's ``re`` could take exponential (or high polynomial) time on ``pattern``, or
    ``None`` when it cannot: a backreference, a quantifier or an alternation inside a quantified
    group, or more than :data:`MAX_FALLBACK_QUANTIFIERS` quantifiers. ``None`` too for a pattern
    that does not parse (that is handled as an invalid regex).

    Example:
        >>> backtracking_risk("(a+)+$")
        'a quantifier inside a quantified group'
        >>> backtracking_risk("^fs/(readFile|writeFile)$") is None
        True
    """
    try:
        tree = _sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    count = 0
    # (items, inside a quantified group); walked without recursion (patterns may nest deeply)
    stack: list[tuple[Any, bool]] = [(tree, False)]
    while stack:
        items, in_repeat = stack.pop()
        for op, av in items:
            if op in _REPEATS:
                _low, high, sub = av
                if high is _sre.MAXREPEAT or high > 1:
                    if in_repeat:
                        return "a quantifier inside a quantified group"
                    count += 1
                    stack.append((sub, True))
                else:
                    stack.append((sub, in_repeat))
            elif op is _sre.SUBPATTERN:
                stack.append((av[-1], in_repeat))
            elif op is _sre.ATOMIC_GROUP:
                stack.append((av, in_repeat))
            elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
                stack.append((av[1], in_repeat))
            elif op is _sre.BRANCH:
                if in_repeat:
                    return "an alternation inside a quantified group"
                stack.extend((alternative, in_repeat) for alternative in av[1])
            elif op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
                return "a backreference"
    if count > MAX_FALLBACK_QUANTIFIERS:
        return f"more than {MAX_FALLBACK_QUANTIFIERS} quantifiers"
    return None


class _Re2Search:
    """An RE2 regex asked only whether it occurs in a value (groups never captured: they change
    nothing to whether it matches, and the match object is then cheap to build)."""

    __slots__ = ("_compiled", "_prefix")

    def __init__(self, pattern: str, prefix: str | None) -> None:
        assert _re2 is not None
        self._prefix = prefix
        options = _re2.Options()
        options.log_errors = False  # an unsupported pattern is ours to report, not RE2's stderr
        options.never_capture = True
        self._compiled = _re2.compile(pattern, options)  # re2.error: not for RE2

    def search(self, text: str) -> bool | None:
        if self._prefix is not None and not text.startswith(self._prefix):
            return None  # cannot match: no call into RE2
        text = clean_text(text)  # a lone surrogate cannot be encoded for RE2
        return True if self._compiled.search(text) is not None else None


def _compile_bounded(pattern: str, source: str, hook_id: str | None) -> Matcher:
    """A regex matcher that runs in bounded time (see the module docstring); raises re.error
    for an invalid pattern and InvalidMatcherError for one that could backtrack."""
    prefix = anchored_prefix(pattern)
    if _re2 is not None:
        try:
            compiled = _Re2Search(pattern, prefix)
        except _re2.error:
            pass  # a construct RE2 lacks (a lookaround), or invalid: Python's re decides
        else:
            return Matcher(source, MatchKind.REGEX, pattern=compiled, engine="re2", prefix=prefix)
    fallback = re.compile(pattern)  # re.error: invalid, handled by the caller
    risk = backtracking_risk(pattern)
    if risk is not None:
        engine = "RE2 cannot run it" if _re2 is not None else "RE2 (otelhooks[re2]) is absent"
        raise InvalidMatcherError(
            f"the regex {source!r} can take exponential time ({risk}) and {engine}; "
            "simplify it (no nested quantifiers, alternations inside a quantified group or "
            "backreferences)",
            hook_id=hook_id,
            field="matcher",
        )
    # Python's re on the first MAX_FALLBACK_INPUT characters: a match there starts the value
    # with the prefix too, so the registry may rule the hook out by it all the same.
    return Matcher(source, MatchKind.REGEX, pattern=fallback, engine="re", prefix=prefix)


def _regex_or_exact(source: str, pattern: str, *, hook_id: str | None) -> Matcher:
    try:
        matcher = _compile_bounded(pattern, source, hook_id)
    except (re.error, RecursionError, OverflowError) as exc:
        _log.warning(
            "invalid regex matcher, falling back to exact match",
            hook_id=hook_id,
            matcher=source,
            error=str(exc),
        )
        return Matcher(source, MatchKind.NAMES, names=frozenset({source}))
    twin = codex_regex(pattern)
    if twin is None:
        return matcher
    # the same regex with the MCP names Codex CLI renames written its way (delete-file is its
    # delete_file): tried on Codex-shaped names only, so no other tool's name changes
    try:
        codex = _compile_bounded(twin, source, hook_id)
    except (re.error, RecursionError, OverflowError) as exc:  # pragma: no cover - a bug of ours
        _log.warning(
            "matcher: no Codex CLI twin, it may miss an MCP tool Codex renames",
            hook_id=hook_id,
            matcher=source,
            error=str(exc),
        )
        return matcher
    return dataclasses.replace(matcher, codex=codex)


def _split_names(source: str) -> frozenset[str]:
    return frozenset(n.strip() for n in re.split(r"[|,]", source) if n.strip())


# Claude Code's permission-rule shape, on the tools its ``if`` field reads (``Bash(git:*)``)
_PERMISSION_RULE: Final = re.compile(
    r"^\s*(Bash|PowerShell|Read|Edit|Write|MultiEdit|NotebookEdit|Glob|Grep|WebFetch)\(.*\)\s*$",
    re.DOTALL,
)
_KINDS: Final = re.compile(r"^[@A-Za-z0-9_\-, |/.:]+$")


def _kinds_matcher(source: str, hook_id: str | None) -> Matcher:
    """``@shell|Read``: each tool kind expanded to its names (:mod:`otelhooks._tool_kinds`),
    ``@mcp`` as a name-shape regex."""
    names: set[str] = set()
    mcp = False
    for name in _split_names(source):
        if name == MCP_KIND:
            mcp = True
            continue
        expanded = kind_names(name) if name.startswith("@") else frozenset({name})
        if expanded is None:
            raise InvalidMatcherError(
                f"hook {hook_id or '?'}: matcher {source!r}: unknown tool kind {name!r} "
                f"(known: {', '.join([*KIND_NAMES, MCP_KIND, *ANNOTATION_KINDS])})"
            )
        names |= expanded
    if not mcp:
        return Matcher(source, MatchKind.NAMES, names=_with_aliases(frozenset(names)))
    exact = "".join(f"|{re.escape(n)}$" for n in sorted(names))
    return _regex_or_exact(source, f"^(?:{MCP_PATTERN}{exact})", hook_id=hook_id)


def compile_matcher(source: str | None, dialect: str, *, hook_id: str | None = None) -> Matcher:
    """Compile ``source`` by the rules of ``dialect`` (see the module docstring).

    Example:
        >>> compile_matcher("Edit|Write", "claude").matches(("Write",))
        True
    """
    if source is None or source.strip() in ("", "*"):
        return ALL
    if "@" in source and _KINDS.match(source):
        return _kinds_matcher(source, hook_id)
    if dialect == "lobehub":
        return _regex_or_exact(source, source, hook_id=hook_id)
    is_slashed = len(source) >= 2 and source.startswith("/") and source.endswith("/")
    if dialect == "workspace":
        if is_slashed:
            return _regex_or_exact(source, source[1:-1], hook_id=hook_id)
        # Tool names never contain "|": reading "Edit|Write" as a list (Claude Code's meaning)
        # keeps every exact name working and lets Claude-style configs run unchanged.
        names = frozenset(n for n in source.split("|") if n)
        return Matcher(source, MatchKind.NAMES, names=_with_aliases(names))
    if dialect == "claude":
        if _CLAUDE_NAMES.match(source):
            return Matcher(source, MatchKind.NAMES, names=_with_aliases(_split_names(source)))
        return _regex_or_exact(source, source, hook_id=hook_id)
    # otelhooks (and the kernel, which has no matchers of its own)
    if is_slashed:
        return _regex_or_exact(source, source[1:-1], hook_id=hook_id)
    if _NATIVE_NAMES.match(source):
        return Matcher(source, MatchKind.NAMES, names=_with_aliases(_split_names(source)))
    return _regex_or_exact(source, source, hook_id=hook_id)


def never_matches(source: str | None, *, tool_event: bool) -> str | None:
    """Why a matcher can never match anything a runtime emits, or ``None``.

    Three mistakes are caught: a Claude Code MCP name without its tool part (``mcp__memory``, an
    exact name no tool has; Claude Code's reference says to write ``mcp__memory__.*``), a tool
    name (``mcp__...`` or ``server/tool``) on an event that carries no tool name, and a Claude
    Code permission rule (``Bash(git:*)``), which as a matcher does not match its tool, in
    Claude Code either: the rule belongs in the handler's ``if``.

    Example:
        >>> never_matches("mcp__memory", tool_event=True).split(":")[0]
        "'mcp__memory' names no tool"
        >>> never_matches("Bash(git:*)", tool_event=True).startswith("'Bash(git:*)' is a")
        True
    """
    if source is None:
        return None
    rule = _PERMISSION_RULE.match(source)
    if rule is not None and not compile_matcher(source, "claude").matches((rule[1],)):
        return (
            f"{source!r} is a permission rule, not a tool name, and never matches {rule[1]}: "
            f'write matcher {rule[1]!r} and, in Claude Code settings, "if": {source!r}'
        )
    names = [n.strip() for n in re.split(r"[|,]", source.strip("/")) if n.strip()]
    for name in names:
        if name.startswith(MCP_PREFIX) and _CLAUDE_NAMES.match(name):
            server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
            if not (sep and server and tool):
                return (
                    f"{name!r} names no tool: Claude Code names MCP tools "
                    f"mcp__<server>__<tool>; write {name.rstrip('_')}__.* for all of its tools"
                )
    if not tool_event and any(n.startswith(MCP_PREFIX) for n in names):
        return f"{source!r} names an MCP tool, and this event carries no tool name"
    return None
