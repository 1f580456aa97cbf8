"""Minimal edits of a JSON text: members and items added or removed, every other byte kept.

``install`` must not rewrite a user's ``settings.json``: re-serialising it loses what Python's
:mod:`json` cannot carry (``1e400`` becomes ``Infinity``, which Node's ``JSON.parse`` rejects),
reformats it, and a duplicate key silently loses its first value. So the text is parsed once into
:class:`Node` values that know where they are (``start``/``end`` offsets), and a change is a
splice: kept members and items are copied verbatim with the whitespace between them, new ones
are serialised in the indentation the file already uses. Removing what was added gives back the
original bytes.

:func:`parse` refuses (:class:`JsonTextError`) what it cannot round-trip: text that is not
strict JSON (comments, ``NaN``, a BOM, trailing commas), and a key given twice in one object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "JsonTextError",
    "Member",
    "Node",
    "apply",
    "dump",
    "fill_empty",
    "newline",
    "parse",
    "rebuild",
    "unfilled",
]

_WS: Final = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_DECODER: Final = json.JSONDecoder()
_MAX_DEPTH: Final = 256


class JsonTextError(ValueError):
    """The text is not JSON this editor can change without losing something (says why)."""


@dataclass(slots=True)
class Member:
    """One ``"key": value`` of an object; ``start`` is the key's opening quote."""

    key: str
    start: int
    value: Node

    @property
    def end(self) -> int:
        return self.value.end


@dataclass(slots=True)
class Node:
    """A JSON value at ``text[start:end]``; ``kind`` is ``object``, ``array`` or ``scalar``."""

    kind: str
    start: int
    end: int
    members: list[Member] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        """The value of member ``key`` of an object (``None`` when absent or not an object)."""
        return next((m.value for m in self.members if m.key == key), None)

    def parts(self) -> Sequence[Member | Node]:
        return self.members if self.kind == "object" else self.items


def _skip(text: str, at: int) -> int:
    match = _WS.match(text, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _once(pairs: list[tuple[str, Any]]) -> None:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise JsonTextError(f"the key {twice!r} is given twice in one object")


def _no_constant(name: str) -> None:
    raise JsonTextError(f"not JSON: {name}")


# the same rules in C, for a value no splice goes into: only what is refused matters
_CHECKER: Final = json.JSONDecoder(
    object_pairs_hook=_once,
    parse_float=lambda _: None,
    parse_int=lambda _: None,  # no int() of a 5,000-digit number (Python's limit refuses it)
    parse_constant=_no_constant,
)
_KINDS: Final = {"{": "object", "[": "array"}


def _opaque(text: str, at: int) -> Node:
    """A value checked but not located inside (a 13 MB ``permissions`` list took seconds)."""
    if at >= len(text):
        raise JsonTextError("unexpected end of the text")
    try:
        end = int(_CHECKER.raw_decode(text, at)[1])
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"not JSON at offset {exc.pos}: {exc.msg}") from None
    except RecursionError:
        raise JsonTextError(f"nested deeper than {_MAX_DEPTH} levels") from None
    return Node(_KINDS.get(text[at], "scalar"), at, end)


def _value(text: str, at: int, depth: int, only: str | None = None) -> Node:
    if depth > _MAX_DEPTH:
        raise JsonTextError(f"nested deeper than {_MAX_DEPTH} levels")
    if at >= len(text):
        raise JsonTextError("unexpected end of the text")
    char = text[at]
    if char == "{":
        return _object(text, at, depth, only)
    if char == "[":
        return _array(text, at, depth)
    if char == '"':
        _, end = _string(text, at)
        return Node("scalar", at, end)
    for word in ("true", "false", "null"):
        if text.startswith(word, at):
            return Node("scalar", at, at + len(word))
    number = _NUMBER.match(text, at)
    if number is None or number.end() == at:
        raise JsonTextError(f"not JSON at offset {at}: {text[at : at + 20]!r}")
    return Node("scalar", at, number.end())


def _string(text: str, at: int) -> tuple[str, int]:
    try:
        value, end = _DECODER.raw_decode(text, at)  # the string that starts at ``at``
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"bad string at offset {at}: {exc.msg}") from None
    return str(value), int(end)


def _object(text: str, at: int, depth: int, only: str | None = None) -> Node:
    node = Node("object", at, at)
    seen: set[str] = set()
    i = _skip(text, at + 1)
    if text.startswith("}", i):
        node.end = i + 1
        return node
    while True:
        if not text.startswith('"', i):
            raise JsonTextError(f"expected a key at offset {i}")
        key_start = i
        key, i = _string(text, i)
        if key in seen:
            raise JsonTextError(f"the key {key!r} is given twice in one object")
        seen.add(key)
        i = _skip(text, i)
        if not text.startswith(":", i):
            raise JsonTextError(f"expected ':' at offset {i}")
        at_value = _skip(text, i + 1)
        if only is not None and key != only:
            value = _opaque(text, at_value)
        else:
            value = _value(text, at_value, depth + 1)
        node.members.append(Member(key, key_start, value))
        i = _skip(text, value.end)
        if text.startswith(",", i):
            i = _skip(text, i + 1)
            continue
        if text.startswith("}", i):
            node.end = i + 1
            return node
        raise JsonTextError(f"expected ',' or '}}' at offset {i}")


