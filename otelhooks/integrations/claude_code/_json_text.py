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

__all__ = ["JsonTextError", "Member", "Node", "apply", "dump", "parse", "rebuild"]

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


def _value(text: str, at: int, depth: int) -> Node:
    if depth > _MAX_DEPTH:
        raise JsonTextError(f"nested deeper than {_MAX_DEPTH} levels")
    if at >= len(text):
        raise JsonTextError("unexpected end of the text")
    char = text[at]
    if char == "{":
        return _object(text, at, depth)
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


def _object(text: str, at: int, depth: int) -> Node:
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
        value = _value(text, _skip(text, i + 1), depth + 1)
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


def parse(text: str) -> Node:
    """Parse ``text`` (one JSON value, whitespace around it) into located nodes.

    Raises:
        JsonTextError: not strict JSON, or a key twice in one object.

    Example:
        >>> parse('{"a": [1, 2]}').get("a").items[1].start
        10
    """
    root = _value(text, _skip(text, 0), 0)
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


def dump(value: Any, *, indent: str, unit: str) -> str:
    """``value`` as JSON in the file's style, its continuation lines indented by ``indent``."""
    text = json.dumps(value, indent=unit, ensure_ascii=False, allow_nan=False)
    return text.replace("\n", "\n" + indent)


def rebuild(
    text: str,
    node: Node,
    keep: Sequence[bool],
    new: Sequence[Any],
) -> tuple[int, int, str]:
    """The splice ``(start, end, replacement)`` of ``node``'s content: the parts ``keep`` says
    (verbatim, with the whitespace that was between them) and then ``new`` values (objects:
    ``(key, value)`` pairs) serialised in the file's indentation.

    Removing what an earlier ``rebuild`` appended gives back the earlier bytes.
    """
    parts = node.parts()
    open_at, close_at = node.start + 1, node.end - 1
    unit = _unit(text)
    if parts:
        ws_open = text[open_at : parts[0].start]
        ws_close = text[parts[-1].end : close_at]
        inner = ws_open.rsplit("\n", 1)[1] if "\n" in ws_open else ""
    else:
        outer = _indent_of(text, node.start)
        inner = outer + unit
        ws_open, ws_close = "\n" + inner, "\n" + outer
    if len(parts) >= 2:
        default_sep = text[parts[0].end : parts[1].start]
    else:
        default_sep = ",\n" + inner if "\n" in ws_open else ", "
    pieces: list[str] = []
    previous = -1
    for index, part in enumerate(parts):
        if not keep[index]:
            continue
        if pieces:
            pieces.append(
                text[parts[previous].end : part.start] if previous == index - 1 else default_sep
            )
        pieces.append(text[part.start : part.end])
        previous = index
    for value in new:
        if pieces:
            pieces.append(default_sep)
        if node.kind == "object":
            key, item = value
            pieces.append(f"{json.dumps(key)}: {dump(item, indent=inner, unit=unit)}")
        else:
            pieces.append(dump(value, indent=inner, unit=unit))
    if not pieces:
        return open_at, close_at, "" if parts else text[open_at:close_at]
    return open_at, close_at, ws_open + "".join(pieces) + ws_close


def apply(text: str, splices: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with non-overlapping splices applied (any order)."""
    for start, end, replacement in sorted(splices, key=lambda s: s[0], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
