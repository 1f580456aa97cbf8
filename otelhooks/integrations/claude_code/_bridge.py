"""``ClaudeCodeBridge``: one Claude Code hook event in, spans, hooks and Claude's answer out.

The mapping (one place):

===========================  ====================================================================
Claude Code event            otelhooks
===========================  ====================================================================
(every event)                the session is one trace: trace id = SHA-256 of ``session_id``
``UserPromptSubmit``         a turn opens: ``invoke_agent claude-code``; ``before_agent_start``
                             interceptors run and a block answers ``{"decision": "block"}``
``PreToolUse``               ``execute_tool {tool_name}`` starts (child of the turn);
                             ``before_tool_call`` interceptors run: a deny (or a mock, which
                             Claude cannot take as a result) answers ``permissionDecision: deny``
                             (or exit 2 with the reason on stderr), rewritten arguments answer
                             ``ask`` with ``updatedInput`` (the person confirms the change)
``PostToolUse``              the tool span ends (another process): ``after_tool_call``
``PostToolUseFailure``       the tool span ends with an error: ``on_tool_call_error``
``PermissionDenied``         ``on_tool_call_denied``; an open tool span ends ``denied``
``Stop`` / ``StopFailure``   the turn ends: ``on_complete`` (and ``on_error``)
``SessionStart/End``         ``session_start`` / ``session_end``, ``agent_lifecycle`` spans; at
                             the end every open span of the session is closed
any other event              its observers (``Notification``, ``PreCompact``, ...) and a short
                             ``agent_lifecycle {event}`` span in the turn
===========================  ====================================================================

Nothing is answered unless a hook decided: an empty answer leaves Claude Code's own permission
rules in charge.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import structlog
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.util import types
from pydantic import ValidationError

from otelhooks import _semconv as sc
from otelhooks._errors import UnknownEventError
from otelhooks._events import (
    BeforeAgentStartEvent,
    CompleteEvent,
    ErrorEvent,
    GenericEvent,
    HookEvent,
    SessionEndEvent,
    SessionStartEvent,
    resolve_event,
)
from otelhooks._hooks import Hook
from otelhooks._setup import configure
from otelhooks.integrations.claude_code._common import (
    AGENT,
    DenyMode,
    HookResponse,
    observer,
)
from otelhooks.integrations.claude_code._spans import SpanRecord, SpanWriter, session_trace_id
from otelhooks.integrations.claude_code._state import BridgeState, OpenOperation
from otelhooks.integrations.claude_code._tools import ToolUses

__all__ = ["ClaudeCodeBridge"]

_COMMON_KEYS = frozenset(
    {"session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name"}
)

_log = structlog.get_logger("otelhooks")


def _capture_content() -> bool:
    return os.environ.get(sc.ENV_CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")


class ClaudeCodeBridge:
    """Handles Claude Code hook events, one per process (or many, in tests).

    Args:
        hooks: the otelhooks hooks to run (any config format, loaded).
        state: the state file shared by the hook processes.
        exporters: where spans go.
        deny_mode: answer a denial with JSON ``permissionDecision: deny`` (``json``) or with
            exit code 2 and the reason on stderr (``exit2``).
        service_name: ``service.name`` of the spans.
    """

    def __init__(
        self,
        *,
        hooks: Sequence[Hook | Mapping[str, Any]] = (),
        state: BridgeState,
        exporters: Sequence[SpanExporter] = (),
        deny_mode: DenyMode = "json",
        service_name: str = AGENT,
    ) -> None:
        self.state = state
        self.deny_mode = deny_mode
        self.capture = _capture_content()
        self.oh = configure(
            service_name=service_name,
            hooks=hooks,
            otlp=False,
            set_global=False,
            structured_logging=False,
        )
        self.engine = self.oh.engine
        self.observe = observer(self.engine)
        resource = Resource.create({"service.name": service_name})
        self.writer = SpanWriter(exporters, resource)
        self.tools = ToolUses(
            state=state,
            engine=self.engine,
            observe=self.observe,
            writer=self.writer,
            deny_mode=deny_mode,
            capture=self.capture,
        )

    def close(self, timeout_s: float = 10.0) -> None:
        """Run the queued observers and webhooks, export the spans."""
        self.oh.shutdown(timeout_s)
        self.writer.shutdown()

    # -- dispatch ----------------------------------------------------------------------------------

    def handle(self, payload: Mapping[str, Any]) -> HookResponse:
        """Handle one hook event (the JSON Claude Code writes on the hook's stdin)."""
        session = str(payload.get("session_id") or "unknown-session")
        name = str(payload.get("hook_event_name") or "")
        if name == "PreToolUse":
            return self.tools.pre(session, payload)
        if name in ("PostToolUse", "PostToolUseFailure"):
            return self.tools.post(session, name, payload)
        if name == "PermissionDenied":
            return self.tools.permission_denied(session, payload)
        handler = {
            "UserPromptSubmit": self._prompt,
            "Stop": self._stop,
            "StopFailure": self._stop,
            "SessionStart": self._session_start,
            "SessionEnd": self._session_end,
        }.get(name, self._point)
        return handler(session, name, payload)

    def _common(self, session: str, op: OpenOperation | None, span_id: int | None) -> Any:
        trace_id = session_trace_id(session)
        return {
            "sessionKey": session,
            "operationId": op.operation_id if op is not None else None,
            "traceId": format(trace_id, "032x"),
            "spanId": format(span_id, "016x") if span_id else None,
        }

    # -- turns -------------------------------------------------------------------------------------

    def _op_attributes(self, op: OpenOperation, reason: str) -> dict[str, types.AttributeValue]:
        return {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: AGENT,
            sc.GEN_AI_AGENT_NAME: AGENT,
            sc.GEN_AI_AGENT_ID: AGENT,
            sc.GEN_AI_CONVERSATION_ID: op.session_id,
            sc.SESSION_ID: op.session_id,
            sc.OPERATION_ID: op.operation_id,
            sc.COMPLETE_REASON: reason,
        }

    def _end_operation(
        self, op: OpenOperation, reason: Literal["done", "error", "interrupted"], error: str | None
    ) -> None:
        end = time.time_ns()
        self.writer.write(
            SpanRecord(
                f"{sc.OP_INVOKE_AGENT} {AGENT}",
                session_trace_id(op.session_id),
                op.span_id,
                None,
                op.start_ns,
                end,
                self._op_attributes(op, reason),
                error=error,
                error_type="StopFailure" if error else None,
            )
        )
        common = self._common(op.session_id, op, op.span_id)
        if error is not None:
            self.observe(
                "on_error",
                ErrorEvent(**common, agentId=AGENT, errorMessage=error, errorType="StopFailure"),
                (AGENT,),
            )
        complete = CompleteEvent(
            **common,
            agentId=AGENT,
            runId=op.operation_id,
            reason=reason,
            success=reason == "done",
            error=error,
            duration=(end - op.start_ns) / 1e9,
        )
        self.observe("on_complete", complete, (AGENT,))

    def _prompt(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        prompt = str(payload.get("prompt") or "")
        op, previous = self.state.start_operation(session, prompt)
        if previous is not None:
            self._end_operation(previous, "interrupted", None)
        event = BeforeAgentStartEvent(
            **self._common(session, op, op.span_id),
            agentId=AGENT,
            input=prompt,
            userMessage=prompt,
            fullPrompt=prompt,
            metadata={k: payload.get(k) for k in ("cwd", "permission_mode", "transcript_path")},
        )
        verdict = self.engine.dispatch(
            "before_agent_start", event, values=(AGENT,), operation_id=op.operation_id
        )
        if not verdict.blocked:
            return HookResponse()
        self.state.end_operation(session)
        self._end_operation(op, "interrupted", None)
        reason = verdict.reason or "Blocked by a before_agent_start hook."
        if self.deny_mode == "exit2":
            return HookResponse(2, stderr=reason)
        return HookResponse(stdout=json.dumps({"decision": "block", "reason": reason}))

    def _stop(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        op = self.state.end_operation(session)
        if op is not None:
            failed = name == "StopFailure"
            error = str(payload.get("error") or "the turn failed") if failed else None
            self._end_operation(op, "error" if failed else "done", error)
        return HookResponse()

    # -- sessions and point events -----------------------------------------------------------------

    def _lifecycle_span(self, session: str, event: str, op: OpenOperation | None) -> int:
        now = time.time_ns()
        record = SpanRecord(
            f"{sc.OP_LIFECYCLE} {event}",
            session_trace_id(session),
            int.from_bytes(os.urandom(8), "big") or 1,
            op.span_id if op is not None else None,
            now,
            now,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_LIFECYCLE,
                sc.EVENT_NAME: event,
                sc.GEN_AI_CONVERSATION_ID: session,
            },
        )
        self.writer.write(record)
        return record.span_id

    def _session_start(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        span_id = self._lifecycle_span(session, "session_start", None)
        extra = {k: v for k, v in payload.items() if k not in _COMMON_KEYS}
        event = SessionStartEvent(
            **self._common(session, None, span_id), agentId=AGENT, metadata=extra
        )
        self.observe("session_start", event, (str(payload.get("source") or "*"),))
        return HookResponse()

    def _session_end(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        op, tools = self.state.end_session(session)
        for tool in tools:
            message = "the session ended before the tool finished"
            self.tools.end_tool(tool, "error", error=message, error_type="SessionEnded")
        if op is not None:
            self._end_operation(op, "interrupted", None)
        span_id = self._lifecycle_span(session, "session_end", None)
        reason = str(payload.get("reason") or "")
        event = SessionEndEvent(**self._common(session, None, span_id), reason=reason)
        self.observe("session_end", event, (reason or "*",))
        return HookResponse()

    def _point(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        try:
            spec, _ = resolve_event(name)
        except UnknownEventError:
            spec = None
        op = self.state.peek_operation(session)
        span_id = self._lifecycle_span(session, spec.name if spec else name or "unknown", op)
        if spec is None or spec.intercept:
            return HookResponse()
        extra = {k: v for k, v in payload.items() if k not in _COMMON_KEYS}
        matcher = str(
            payload.get("tool_name")
            or payload.get("notification_type")
            or payload.get("trigger")
            or payload.get("agent_type")
            or "*"
        )
        fields: dict[str, Any] = {**self._common(session, op, span_id), "event": spec.name}
        try:
            if spec.payload is GenericEvent:
                event: HookEvent = GenericEvent(
                    **fields, agentId=AGENT, matcherValue=matcher, data=extra
                )
            else:
                event = spec.payload.model_validate({**extra, **fields, "agentId": AGENT})
        except ValidationError as exc:
            _log.warning("event not dispatched: payload does not fit", event=name, error=str(exc))
            return HookResponse()
        self.observe(spec.name, event, (matcher,))
        return HookResponse()
