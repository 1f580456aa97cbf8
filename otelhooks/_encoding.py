"""The one JSON encoding of an event: it never fails, whatever the event holds.

Command stdin, the ``HOOK_*`` variables, control and notification webhook bodies all go through
:func:`event_json` and :func:`dumps`, so a tool argument shaped to break an encoder cannot switch a
guard off. The encoding of what plain JSON cannot hold, defined once:

================================ ===============================================================
value                            encoded as
================================ ===============================================================
a string with a lone surrogate   the string, each lone surrogate replaced by U+FFFD (a valid
(``"\\ud800"``)                    pair becomes its character): the output is always valid UTF-8
``NaN``, ``Infinity``            ``null`` (as JavaScript's ``JSON.stringify`` does)
an int too long for ``str``      its hexadecimal form as a string (``"0x1f..."``)
bytes                            a string, decoded as UTF-8 with U+FFFD for invalid bytes
tuple, set, frozenset            an array
a non-string dict key            ``str(key)``
datetime, date, Enum             ISO 8601 text; the enum's value
a pydantic model                 an object of its fields by alias
anything else                    ``str(value)`` (``"<unrepresentable T>"`` if that raises)
a container that contains itself ``"<circular>"``
a container nested deeper than   a string holding that container's compact JSON text: every
:data:`MAX_DEPTH` levels           document stays parseable by decoders with a nesting limit
                                 (Python's ``json`` at ~1,000, serde_json at 128), and its
                                 content (``rm -rf`` at depth 5,000) stays in the text
================================ ===============================================================

Strings are never shortened here: stdin and webhook bodies carry the whole event (only the
``HOOK_*`` variables have a size limit, see :mod:`otelhooks._actions._command_env`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Final

from pydantic import BaseModel

__all__ = ["MAX_DEPTH", "clean_text", "dumps", "event_json", "jsonable"]

MAX_DEPTH: Final = 64

# A string's JSON text (``encode`` of a ``str`` is its quoted, escaped form, non-ASCII kept).
_ENCODE_STRING: Final = json.JSONEncoder(ensure_ascii=False).encode


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so it encodes as UTF-8.

    Example:
        >>> clean_text("rm\\ud800 -rf")
        'rm\\ufffd -rf'
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 round trip: a valid surrogate pair becomes its character, a lone one U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _scalar(value: Any) -> tuple[bool, Any]:
    """(True, encoded) for a value that is not a container; (False, None) otherwise."""
    if value is None or value is True or value is False:
        return True, value
    if isinstance(value, str):
        return True, clean_text(value)
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:  # over sys.get_int_max_str_digits()
            return True, f"{value:#x}"
        return True, int(value)
    if isinstance(value, float):
        return True, value if value == value and value not in (_INF, -_INF) else None
    if isinstance(value, bytes | bytearray | memoryview):
        return True, clean_text(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, enum.Enum):
        return _scalar(value.value)
    if isinstance(value, datetime | date):
        return True, value.isoformat()
    if isinstance(value, Mapping | list | tuple | set | frozenset | BaseModel):
        return False, None
    try:
        return True, clean_text(str(value))
    except Exception:
        return True, f"<unrepresentable {type(value).__name__}>"


_INF: Final = float("inf")


def _items(value: Any, *, exclude_none: bool) -> list[tuple[str, Any]] | None:
    """The (key, value) pairs of an object-like value; None for an array-like one."""
    if isinstance(value, BaseModel):
        pairs: list[tuple[str, Any]] = []
        for name, field in type(value).model_fields.items():
            item = getattr(value, name, None)
            if not (exclude_none and item is None):
                pairs.append((field.alias or name, item))
        for name, item in (value.model_extra or {}).items():
            if not (exclude_none and item is None):
                pairs.append((name, item))
        return pairs
    if isinstance(value, Mapping):
        return [(k if isinstance(k, str) else _key(k), v) for k, v in value.items()]
    return None


def _key(key: Any) -> str:
    ok, encoded = _scalar(key)
    return encoded if ok and isinstance(encoded, str) else str(encoded if ok else id(key))


def _deep_text(value: Any, *, exclude_none: bool) -> str:
    """The compact JSON text of ``value``, built without recursion (any depth)."""
    out: list[str] = []
    on_path: set[int] = set()
    # Work items: ("v", value) encode a value; ("s", text) emit text; ("x", id) leave a container.
    work: list[tuple[str, Any]] = [("v", value)]
    while work:
        what, item = work.pop()
        if what == "s":
            out.append(item)
            continue
        if what == "x":
            on_path.discard(item)
            continue
        ok, encoded = _scalar(item)
        if ok:
            out.append(_ENCODE_STRING(encoded) if isinstance(encoded, str) else _atom(encoded))
            continue
        if id(item) in on_path:
            out.append('"<circular>"')
            continue
        on_path.add(id(item))
        pairs = _items(item, exclude_none=exclude_none)
        todo: list[tuple[str, Any]] = [("x", id(item))]
        if pairs is None:
            todo.append(("s", "]"))
            for index, element in reversed(list(enumerate(item))):
                todo.append(("v", element))
                if index:
                    todo.append(("s", ","))
            out.append("[")
        else:
            todo.append(("s", "}"))
            for index in range(len(pairs) - 1, -1, -1):
                key, element = pairs[index]
                todo.append(("v", element))
                todo.append(("s", _ENCODE_STRING(clean_text(key)) + ":"))
                if index:
                    todo.append(("s", ","))
            out.append("{")
        work.extend(todo)
    return "".join(out)


def _atom(value: Any) -> str:
    return json.dumps(value)


def jsonable(value: Any, *, exclude_none: bool = False, _depth: int = 0) -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None) by the table of
    the module docstring: :func:`json.dumps` of the result never fails.

    Example:
        >>> jsonable({"n": float("nan"), 1: b"x", "s": {"a", }})
        {'n': None, '1': 'x', 's': ['a']}
    """
    ok, encoded = _scalar(value)
    if ok:
        return encoded
    if _depth >= MAX_DEPTH:
        return _deep_text(value, exclude_none=exclude_none)
    pairs = _items(value, exclude_none=exclude_none)
    if pairs is None:
        return [jsonable(v, exclude_none=exclude_none, _depth=_depth + 1) for v in value]
    return {
        clean_text(k): jsonable(v, exclude_none=exclude_none, _depth=_depth + 1) for k, v in pairs
    }


def event_json(payload: BaseModel, *, exclude_none: bool = False) -> dict[str, Any]:
    """The JSON form of an event (its fields by alias), safe by the module's table.

    Pydantic's own ``model_dump(mode="json")`` gives the form when it can; an event it cannot
    dump (nesting past its limit of about 250 levels, say) is walked here instead, so this never
    raises.

    Example:
        >>> from otelhooks import ToolCallEvent
        >>> event = ToolCallEvent(toolCallId="c1", identifier="sh", apiName="run",
        ...                       toolName="run", args={"cmd": "rm -rf \\ud800"})
        >>> event_json(event)["args"]
        {'cmd': 'rm -rf \\ufffd'}
    """
    try:
        dumped: Any = payload.model_dump(
            mode="json", by_alias=True, exclude_none=exclude_none, fallback=str
        )
    except Exception:  # "Maximum serialization depth exceeded", a failing __str__, ...
        dumped = payload
    result = jsonable(dumped, exclude_none=exclude_none)
    return result if isinstance(result, dict) else {"event": str(result)}


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (any value, by the module's table); never raises.

    Example:
        >>> dumps({"cmd": "rm -rf \\ud800"})
        '{"cmd":"rm -rf \\ufffd"}'
    """
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
