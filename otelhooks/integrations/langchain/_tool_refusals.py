"""What the model sees of a ``hook_tool`` call that does not run: a deny's, a mock's, a refusal's.

A call with the model's tool call id answers with a ``ToolMessage`` of ``status="error"``
carrying the reason and who decided it (``response_metadata["otelhooks"]``); one without, with
the reason alone.
"""

from __future__ import annotations

from typing import Any

import structlog
from langchain_core.messages import ToolMessage
from langgraph.types import interrupt

from otelhooks import _semconv as sc
from otelhooks._instrument import ToolCall
from otelhooks.integrations.langchain._handler import ToolRun
from otelhooks.integrations.langchain._tool_args import NestedAliasError

__all__ = ["denial", "refused", "rewrite_lost"]

_log = structlog.get_logger("otelhooks")

# what a person is asked should a refused call find no answer to take (its record counted more
# pauses than the task kept answers): never shown when the answers are there
_ANSWER_TAKEN = (
    "otelhooks refused a call whose tool asked a person; this question stands in for it so "
    "that the answer given to it is not taken by another"
)


def denial(reason: str, tool_call_id: str, name: str, decided_by: Any) -> ToolMessage:
    """The ``ToolMessage`` of a call otelhooks or a hook refused (a deny, a blocked result, a
    call no guard could judge): an error carrying the reason, and who decided it."""
    return ToolMessage(
        content=reason,
        tool_call_id=tool_call_id,
        name=name,
        status="error",
        response_metadata={
            "otelhooks": {
                "classification": sc.CLASSIFICATION_HOOK_DENIED,
                "reason": reason,
                "decidedBy": decided_by,
            }
        },
    )


def refused(runs: list[ToolRun], tool: ToolRun, name: str) -> Any:
    """What the model sees instead of the tool's output: a denial or a mock. A refused call
    resuming its tool's pause takes the answers given to it first: LangGraph hands each
    ``interrupt()`` of a task the answers in turn, so the task's next question (the node's
    own "send $1000?") would take the "yes" given to this call's."""
    for _ in range(max(r.answers for r in runs)):
        interrupt(_ANSWER_TAKEN)
    call: ToolCall = tool.call
    if call.mocked:
        return call.result.content
    reason = call.deny_reason or call.result.content
    if tool.tool_call_id is None:
        return reason
    return denial(reason, tool.tool_call_id, name, (call.result.state or {}).get("decidedBy"))


def rewrite_lost(runs: list[ToolRun], tool: ToolRun, name: str, exc: NestedAliasError) -> Any:
    """What the model sees of a call whose hooks' change cannot reach the function (an
    argument given as a list's item under a nested alias, which a hook removed): refused,
    since the function would run with the caller's value."""
    problem = (
        f"a hook removed an argument given under a nested alias, which cannot drop it ({exc}): "
        "refused rather than run with the value the hook removed"
    )
    _log.error("a hook's rewrite of a hook_tool call cannot reach its tool: refused", tool=name)
    for run in runs:
        run.call.refuse(problem)
    return refused(runs, tool, name)
