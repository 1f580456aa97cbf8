"""Reading a config file into data plus the line of every value, for errors that say where.

JSON is parsed by :mod:`json` (the authority on what the data is); a second pass over the now
known-valid text records the line of each object key and array item. YAML is composed into nodes
(whose marks carry lines) and constructed from them, with YAML 1.2 booleans: only ``true`` and
``false`` are booleans, so ``on:`` (the agent OS's key) and ``no`` stay strings.

Every failure here is a :class:`~otelhooks.ConfigError` naming the file (and the line when the
parser knows it); nothing else escapes.

Bounds, so that a small hostile file cannot cost gigabytes or a traceback (issue 13):

- a file is at most :data:`MAX_FILE_BYTES` (1 MiB) and no more than that is ever read;
- objects and lists nest at most :data:`MAX_DEPTH` (64) levels, checked while the text is read
  (before a recursive parser could hit Python's recursion limit), with the line where it
  happens;
- YAML aliases may not make a document expand beyond :data:`MAX_EXPANDED` (4,000,000): the
  expanded size counts one per node plus the characters of every scalar, each time an alias
  repeats it. An alias-free file under the size cap is always within it; a "billion laughs"
  (1.4 KB expanding to gigabytes) is refused with the line of the node that crosses the bound.
  A recursive alias (a node that contains itself) is refused too.
"""

from __future__ import annotations

import bisect
import codecs
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from otelhooks._errors import ConfigError

__all__ = [
    "JSON_SUFFIXES",
    "MAX_DEPTH",
    "MAX_EXPANDED",
    "MAX_FILE_BYTES",
    "YAML_SUFFIXES",
    "Document",
    "Loc",
    "parse_file",
]

Loc = tuple[str | int, ...]

JSON_SUFFIXES: Final = (".json",)
YAML_SUFFIXES: Final = (".yaml", ".yml")
MAX_FILE_BYTES: Final = 1024 * 1024
MAX_DEPTH: Final = 64
MAX_EXPANDED: Final = 4_000_000


