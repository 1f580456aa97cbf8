"""Reading JSON that someone else wrote: any depth, any size of number, never a crash.

:func:`json.loads` raises :class:`RecursionError` on a value nested about a thousand levels deep,
and on Python 3.11 a :class:`ValueError` on an integer of more than 4,300 digits. Input that
reaches a guard (a hook input, an MCP frame, a recorded span) may be shaped to do either, and a
crash there must not become a silent allow. :func:`loads_bounded` reads such input as data:
every value nested more than ``max_depth`` levels below the top is kept as its JSON **text** (a
string), so its content stays readable to a guard (``*'rm -rf'*`` still matches at depth
5,000) and every later step sees a tree of bounded depth. What still cannot be read (not JSON,
an integer too long to convert) raises :class:`JsonProblem`, a :class:`ValueError`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from pydantic_core import from_json

__all__ = ["MAX_DEPTH", "JsonProblem", "flatten_deep", "loads_bounded"]

MAX_DEPTH: Final = 64

# Tokens that change the nesting: strings (skipped whole, so brackets inside them do not count)
# and the four brackets. The regex engine walks the text in C; Python only sees these tokens.
_TOKENS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


class JsonProblem(ValueError):
    """The text is not JSON that can be read (the message says why)."""


def flatten_deep(text: str, limit: int = MAX_DEPTH) -> str:
    """``text`` with every value that opens deeper than ``limit`` replaced by its text, quoted.

    Example:
        >>> flatten_deep('{"a": {"b": [1]}}', 1)
        '{"a": "{\\\\"b\\\\": [1]}"}'
    """
    # fewer brackets than the limit cannot nest deeper than it: skip the scan (str.count is C)
    if text.count("{") + text.count("[") <= limit:
        return text
    out: list[str] = []
    depth = 0
    copied = 0  # text[:copied] is in ``out`` already
    cut_start = -1  # where the value being cut opened, or -1
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == limit + 1 and cut_start < 0:
                cut_start = match.start()
        else:
            if depth == limit + 1 and cut_start >= 0:
                out.append(text[copied:cut_start])
                out.append(json.dumps(text[cut_start : match.end()], ensure_ascii=False))
                copied = match.end()
                cut_start = -1
            depth -= 1
    if cut_start >= 0:  # never closed: the text is not JSON; let the parser say where
        return text
    out.append(text[copied:])
    return "".join(out)


def loads_bounded(raw: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw``; values nested deeper than ``max_depth`` become their JSON text.

    Bytes must be UTF-8: an invalid byte is a :class:`JsonProblem` (a reader that replaced it
    would see another text than the peer it forwards the bytes to).

    Raises:
        JsonProblem: not UTF-8, not JSON, or an integer too long to convert.

    Example:
        >>> loads_bounded(b'{"cmd": "ls"}')
        {'cmd': 'ls'}
        >>> deep = "[" * 100 + "]" * 100
        >>> type(loads_bounded(deep, max_depth=2)[0][0])
        <class 'str'>
    """
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
        text = flatten_deep(text, max_depth)
        try:
            # pydantic-core's parser costs a quarter of json.loads on a tool call's arguments;
            # what it refuses (a lone surrogate escape, which json.loads reads) or fails on is
            # left to json.loads, so every value and every error is json.loads's.
            return from_json(text)
        except ValueError:
            return json.loads(text)
    except UnicodeDecodeError as exc:
        raise JsonProblem(f"invalid UTF-8 at byte {exc.start}") from None
    except ValueError as exc:  # JSONDecodeError, and int() past sys.get_int_max_str_digits()
        raise JsonProblem(str(exc)) from None
    except RecursionError:  # unreachable after flattening; kept so no input can crash a reader
        raise JsonProblem("nested too deeply") from None
