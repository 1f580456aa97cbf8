"""``ToolCall``: an ``execute_tool {tool}`` span whose start runs the ``before_tool_call`` chain."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from random import getrandbits
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Status, StatusCode

from otelhooks import _semconv as sc
from otelhooks._dispatch._copies import copied
from otelhooks._engine import NO_EVENTS, Hooked, tool_values
from otelhooks._events import (
    AfterToolCallEvent,
    HookEvent,
    ToolCallDeniedEvent,
    ToolCallErrorEvent,
    ToolCallEvent,
    ToolResult,
    ToolResultPersistEvent,
)
from otelhooks._fingerprint import canonical_json, fnv1a_64
from otelhooks._instrument._base import SpanScope, record_verdict
from otelhooks._instrument._budget import spend_of
from otelhooks._live import LiveEvent, Verdict, persist_event, refusal
from otelhooks._redact import error_text, scrub

if TYPE_CHECKING:
    from otelhooks._instrument._step import Step

__all__ = ["ToolCall"]

# The events whose hooks ``otelhooks.hook.matched`` lists, the call's own event first.
_TOOL_EVENTS = ("before_tool_call", "after_tool_call", "on_tool_call_error", "tool_result_persist")
# error.type of a tool that returned a failed result without raising: the conventions' fallback.
ERROR_TYPE_OTHER = "_OTHER"


def _metric_attrs(
    agent: str, tool: str, outcome: str, tool_type: str, error_type: str | None
) -> dict[str, Any]:
    """The tool metrics' attribute set; ``error.type`` only when the call failed (the GenAI
    conventions' condition)."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_AGENT_NAME: agent,
        sc.GEN_AI_TOOL_NAME: tool,
        sc.GEN_AI_TOOL_TYPE: tool_type,
        sc.ATTR_OUTCOME: outcome,
    }
    if error_type is not None:
        attrs[sc.ERROR_TYPE] = error_type
    return attrs


def _after_tool_call(
    fields: dict[str, Any], result: ToolResult, elapsed_ms: float
) -> AfterToolCallEvent:
    """The ``after_tool_call`` payload, built by the observer worker from what the call's end
    copied (``fields``, with the arguments as a dict of their own)."""
    # One validation of named fields: the kernel's names for the same facts are given, so the
    # model's mirroring validator has nothing to assign, and the timed result is fields too.
    return AfterToolCallEvent.model_validate(
        {
            **fields,
            "toolName": fields["apiName"],
            "toolInput": fields["args"],
            "runId": fields["operationId"],
            "content": result.content,
            "toolOutput": result.content,
            "success": result.success,
            "executionTimeMs": elapsed_ms,
            "duration": elapsed_ms / 1000,
            "result": {
                **(result.model_extra or {}),
                "content": result.content,
                "success": result.success,
                "error": result.error,
                "state": result.state,
                "executionTime": elapsed_ms,
            },
        }
    )


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    return ToolResult(content=canonical_json(value))