class _TooDeep(yaml.MarkedYAMLError):
    """Raised by the composer past :data:`MAX_DEPTH` (a MarkedYAMLError, so it has a line)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans and a nesting bound."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # PyYAML's composer recurses once per level: bound it before Python's recursion limit.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _TooDeep(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_BOOL = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@dataclass(slots=True)
class Document:
    """One parsed document: its data and where each value is.

    Attributes:
        path: the file.
        data: the parsed value.
        lines: the 1-based line of each location (object key, array item).
        index: the document's position in a multi-document YAML stream.
    """

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    index: int = 0

    def line(self, loc: Sequence[str | int]) -> int | None:
        """The line of ``loc``, or of its nearest enclosing location that has one."""
        parts = tuple(loc)
        while True:
            found = self.lines.get(parts)
            if found is not None:
                return found
            if not parts:
                return None
            parts = parts[:-1]

    def error(
        self,
        problem: str,
        loc: Sequence[str | int] = (),
        *,
        hook_id: str | None = None,
        field: str | None = None,
    ) -> ConfigError:
        """A ConfigError at ``loc`` of this document."""
        return ConfigError(
            problem, file=str(self.path), hook_id=hook_id, field=field, line=self.line(loc)
        )


# -- JSON -----------------------------------------------------------------------------------------

_DECODER: Final = json.JSONDecoder()


def _string_at(text: str, i: int) -> tuple[str, int]:
    """The JSON string whose opening quote is at ``i``, and the index past its closing quote."""
    value, end = _DECODER.raw_decode(text, i)
    return str(value), end


_WS = re.compile(r"[ \t\n\r]*")
_LITERAL = re.compile(r"-?Infinity|NaN|true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


class _JsonLines:
    """Walks valid JSON text and records the line of each key and item."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.lines: dict[Loc, int] = {}

    def line_of(self, index: int) -> int:
        return bisect.bisect_right(self.starts, index)

    def skip(self, i: int) -> int:
        match = _WS.match(self.text, i)
        return match.end() if match else i

    def value(self, i: int, loc: Loc) -> int:
        text = self.text
        i = self.skip(i)
        self.lines.setdefault(loc, self.line_of(i))
        char = text[i]
        if char == "{":
            i = self.skip(i + 1)
            if text[i] == "}":
                return i + 1
            while True:
                i = self.skip(i)
                key, end = _string_at(text, i)
                self.lines[(*loc, key)] = self.line_of(i)
                i = self.skip(end) + 1  # past ':'
                i = self.skip(self.value(i, (*loc, key)))
                if text[i] == "}":
                    return i + 1
                i += 1  # past ','
        if char == "[":
            i = self.skip(i + 1)
            if text[i] == "]":
                return i + 1
            index = 0
            while True:
                i = self.skip(self.value(i, (*loc, index)))
                index += 1
                if text[i] == "]":
                    return i + 1
                i += 1
        if char == '"':
            return _string_at(text, i)[1]
        match = _LITERAL.match(text, i)
        if match is None:
            raise ValueError(f"unexpected {char!r}")
        return match.end()


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_json_depth(path: Path, text: str) -> None:
    """Refuse nesting past :data:`MAX_DEPTH` before :mod:`json` recurses into it."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                raise ConfigError(
                    f"nested deeper than {MAX_DEPTH} levels", file=str(path), line=line
                )
        elif char in "]}":
            depth -= 1


def _json_document(path: Path, text: str) -> Document:
    _check_json_depth(path, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"invalid JSON: {exc}", file=str(path)) from None
    walker = _JsonLines(text)
    try:
        walker.value(0, ())
    except (ValueError, IndexError, RecursionError):
        walker.lines.clear()  # lines are a courtesy: the data stands without them
    return Document(path, data, walker.lines)


# -- YAML -----------------------------------------------------------------------------------------


def _node_lines(root: Node) -> dict[Loc, int]:
    lines: dict[Loc, int] = {(): root.start_mark.line + 1}
    seen: set[int] = set()  # aliases share nodes: each is walked once (no alias bombs)
    stack: list[tuple[Node, Loc]] = [(root, ())]
    while stack:
        node, loc = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, ScalarNode) else str(key_node.tag)
                lines.setdefault((*loc, key), key_node.start_mark.line + 1)
                stack.append((value_node, (*loc, key)))
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                lines.setdefault((*loc, index), item.start_mark.line + 1)
                stack.append((item, (*loc, index)))
    return lines


def _check_expansion(path: Path, root: Node) -> None:
    """Refuse a document whose aliases expand it past :data:`MAX_EXPANDED` (or into itself).

    Each node's expanded size is computed once (post-order over the node graph), so the check
    is linear in the file even when the expansion is exponential.
    """
    size: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            if isinstance(node, MappingNode):
                children = [n for pair in node.value for n in pair]
            elif isinstance(node, SequenceNode):
                children = list(node.value)
            else:
                children = []
            total = 1 + (len(node.value) if isinstance(node, ScalarNode) else 0)
            total += sum(size[id(child)] for child in children)
            if total > MAX_EXPANDED:
                raise ConfigError(
                    f"YAML aliases expand this document past {MAX_EXPANDED:,} nodes and "
                    "characters (an alias bomb?)",
                    file=str(path),
                    line=node.start_mark.line + 1,
                )
            size[key] = total
            continue
        if key in size:
            continue
        if key in active:
            raise ConfigError(
                "a YAML alias refers to a node that contains it (recursive data)",
                file=str(path),
                line=node.start_mark.line + 1,
            )
        active.add(key)
        stack.append((node, True))
        if isinstance(node, MappingNode):
            stack.extend((n, False) for pair in node.value for n in pair)
        elif isinstance(node, SequenceNode):
            stack.extend((n, False) for n in node.value)


def _yaml_documents(path: Path, text: str) -> list[Document]:
    documents: list[Document] = []
    loader: _Loader | None = None
    try:
        loader = _Loader(text)
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _check_expansion(path, node)
            data = loader.construct_document(node)
            documents.append(Document(path, data, _node_lines(node), index=len(documents)))
    except ConfigError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "cannot parse"
        raise ConfigError(f"invalid YAML: {problem}", file=str(path), line=line) from None
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=str(path)) from None
    finally:
        if loader is not None:
            loader.dispose()
    return documents


# -- files ----------------------------------------------------------------------------------------


def parse_file(path: Path) -> list[Document]:
    """Read ``path`` (JSON by its ``.json`` suffix, YAML by ``.yaml``/``.yml``).

    Raises:
        ConfigError: unreadable, too large, not UTF-8, not parseable, empty, or another suffix.
    """
    if not path.exists():
        # Before the suffix check: a typo in a path is "no such file", not a file type problem.
        raise ConfigError("no such file or directory", file=str(path))
    name = path.name.lower()
    is_json = name.endswith(JSON_SUFFIXES)
    if not is_json and not name.endswith(YAML_SUFFIXES):
        raise ConfigError(
            "unsupported file type: config files end in .json, .yaml or .yml", file=str(path)
        )
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)  # never more: a 50 MB file costs 1 MiB
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(
            f"larger than {MAX_FILE_BYTES:,} bytes (the config file size cap)", file=str(path)
        )
    try:
        text = raw.decode(_encoding(raw))
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError("not UTF-8 text", file=str(path), line=line) from None
    documents = [_json_document(path, text)] if is_json else _yaml_documents(path, text)
    documents = [d for d in documents if d.data is not None]
    if not documents:
        raise ConfigError("the file is empty", file=str(path))
    return documents


def _encoding(raw: bytes) -> str:
    """The encoding a config file's byte order mark names (YAML reads UTF-8, UTF-16 and UTF-32 by
    their mark; Windows PowerShell 5's ``>`` and Notepad's "Unicode" write UTF-16 with one: read
    as UTF-8, such a hooks file was refused and every guard of the hook command was off), else
    UTF-8, with or without its mark."""
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"  # before UTF-16: UTF-32 LE's mark begins with UTF-16 LE's
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8-sig"
