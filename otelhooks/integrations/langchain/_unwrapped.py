"""What the LangChain handler does when the hooks decide on a tool no ``hook_tool`` wraps.

A callback cannot hand such a tool a mock or new arguments, nor the model the text a
``tool_result_persist`` hook kept of its result. What it can do is raise (the handler's
``raise_error``): from the tool's start, LangChain raises before the tool runs; from its end, the
tool's own result never reaches the model. So a call the hooks deny, mock or rewrite is refused
(:func:`refusal`), and a result they block or rewrite is withheld (:func:`withheld`), each with a
warning that names the fix, rather than run or returned as if nothing had been decided.
"""

from __future__ import annotations

import structlog

from otelhooks._errors import ToolDenied
from otelhooks._instrument import ToolCall

__all__ = ["refusal", "unjudged", "withheld"]

_FIX = "wrap it with otelhooks.integrations.langchain.hook_tool"

_log = structlog.get_logger("otelhooks")


def refusal(call: ToolCall) -> ToolDenied:
    """The refusal to raise from the start of ``call``, whose hooks denied, mocked or rewrote
    it; a rewrite is recorded on its span as refused, since the tool would run as the model
    wrote it."""
    if call.should_run:  # rewritten: the tool would run with the arguments as they were
        call.refuse(
            "a before_tool_call hook rewrote the arguments, which a tool no hook_tool wraps "
            "cannot take: refused rather than run as the model wrote it"
        )
    decision = "denied" if call.denied and not call.mocked else "mocked"
    _log.warning(
        "a tool hook decided on a tool that is not wrapped: refused",
        tool=call.matcher_value,
        decision=decision,
        fix=_FIX,
    )
    reason = call.deny_reason if call.denied else None
    return ToolDenied(
        reason or f"a hook {decision} it, which a tool no hook_tool wraps cannot obey",
        tool=call.matcher_value,
    )


def withheld(call: ToolCall, seen: str, kept: str) -> ToolDenied | None:
    """The refusal to raise from the end of ``call`` when its ``tool_result_persist`` hooks
    blocked its result or kept ``kept`` of the ``seen`` text; ``None`` when they left it."""
    if not call.persist_blocked and kept == seen:
        return None
    _log.warning(
        "a tool_result_persist hook blocked or rewrote the result of a tool that is not "
        "wrapped: withheld",
        tool=call.api_name,
        blocked=call.persist_blocked,
        fix=_FIX,
    )
    return ToolDenied(
        kept
        if call.persist_blocked
        else "a tool_result_persist hook rewrote the result, which a tool no hook_tool wraps "
        "cannot return: withheld",
        tool=call.matcher_value,
    )


def unjudged(name: str, exc: BaseException | None) -> ToolDenied:
    """The refusal to raise from the start of a call of the tool ``name`` that the hooks never
    judged: the handler failed as it started (``exc``), or another call holds its run id (a
    caller's fixed ``config["run_id"]``). A wrapped tool's wrapper refuses such a call; this
    one would run past every guard."""
    _log.error(
        "otelhooks could not judge a call of a tool that is not wrapped: refused",
        tool=name,
        error=None if exc is None else repr(exc),
        fix=_FIX,
    )
    return ToolDenied(
        "otelhooks could not judge this call (its handler failed as the tool started, or "
        "another call started under its run id): refused rather than run without its guards",
        tool=name,
    )