class ToolCall(SpanScope):
    """One tool call. After entering, check :attr:`should_run`; a mock or a denial means the tool
    must not run, and :attr:`result` already holds what the agent should see.

    Example:
        >>> from pathlib import Path
        >>> from otelhooks import AgentTracer
        >>> _ = Path("a.txt").write_text("hello")
        >>> with AgentTracer().operation("helper") as op, op.step() as step:
        ...     with step.tool_call("fs", "readFile", {"path": "a.txt"}) as call:
        ...         if call.should_run:
        ...             _ = call.set_result(Path(call.args["path"]).read_text())
        >>> call.result.content
        'hello'
    """

    # Defaults at class level: set on the instance only when a hook changes them.
    denied = False
    deny_reason: str | None = None
    mocked = False
    interrupted = False
    permissive: tuple[str, ...] = ()  # what permissive hooks would have done (never done)
    persist_blocked = False
    _result: ToolResult | None = None
    _tool_started = 0.0
    _matched: list[str] | None = None
    _refusal: Verdict | None = None  # otelhooks refused the call itself: no hook decides it
    # Which of the tool events had hooks for this call when it started, and which hooks.
    _hooks_on: Hooked = NO_EVENTS

    def __init__(
        self,
        step: Step,
        identifier: str,
        api_name: str,
        args: dict[str, Any],
        *,
        tool_call_id: str | None,
        tool_type: str,
        refused: str | None = None,
        namespace: str | None = None,
    ) -> None:
        self.tracer = step.tracer
        self.step = step
        self._outer = step
        self.identifier = identifier
        self.api_name = api_name
        self.args = args
        self.tool_call_id = tool_call_id or "call_" + getrandbits(64).to_bytes(8).hex()
        self.tool_type = tool_type
        self.namespace = namespace or None
        # the tool's full name: the span's, the metrics' (a namespace's tool is not another's)
        self.tool_name = f"{namespace}.{api_name}" if namespace else api_name
        self._values = tool_values(identifier, api_name, self.namespace)
        self.call_index = step.operation.next_call_index(self._values[0])
        if refused is not None:
            self._refusal = refusal(refused)

    @property
    def matcher_value(self) -> str:
        return self._values[0]

    @property
    def should_run(self) -> bool:
        """False when a hook denied the call or supplied a mock result."""
        return not self.denied and not self.mocked

    @property
    def result(self) -> ToolResult:
        """The result the agent sees (tool output, mock, ``hook_denied`` or the error)."""
        if self._result is None:
            return ToolResult(content="", success=False, error="the tool produced no result")
        return self._result

    def _context(self) -> dict[str, Any]:
        """The fields every tool event carries, each by name (validated when a payload is built)."""
        op = self.step.operation
        return {
            **op.common(),
            "toolCallId": self.tool_call_id,
            "identifier": self.identifier,
            "apiName": self.api_name,
            "toolNamespace": self.namespace,
            "args": self.args,
            "callIndex": self.call_index,
            "stepIndex": self.step.index,
            "assistantMessageId": self.step.message_id,
            "agentId": op.agent_id,
        }

    def _observed(self) -> dict[str, Any]:
        """The fields of an event observers get (denied, error, after): a deep copy of the
        arguments, which an observer may change, so none reaches a caller's object or the
        function's default that later calls receive."""
        return {**self._context(), "args": copied(self.args)}

    def _before_event(self) -> ToolCallEvent:
        # Built only when a hook matches, by the engine as the span starts (its chain run now,
        # or awaited in async code), so it sees the arguments as the call began.
        return ToolCallEvent(**self._context(), spend=spend_of(self.step.operation))

    def _hooked(self, event: str) -> bool:
        """Whether a hook matches ``event`` of this call now (hooks may be registered while the
        call runs)."""
        return self.tracer.engine.matches(event, self._values, self.step.operation.operation_id)

    def _quiet_event(self) -> LiveEvent:
        live = LiveEvent(
            "before_tool_call",
            self._before_event,
            values=self._values,
            operation_id=self.step.operation.operation_id,
        )
        live.span_context = self.span.get_span_context()
        return live

    def _open(self, *, deferred: bool) -> None:
        values = self._values
        text = canonical_json(self.args)
        encoded = text.encode("utf-8")
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: self.tool_name,
            sc.GEN_AI_TOOL_CALL_ID: self.tool_call_id,
            sc.GEN_AI_TOOL_TYPE: self.tool_type,
            # the conventions' "agent executing the tool" (conditionally required)
            sc.GEN_AI_AGENT_NAME: self.step.operation.agent,
            sc.TOOL_IDENTIFIER: self.identifier,
            sc.TOOL_CALL_INDEX: self.call_index,
            sc.TOOL_MATCHER_VALUE: values[0],
            sc.TOOL_ARGS_FINGERPRINT: fnv1a_64(encoded).to_bytes(8).hex(),
            sc.TOOL_ARGS_SIZE: len(encoded),
        }
        if self.namespace:
            attrs[sc.TOOL_NAMESPACE] = self.namespace
        if self.tracer.capture_content:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        self._hooks_on = self.tracer.engine.hooked(
            _TOOL_EVENTS, values, self.step.operation.operation_id
        )
        live = None
        if self._hooks_on:
            # Every hook this call's events match (interceptors and later observers), written
            # with the start attributes (a shared answer: never changed).
            attrs[sc.HOOK_MATCHED] = self._matched = self._hooks_on.ids
        if "before_tool_call" in self._hooks_on and self._refusal is None:
            live = LiveEvent(
                "before_tool_call",
                self._before_event,
                values=values,
                operation_id=self.step.operation.operation_id,
                deferred=deferred,
            )
        self._begin(f"{sc.OP_EXECUTE_TOOL} {self.tool_name}", live, attributes=attrs)
        self._tool_started = time.perf_counter()
        if self._refusal is not None:
            # no hook runs: the refusal is this call's verdict, recorded and applied (entering
            # the scope) as a hook's deny is, on an event the engine never runs hooks for
            self.live.verdict = self._refusal
            record_verdict(self.span, "before_tool_call", self._refusal)

    def _after_verdict(self, verdict: Verdict | None) -> None:
        if verdict is None:
            return
        if verdict.matched and self._matched:
            # The verdict wrote its interceptors over the start attribute: every hook again.
            self.span.set_attribute(sc.HOOK_MATCHED, self._matched)
        self.permissive = tuple(
            f"{s.hook_id}: {s.permissive}" for s in verdict.steps if s.permissive
        )
        if verdict.blocked:
            self.denied = True
            self.deny_reason = verdict.reason
            self._result = ToolResult(
                content=verdict.reason or "",
                success=False,
                error=verdict.reason,
                state={
                    "type": "blocked",
                    "classification": sc.CLASSIFICATION_HOOK_DENIED,
                    "reason": verdict.reason,
                    "decidedBy": verdict.decided_by,
                },
            )
            context, reason, by = self._observed(), verdict.reason or "", verdict.decided_by
            self.live.follow(
                "on_tool_call_denied",
                lambda: ToolCallDeniedEvent(**context, reason=reason, decidedBy=by),
            )
        elif verdict.mock is not None:
            self.mocked = True
            self._result = verdict.mock
        if not self.denied and verdict.rewritten_by and isinstance(verdict.payload, ToolCallEvent):
            self.args = dict(verdict.payload.args)

    def _follow_if_hooked(self, name: str, build: Callable[[], HookEvent]) -> None:
        if self._hooked(name):
            self.live.follow(name, build)

    # -- results ---------------------------------------------------------------------------------

    def _persist_event(self, result: ToolResult) -> LiveEvent:
        op = self.step.operation
        common = op.common()
        live = LiveEvent(
            "tool_result_persist",
            lambda: ToolResultPersistEvent(
                **common,
                toolName=self.api_name,
                toolCallId=self.tool_call_id,
                identifier=self.identifier,
                apiName=self.api_name,
                toolNamespace=self.namespace,
                result=result.model_dump(exclude_none=True),
            ),
            values=self._values,
            operation_id=op.operation_id,
        )
        live.span_context = self.span.get_span_context()
        return live

    def _apply_persist(self, result: ToolResult, verdict: Verdict) -> ToolResult:
        if verdict.blocked:
            # The model reads a failure carrying the block's reason, as it would a deny's: an
            # empty success would tell it the tool ran and had nothing to say.
            self.persist_blocked = True
            reason = verdict.reason or ""
            result = ToolResult(
                content=reason,
                success=False,
                error=reason,
                state={
                    "type": "persist_blocked",
                    "classification": sc.CLASSIFICATION_HOOK_DENIED,
                    "reason": reason,
                    "decidedBy": verdict.decided_by,
                },
            )
        elif verdict.rewritten_by and isinstance(verdict.payload, ToolResultPersistEvent):
            new = verdict.payload.result
            result = ToolResult.model_validate(new) if isinstance(new, dict) else _as_result(new)
        if verdict.matched:
            self.span.add_event(sc.EVENT_TOOL_RESULT_PERSIST, persist_event(verdict))
        self._result = result
        return result

    def filters_result(self) -> bool:
        """Whether a ``tool_result_persist`` hook matches this call now (its result will be
        judged by :meth:`set_result`)."""
        return self._hooked("tool_result_persist")

    def set_result(self, value: Any, *, success: bool = True) -> ToolResult:
        """Record the tool's output; ``tool_result_persist`` interceptors may filter it.

        Returns the result as persisted (what the agent should keep): a block is a failed
        result whose content is the block's reason.
        """
        result = _as_result(value)
        if not success:
            result = result.model_copy(update={"success": False})
        if not self._hooked("tool_result_persist"):  # kept as it is, no event to build
            self._result = result
            return result
        verdict = self.tracer.engine.start(self._persist_event(result))
        return self._apply_persist(result, verdict)

    async def aset_result(self, value: Any, *, success: bool = True) -> ToolResult:
        """As :meth:`set_result`, awaiting the interceptors."""
        result = _as_result(value)
        if not success:
            result = result.model_copy(update={"success": False})
        if not self._hooked("tool_result_persist"):  # kept as it is, no event to build
            self._result = result
            return result
        verdict = await self.tracer.engine.astart(self._persist_event(result))
        return self._apply_persist(result, verdict)

    def fail(self, exc: BaseException) -> None:
        """Record that the tool raised ``exc``; the agent sees a failed result."""
        super().fail(exc)
        self._result = ToolResult(
            content=f"{type(exc).__name__}: {exc}", success=False, error=error_text(exc)
        )

    def refuse(self, problem: str) -> None:
        """Deny the call after its hooks allowed it, for a rule otelhooks checks once they have
        decided (``problem`` says why): a deny decided by ``otelhooks``, as a call refused
        before any hook runs is. :attr:`should_run` turns False, the reason is the result, the
        span records the deny and ``on_tool_call_denied`` observers are told. A call a hook
        already denied or mocked is left as it is."""
        if not self.should_run:
            return
        verdict = refusal(problem)
        record_verdict(self.span, "before_tool_call", verdict)
        permissive = self.permissive  # what the hooks' verdict recorded stays
        self._after_verdict(verdict)
        self.permissive = permissive

    def interrupt(self) -> None:
        """The tool paused for a person (a LangGraph ``interrupt()``): it neither finished nor
        failed, and runs again when the run resumes. The call ends with outcome
        ``interrupted``: no error status, no ``on_tool_call_error`` or ``after_tool_call``."""
        self.interrupted = True

    def _close(self, exc: BaseException | None) -> None:
        now = time.perf_counter()  # one clock read for the payload's and the metric's times
        elapsed_ms = (now - self._tool_started) * 1000
        result = self.result
        if self.interrupted and exc is None:
            outcome = "interrupted"
        elif exc is not None:
            outcome = "error"
            message, error_type = error_text(exc), type(exc).__qualname__
            self._follow_if_hooked(
                "on_tool_call_error",
                lambda: ToolCallErrorEvent(**self._observed(), error=message, errorType=error_type),
            )
        else:
            outcome = (
                "denied"
                if self.denied
                else "blocked"
                if self.persist_blocked
                else "mocked"
                if self.mocked
                else "success"
                if result.success
                else "error"
            )
            if self._hooked("after_tool_call"):
                # Copied now (the agent may change its arguments after the call), built by the
                # observer worker: the agent's thread pays for a copy, not for validation.
                fields = {
                    **self._observed(),
                    "mocked": self.mocked,
                    "permissive": list(self.permissive),
                }
                self.live.follow(
                    "after_tool_call",
                    partial(_after_tool_call, fields, result, elapsed_ms),
                    snapshot=True,
                )
        end: dict[str, Any] = {sc.TOOL_OUTCOME: outcome, sc.TOOL_RESULT_SIZE: len(result.content)}
        if self.tracer.capture_content:
            end[sc.GEN_AI_TOOL_CALL_RESULT] = result.content
        self.span.set_attributes(end)
        self.step.finished_call(
            (self.tool_call_id, self.identifier, self.api_name, result.success, outcome)
        )
        failure: str | None = None
        if exc is not None:
            failure = sc.error_type(exc)
        elif outcome == "error":
            failure = ERROR_TYPE_OTHER
        if exc is None and outcome == "error":
            # A failed result is a failed call: status and error.type, no exception event.
            self.span.set_status(Status(StatusCode.ERROR, scrub(result.error or "")))
            self.span.set_attribute(sc.ERROR_TYPE, ERROR_TYPE_OTHER)
        attrs = _metric_attrs(
            self.step.operation.agent, self.tool_name, outcome, self.tool_type, failure
        )
        self.tracer.metrics.tool_call.record(now - self._started, attrs)