def _array(text: str, at: int, depth: int) -> Node:
    node = Node("array", at, at)
    i = _skip(text, at + 1)
    if text.startswith("]", i):
        node.end = i + 1
        return node
    while True:
        item = _value(text, i, depth + 1)
        node.items.append(item)
        i = _skip(text, item.end)
        if text.startswith(",", i):
            i = _skip(text, i + 1)
            continue
        if text.startswith("]", i):
            node.end = i + 1
            return node
        raise JsonTextError(f"expected ',' or ']' at offset {i}")


def parse(text: str, only: str | None = None) -> Node:
    """Parse ``text`` (one JSON value, whitespace around it) into located nodes; with ``only``,
    of a root object only that member's value is located inside (the others are checked as
    strictly, and are one node each).

    Raises:
        JsonTextError: not strict JSON, or a key twice in one object.

    Example:
        >>> parse('{"a": [1, 2]}').get("a").items[1].start
        10
    """
    root = _value(text, _skip(text, 0), 0, only)
    if _skip(text, root.end) != len(text):
        raise JsonTextError(f"text after the JSON value at offset {root.end}")
    return root


def _indent_of(text: str, at: int) -> str:
    """The whitespace that starts the line holding offset ``at``."""
    line = text.rfind("\n", 0, at) + 1
    return text[line : _skip(text, line)] if _skip(text, line) <= at else ""


def _unit(text: str) -> str:
    """The file's indentation step (two spaces when it has none)."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def newline(text: str) -> str:
    """The file's line break: ``\r\n`` when its first one is, else ``\n`` (a line added to a
    CRLF file with ``\n`` mixed the endings, and an editor or git showed every line changed)."""
    at = text.find("\n")
    return "\r\n" if at > 0 and text[at - 1] == "\r" else "\n"


def dump(value: Any, *, indent: str, unit: str, eol: str = "\n") -> str:
    """``value`` as JSON in the file's style, its continuation lines indented by ``indent``
    and ended by ``eol``."""
    text = json.dumps(value, indent=unit, ensure_ascii=False, allow_nan=False)
    return text.replace("\n", eol + indent)


def rebuild(
    text: str,
    node: Node,
    keep: Sequence[bool],
    new: Sequence[Any],
    texts: Sequence[str | None] = (),
) -> tuple[int, int, str]:
    """The splice ``(start, end, replacement)`` of ``node``'s content: the parts ``keep`` says
    (verbatim, or as ``texts`` gives a part's new text, with the whitespace that was between
    them) and then ``new`` values (objects: ``(key, value)`` pairs) serialised in the file's
    indentation and line breaks.

    Removing what an earlier ``rebuild`` appended gives back the earlier bytes.
    """
    parts = node.parts()
    open_at, close_at = node.start + 1, node.end - 1
    unit = _unit(text)
    eol = newline(text)
    if parts:
        ws_open = text[open_at : parts[0].start]
        ws_close = text[parts[-1].end : close_at]
        inner = ws_open.rsplit("\n", 1)[1] if "\n" in ws_open else ""
    else:
        outer = _indent_of(text, node.start)
        inner = outer + unit
        ws_open, ws_close = eol + inner, eol + outer
    if len(parts) >= 2:
        default_sep = text[parts[0].end : parts[1].start]
    else:
        default_sep = "," + eol + inner if "\n" in ws_open else ", "
    pieces: list[str] = []
    previous = -1
    for index, part in enumerate(parts):
        if not keep[index]:
            continue
        if pieces:
            pieces.append(
                text[parts[previous].end : part.start] if previous == index - 1 else default_sep
            )
        changed = texts[index] if texts else None
        pieces.append(text[part.start : part.end] if changed is None else changed)
        previous = index
    for value in new:
        if pieces:
            pieces.append(default_sep)
        if node.kind == "object":
            key, item = value
            pieces.append(f"{json.dumps(key)}: {dump(item, indent=inner, unit=unit, eol=eol)}")
        else:
            pieces.append(dump(value, indent=inner, unit=unit, eol=eol))
    if not pieces:
        return open_at, close_at, "" if parts else text[open_at:close_at]
    return open_at, close_at, ws_open + "".join(pieces) + ws_close


def fill_empty(text: str, node: Node, value: Any, inside: str | None = None) -> str:
    """The new text of the empty array ``node`` holding ``value``: the whitespace that was
    inside it (``inside``, when ``node`` is no longer empty) kept in front, and no line break
    before the closing bracket, unlike an array :func:`rebuild` writes, so :func:`unfilled` can
    give the empty array back.

    Example:
        >>> fill_empty('{"a": []}', parse('{"a": []}').get("a"), 1)
        '[1]'
    """
    inside = text[node.start + 1 : node.end - 1] if inside is None else inside
    indent = inside.rsplit("\n", 1)[1] if "\n" in inside else _indent_of(text, node.start)
    return f"[{inside}{dump(value, indent=indent, unit=_unit(text), eol=newline(text))}]"


def unfilled(text: str, node: Node) -> str | None:
    """The empty array ``node`` was before :func:`fill_empty` put its items in (``None``: an
    array not in that form: one :func:`rebuild` created ends with a line break, one written
    on one line, as ``json.dumps`` writes, holds none)."""
    items = node.items
    if node.kind != "array" or not items or items[-1].end != node.end - 1:
        return None
    if "\n" not in text[items[-1].start : items[-1].end]:
        return None
    return "[" + text[node.start + 1 : items[0].start] + "]"


def apply(text: str, splices: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with non-overlapping splices applied (any order)."""
    for start, end, replacement in sorted(splices, key=lambda s: s[0], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
