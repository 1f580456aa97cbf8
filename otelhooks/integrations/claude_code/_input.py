"""Reading one hook input: JSON text in, a dict out, whatever its depth.

Claude Code writes the event as JSON; its ``tool_input`` is whatever the model produced, so it can
be nested deeper than Python's recursion limit lets :func:`json.loads` go (or than pydantic will
serialise). Such input is never an error: every value nested more than :data:`MAX_DEPTH` levels
below the event is kept as its JSON **text** (a string), so its content stays readable to a guard
(``*'rm -rf'*`` still matches) and every later step (state file, spans, hooks) sees a tree of
bounded depth.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["MAX_DEPTH", "InputProblem", "event_name_of", "parse_input"]

MAX_DEPTH: Final = 64

# Tokens that change the nesting: strings (skipped whole, so brackets inside them do not count)
# and the four brackets. The regex engine walks the text in C; Python only sees these tokens.
_TOKENS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_EVENT_NAME: Final = re.compile(r'"hook_event_name"\s*:\s*"([A-Za-z0-9_]{1,64})"')
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


class InputProblem(ValueError):
    """The hook input is not a JSON object (the message says why)."""


def _flatten_deep(text: str, limit: int) -> str:
    """``text`` with every value that opens deeper than ``limit`` replaced by its text, quoted."""
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
    out.append(text[copied:])
    return "".join(out)


def parse_input(raw: str | bytes) -> dict[str, Any]:
    """Parse one hook input; values deeper than :data:`MAX_DEPTH` become their JSON text.

    Raises:
        InputProblem: the input is not JSON, or not a JSON object.

    Example:
        >>> parse_input('{"hook_event_name": "Stop", "session_id": "s"}')["hook_event_name"]
        'Stop'
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        # fewer brackets than the limit cannot nest deeper than it: skip the scan (str.count is C)
        if text.count("{") + text.count("[") > MAX_DEPTH:
            text = _flatten_deep(text, MAX_DEPTH)
        data: Any = json.loads(text if text.strip() else "null")
    except (ValueError, RecursionError) as exc:
        raise InputProblem(f"the hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputProblem("the hook input is not a JSON object")
    if _SURROGATE_ESCAPE.search(text):
        data = _whole_characters(data)
    return dict(data)


def _whole_characters(value: Any) -> Any:
    """Lone surrogates (``\\ud800`` escapes) replaced by U+FFFD: they cannot be UTF-8 encoded,
    and a pair written as two escapes becomes its one character."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_whole_characters(k): _whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(v) for v in value]
    return value


def event_name_of(raw: str | bytes) -> str | None:
    """The ``hook_event_name`` of an input that could not be parsed, when it can be read."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    found = _EVENT_NAME.search(text[: 1 << 20])
    return found.group(1) if found else None
