"""What a person is shown of a held call's arguments is what will run.

The page reads the inbox as JSON, which holds no ``NaN`` or ``Infinity`` (Python's reader and
writer take them, a browser's ``JSON.parse`` refuses the whole listing): one card holding one
would leave the page without any card, every call waiting for its default. Such arguments, and
arguments nested too deep to write, are refused when the card is asked (the hook blocks the
call) or an edit is given (400). A browser also reads every number as a double, so an integer
past 2**53 would be shown rounded (``9007199254740993`` as ``...992``): each card carries its
arguments' own text (``args_text``), which the page shows.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ArgsNotShowable", "args_text", "showable"]


class ArgsNotShowable(ValueError):
    """Arguments no JSON reader can be shown as they are (a non-finite number, too deep)."""


def args_text(args: dict[str, Any] | None) -> str:
    """``args`` as the page shows them: JSON indented by two, characters as they are."""
    return json.dumps(args, indent=2, ensure_ascii=False, default=str)


def showable(args: dict[str, Any] | None) -> dict[str, Any] | None:
    """``args`` unchanged when JSON holds them as they are.

    Raises:
        ArgsNotShowable: a ``NaN`` or infinite number, or nesting deeper than Python writes.
    """
    if args is None:
        return None
    try:
        json.dumps(args, allow_nan=False, default=str)
    except ValueError as exc:  # "Out of range float values are not JSON compliant"
        raise ArgsNotShowable(f"arguments a person cannot be shown as they are: {exc}") from None
    except RecursionError:
        raise ArgsNotShowable("arguments a person cannot be shown: nested too deep") from None
    return args
