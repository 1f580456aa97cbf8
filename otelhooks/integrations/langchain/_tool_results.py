"""What a ``hook_tool`` call hands back once ``tool_result_persist`` hooks kept a result's text:
the result itself, a ``ToolMessage`` or a LangGraph ``Command`` rewritten in place, or an error;
and the exception a tool raised, made again with the text the hooks kept of it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, cast

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from otelhooks._fingerprint import canonical_json

__all__ = [
    "ResultNotRewritableError",
    "ToolErrorNotRetoldError",
    "kept",
    "retold",
    "succeeded",
    "text",
]


class ResultNotRewritableError(Exception):
    """A ``tool_result_persist`` hook changed the text of a tool's result that otelhooks cannot
    rewrite as the result it is: a LangGraph ``Command`` (or a list holding one) whose
    ``update["messages"]`` holds no single ``ToolMessage`` of the call. Handing back the hook's
    text instead would drop the ``Command``'s state update and ``goto`` without a word."""


class ToolErrorNotRetoldError(Exception):
    """A ``hook_tool`` tool raised, ``tool_result_persist`` hooks changed (or blocked) the text of
    its exception, and otelhooks could not make that exception's type again from their text
    alone (its constructor wants more): raised in its place, its message the type's name and
    the hooks' text, so what a ``ToolNode``'s ``handle_tool_errors`` tells the model is theirs."""


def _plain(exc: Exception, message: str) -> bool:
    """``exc`` says nothing but ``message``: no attributes, and its ``repr`` (what a
    ``ToolNode``'s ``handle_tool_errors=True`` tells the model) built from that text alone."""
    shown = f"{type(exc).__name__}({message!r})" if message else f"{type(exc).__name__}()"
    return not vars(exc) and repr(exc) == shown


def retold(exc: Exception, message: str, kept: str, judged: bool) -> Exception | None:
    """The exception to raise for ``exc`` once the hooks kept ``kept`` of its text
    ``message`` (``judged``: a hook ran on it): ``None`` (raise ``exc`` itself) when they left
    it and it says nothing else, else one of ``exc``'s type made from ``kept`` alone (nothing
    of ``exc``'s own state in it: its other arguments, attributes and ``repr`` went unjudged),
    else a :class:`ToolErrorNotRetoldError`."""
    if kept == message and (not judged or _plain(exc, message)):
        return None
    try:
        again = type(exc)(kept)
    except Exception:  # a constructor wanting more than the text: say so, never pass exc on
        again = None
    if isinstance(again, Exception):
        return again
    return ToolErrorNotRetoldError(f"{type(exc).__name__}: {kept}")


def tool_message(command: Command[Any], tool_call_id: str | None) -> ToolMessage | None:
    """The call's own message in ``command``'s ``update["messages"]``: the one ``ToolMessage``
    bound to ``tool_call_id`` (``None``: none, several, or an update of another shape)."""
    update = command.update
    messages = update.get("messages") if isinstance(update, dict) else None
    if tool_call_id is None or not isinstance(messages, list):
        return None
    found = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == tool_call_id]
    return found[0] if len(found) == 1 else None


def succeeded(output: Any) -> bool:
    """False for a tool error LangChain turned into the tool's answer (``handle_tool_error``,
    ``handle_validation_error``: a ``ToolMessage`` with ``status="error"``)."""
    return getattr(output, "status", None) != "error"


def _content(output: Any, tool_call_id: str | None) -> Any:
    """What of ``output`` the model reads: a ``ToolMessage``'s content (a ``Command``'s, its
    call's message's), else ``output`` itself (a ``Command`` without such a message)."""
    if isinstance(output, Command):
        message = tool_message(output, tool_call_id)
        if message is None:
            return output
        output = message
    return getattr(output, "content", output)


def text(output: Any, tool_call_id: str | None = None) -> str:
    """The text of ``output`` the ``tool_result_persist`` hooks judge: a ``Command``'s is its
    call's ``ToolMessage``'s, or (none to rewrite) the whole ``Command``'s. Content that is
    no string (content blocks, ``[{"type": "text", "text": ...}]``; a dict) is its JSON, as
    every other tool result's is: a hook parsing it must not meet Python's ``repr``."""
    content = _content(output, tool_call_id)
    if isinstance(content, str):
        return content
    if isinstance(content, list | dict):
        return canonical_json(content)
    return str(content)


def _restored(content: Any, kept: str) -> Any:
    """``kept`` as the content it replaces: content blocks (a list) or a dict the hooks kept
    as JSON of the same kind are handed back as that kind (a model reads blocks, not their
    text), anything else as the text."""
    if isinstance(content, list | dict):
        try:
            again = json.loads(kept)
        except ValueError:
            return kept
        if type(again) is type(content):
            return again
    return kept


def kept(output: Any, kept: str, tool_call_id: str | None) -> Any:
    """What the caller gets once the hooks kept ``kept`` of ``output``'s text: ``output`` when
    they left it; a ``ToolMessage`` (its ``status``, ``artifact``) or a ``Command`` (its update
    and ``goto``) holding ``kept`` as its call's message; else ``kept``. A ``Command`` without
    such a message raises, never lost."""
    if kept == text(output, tool_call_id):
        return output
    content = _restored(_content(output, tool_call_id), kept)
    if isinstance(output, ToolMessage):
        return output.model_copy(update={"content": content})
    holds_command = isinstance(output, list) and any(isinstance(o, Command) for o in output)
    if isinstance(output, Command):
        message = tool_message(output, tool_call_id)
        if message is not None:
            update = cast(dict[str, Any], output.update)
            messages = [
                message.model_copy(update={"content": content}) if m is message else m
                for m in update["messages"]
            ]
            return dataclasses.replace(output, update={**update, "messages": messages})
    elif not holds_command:
        return content
    raise ResultNotRewritableError(
        "a tool_result_persist hook changed the result of this call, a LangGraph Command (or "
        f"a list of them) without a single ToolMessage for call {tool_call_id!r} in "
        "update['messages'] to rewrite: otelhooks cannot hand it back rewritten without "
        "dropping its update"
    )
