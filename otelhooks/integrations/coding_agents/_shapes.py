"""A tool output a hook rewrote or withheld, in the tool's own output shape.

Claude Code's ``updatedToolOutput`` must match the tool's output shape (``Bash`` returns
``{stdout, stderr, interrupted, isImage}``): for a built-in tool it ignores a replacement that does
not, and the model would see the original. A text a hook gives for a structured output takes the
place of its main text field.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["main_text", "reported_error", "shaped", "withheld_like"]

_TEXT_KEYS: Final = ("stdout", "text", "content", "output", "result")


def withheld_like(original: Any, note: str) -> Any:
    """A value of ``original``'s shape that carries ``note`` instead of its content: what
    replaces a tool's output that a hook withheld (Claude Code ignores a replacement for a
    built-in tool whose shape does not match, and the model would see the original).

    Example:
        >>> withheld_like({"stdout": "S-42", "stderr": "", "interrupted": False}, "[gone]")
        {'stdout': '[gone]', 'stderr': '', 'interrupted': False}
    """
    if isinstance(original, dict):
        texts = [k for k, v in original.items() if isinstance(v, str | dict | list)]
        keep = next((k for k in _TEXT_KEYS if k in texts), texts[0] if texts else None)
        out: dict[str, Any] = {}
        for key, value in original.items():
            if key == keep:
                out[key] = withheld_like(value, note)
            elif key == "type" or not isinstance(value, str | dict | list):
                out[key] = value
            else:
                out[key] = type(value)()
        return out if keep is not None else note
    if isinstance(original, list):
        return [withheld_like(original[0], note)] if original else [note]
    return note


def shaped(original: Any, new: Any) -> Any:
    """``new`` (a hook's rewritten tool result) in ``original``'s shape, for
    ``updatedToolOutput``: a string given for a structured output takes the text's place."""
    if isinstance(new, str) and isinstance(original, dict | list):
        return withheld_like(original, new)
    return new


def main_text(value: Any) -> str:
    """The text a tool output shows: a string itself, a structured output's main text field
    (the one :func:`withheld_like` puts a note in), else its JSON.

    Example:
        >>> main_text({"llmContent": "[redacted]", "returnDisplay": ""})
        '[redacted]'
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        strings = {k: v for k, v in value.items() if isinstance(v, str)}
        key = next((k for k in _TEXT_KEYS if k in strings), next(iter(strings), None))
        if key is not None:
            return strings[key]
    return json.dumps(value, default=str, ensure_ascii=False)


def reported_error(response: Any) -> tuple[str, str] | None:
    """The error a tool's output reports, and its type: Gemini CLI sends ``AfterTool`` for a
    tool that failed too, its ``tool_response`` carrying ``error: {message, type}`` (Claude Code
    sends ``PostToolUseFailure`` instead). ``None`` when it reports none.

    Example:
        >>> reported_error({"llmContent": "x", "error": {"message": "Blocked Host", "type": "t"}})
        ('Blocked Host', 't')
        >>> reported_error({"llmContent": "ok"}) is None
        True
    """
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type")
        if isinstance(message, str) and message.strip():
            return message, kind if isinstance(kind, str) and kind else "ToolError"
    if isinstance(error, str) and error.strip():
        return error, "ToolError"
    return None
