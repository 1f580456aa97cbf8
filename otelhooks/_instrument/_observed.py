"""An observed tool call's ``after_tool_call``: the snapshot the agent's thread takes as the call
ends, and the payload the observer worker builds from it.

The agent pays for a few copies into one tuple (:func:`after_args`); the worker builds the
thirty-field model with a builder compiled for exactly these fields (:func:`after_tool_call`),
so a watched call costs the agent no pydantic build and keeps neither the call nor its span alive
while its event waits in the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.trace import INVALID_SPAN_ID, INVALID_TRACE_ID, SpanContext

from otelhooks._events import AfterToolCallEvent, HookEvent, ToolResult
from otelhooks._events._trusted import builder

if TYPE_CHECKING:
    from otelhooks._instrument._operation import Operation

__all__ = ["AFTER_BUILD", "AFTER_FIELDS", "AFTER_WITH_IDS", "after_args", "after_tool_call"]

# The fields of an observed call's after_tool_call payload, in the order after_tool_call gives
# them (with the span's ids, or without when the span has none).
AFTER_FIELDS: Final = (
    "operationId",
    "parentOperationId",
    "sessionKey",
    "userId",
    "toolCallId",
    "identifier",
    "apiName",
    "args",
    "callIndex",
    "stepIndex",
    "agentId",
    "toolName",
    "toolInput",
    "runId",
    "content",
    "toolOutput",
    "success",
    "mocked",
    "executionTimeMs",
    "duration",
    "result",
)
AFTER_WITH_IDS: Final = (*AFTER_FIELDS, "traceId", "spanId")


def after_tool_call(
    op: Operation,
    tool_call_id: str,
    identifier: str,
    api_name: str,
    args: dict[str, Any],
    call_index: int,
    step_index: int,
    result: ToolResult | None,
    content: str,
    success: bool,
    error: str | None,
    result_fields: frozenset[str],
    elapsed_ms: float,
    mocked: bool,
    trace_id: int,
    span_id: int,
) -> HookEvent:
    """The ``after_tool_call`` payload from a call's snapshot, on the observer worker: plain
    values fixed when the call ended (the arguments a copy of the agent's dict; the
    operation's own fields never change; the span's ids 0 when it has none; the tool result
    as :func:`after_args` gives it), each of the declared type, so the model is built
    trusted (checked by type, not validated)."""
    parent = op.parent
    if result is None:
        timed = timed_result(content, success, error, result_fields, elapsed_ms)
    else:
        content, success = result.content, result.success
        timed = result.copy_with({"executionTime": elapsed_ms})
    operation_id = op.operation_id
    valid = trace_id != INVALID_TRACE_ID and span_id != INVALID_SPAN_ID
    global _build  # compiled on first use, not at import
    if _build is None:
        _build = builder(AfterToolCallEvent, AFTER_WITH_IDS, **AFTER_BUILD)
    # The values in AFTER_WITH_IDS order, given at once: a tuple of them spread into the call
    # cost 2,500 instructions an event (measured).
    payload = _build(
        operation_id,
        parent.operation_id if parent else None,
        op.session_id,
        op.user_id,
        tool_call_id,
        identifier,
        api_name,
        args,
        call_index,
        step_index,
        op.agent_id,
        # the kernel's names for the same facts, given here so the payload model's mirroring
        # validator has nothing to assign
        api_name,
        args,
        operation_id,
        content,
        content,
        success,
        mocked,
        elapsed_ms,
        elapsed_ms / 1000,
        timed,
        trace_id.to_bytes(16).hex() if valid else None,
        span_id.to_bytes(8).hex() if valid else None,
    )
    if not valid:  # no span to name: the ids were not given, as validation without them says
        payload.__pydantic_fields_set__.difference_update(_SPAN_IDS)
    return payload


_build: Callable[..., AfterToolCallEvent] | None = None
_SPAN_IDS: Final = ("traceId", "spanId")
# What after_tool_call vouches for (tests/test_trusted_payloads.py holds it to it):
# - run_after: it gives the kernel's names (toolName, toolInput, runId) as the model's
#   mirroring validator would set them, so the validator is not called (3,000 instructions);
# - owned: the arguments are the snapshot's copy, which only the payload holds (not copied);
# - vouched: its own numbers, flag, times and span ids, and the fields repeating another's
#   value, are of the declared types already (not checked: 1,200 instructions). What the agent
#   gave (names, ids, the arguments, the result) is checked.
AFTER_BUILD: Final[dict[str, Any]] = {
    "run_after": False,
    "owned": frozenset({"args"}),
    "vouched": frozenset(
        {
            "callIndex",
            "stepIndex",
            "toolName",
            "toolInput",
            "runId",
            "toolOutput",
            "mocked",
            "executionTimeMs",
            "duration",
            "traceId",
            "spanId",
        }
    ),
}

# A plain tool result crosses to the observer worker as its values, not as the model: objects
# the agent's thread allocates and the worker's frees make the garbage collector's young
# generation fill sooner (the count it triggers on stops at zero when the worker frees a batch),
# and the collections run on the agent's thread (about 6,000 instructions per observed call on
# the agent's thread, measured, net of taking the result apart). _RESULT_FIELD_SETS interns the
# names a result has set (at most 32 sets).
_RESULT_FIELD_SETS: dict[frozenset[str], frozenset[str]] = {}
_RESULT_FIELDS: Final = ("content", "success", "executionTime", "error", "state")
_NO_FIELDS: Final[frozenset[str]] = frozenset()
_CONTENT_ONLY: Final = frozenset({"content"})


def after_args(
    op: Operation,
    tool_call_id: str,
    identifier: str,
    api_name: str,
    args: Mapping[str, Any],
    call_index: int,
    step_index: int,
    result: ToolResult,
    elapsed_ms: float,
    mocked: bool,
    span_context: SpanContext,
) -> tuple[Any, ...]:
    """:func:`after_tool_call`'s arguments for a call that ended with ``result``: one tuple,
    built at once. A plain result (a ``ToolResult`` itself, no state, no extras, values of the
    declared types) crosses as ``(None, content, success, error, set fields)``, any other as
    ``(result, "", True, None, frozenset())``: the model crosses as it is. ``args`` is the
    agent's own mapping, copied; every other value is fixed once the call ends."""
    args = args.copy() if type(args) is dict else dict(args)
    content, success, error = result.content, result.success, result.error
    extra = result.__pydantic_extra__
    if (
        type(result) is ToolResult
        and type(content) is str
        and type(success) is bool
        and (error is None or type(error) is str)
        and result.state is None
        and type(extra) is dict
        and not extra  # an empty dict: not None, no extra
        and result.__pydantic_private__ is None
    ):
        given = result.__pydantic_fields_set__
        fields: frozenset[str]
        # the common set (a tool's text) without building a frozenset to look it up
        if given == _CONTENT_ONLY:
            fields = _CONTENT_ONLY
        else:
            frozen = frozenset(given)
            fields = _RESULT_FIELD_SETS.setdefault(frozen, frozen)
        kept: ToolResult | None = None
    else:
        kept, content, success, error, fields = result, "", True, None, _NO_FIELDS
    return (
        op,
        tool_call_id,
        identifier,
        api_name,
        args,
        call_index,
        step_index,
        kept,
        content,
        success,
        error,
        fields,
        elapsed_ms,
        mocked,
        span_context.trace_id,
        span_context.span_id,
    )


def timed_result(
    content: str, success: bool, error: str | None, fields: frozenset[str], elapsed_ms: float
) -> ToolResult:
    """What ``result.model_copy(update={"executionTime": elapsed_ms})`` gives for the plain
    result :func:`after_args` took apart."""
    global _build_result  # compiled on first use, not at import
    if _build_result is None:
        _build_result = builder(ToolResult, _RESULT_FIELDS)
    timed = _build_result(content, success, elapsed_ms, error, None)
    # The builder's own set of the five names, cut down in place to the result's and the time
    # (a new set stored through object.__setattr__ costs three times as much).
    fields_set = timed.__pydantic_fields_set__
    fields_set.intersection_update(fields)
    fields_set.add("executionTime")
    return timed


_build_result: Callable[..., ToolResult] | None = None
