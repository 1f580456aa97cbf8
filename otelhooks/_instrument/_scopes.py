"""Human approval, context compaction and sub-agent call scopes."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry.trace import Link

from otelhooks import _semconv as sc
from otelhooks._events import (
    AfterCallAgentEvent,
    AfterCompactEvent,
    AfterHumanInterventionEvent,
    BeforeCallAgentEvent,
    BeforeCompactEvent,
    BeforeHumanInterventionEvent,
    CallAgentErrorEvent,
    CompactErrorEvent,
    HookEvent,
    PendingTool,
    StopByHumanInterventionEvent,
)
from otelhooks._instrument._base import SpanScope
from otelhooks._live import LiveEvent, Verdict
from otelhooks._redact import error_text

if TYPE_CHECKING:
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._step import Step

__all__ = ["AgentCall", "Approval", "Compaction"]


class Approval(SpanScope):
    """Waiting for a person: call :meth:`approve` or :meth:`reject` with the decision.

    Example:
        >>> from otelhooks import AgentTracer
        >>> with AgentTracer().operation("helper") as op, op.step() as step:
        ...     with step.approval([{"identifier": "fs", "apiName": "delete"}]) as approval:
        ...         approval.reject("not today", stop=True)
        >>> approval.action, approval.rejection_reason
        ('reject', 'not today')
    """

    def __init__(self, step: Step, pending: list[PendingTool]) -> None:
        super().__init__(step.tracer, step)
        self.step = step
        self.pending = pending
        self.action: Literal["approve", "reject", "rejectAndContinue"] | None = None
        self.rejection_reason: str | None = None

    def _after_verdict(self, verdict: Verdict | None) -> None:
        """A ``beforeHumanIntervention`` hook decided (an ``approval:`` hook a person answered,
        or a handler's block): the scope records LobeHub's decision, which the caller reads in
        :attr:`action` and :attr:`rejection_reason`."""
        if verdict is None:
            return
        noted = bool(verdict.approvals)  # record_verdict wrote who answered as the span event
        if verdict.blocked:
            self._decide("reject", None, verdict.reason, event=not noted)
            self._stop(None, verdict.reason)
        elif any(n.decision == "allow" for n in verdict.approvals):
            self._decide("approve", None, None, event=False)

    def _open(self, *, deferred: bool) -> None:
        op = self.step.operation
        common, pending = op.common(), self.pending

        def build() -> HookEvent:
            return BeforeHumanInterventionEvent(
                **common, stepIndex=self.step.index, pendingTools=pending
            )

        live = LiveEvent(
            "before_human_intervention",
            build,
            values=op.values,
            operation_id=op.operation_id,
            deferred=deferred,  # async: __aenter__ awaits the dispatch (once, not twice)
        )
        self._begin(
            sc.OP_HUMAN_APPROVAL,
            live,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_HUMAN_APPROVAL,
                sc.APPROVAL_PENDING_TOOLS: [f"{p.identifier}/{p.apiName}" for p in pending],
                sc.OPERATION_ID: op.operation_id,
            },
        )

    def _decide(
        self,
        action: Literal["approve", "reject", "rejectAndContinue"],
        tool_call_id: str | None,
        reason: str | None,
        *,
        event: bool = True,
    ) -> None:
        op = self.step.operation
        self.action = action
        self.rejection_reason = reason
        attrs: dict[str, Any] = {sc.APPROVAL_ACTION: action}
        if tool_call_id:
            attrs[sc.APPROVAL_TOOL_CALL_ID] = tool_call_id
        if reason:
            attrs[sc.APPROVAL_REJECTION_REASON] = reason
        if event:
            self.span.add_event(sc.EVENT_APPROVE if action == "approve" else sc.EVENT_REJECT, attrs)
        self.span.set_attributes(attrs)
        common = op.common()
        self.live.follow(
            "after_human_intervention",
            lambda: AfterHumanInterventionEvent(
                **common, action=action, toolCallId=tool_call_id, rejectionReason=reason
            ),
        )
        self.tracer.metrics.human_interventions.add(
            1, {sc.GEN_AI_AGENT_NAME: op.agent, sc.ATTR_APPROVAL_ACTION: action}
        )

    def approve(self, tool_call_id: str | None = None) -> None:
        """The person approved; the pending tools may run."""
        self._decide("approve", tool_call_id, None)

    def reject(
        self, reason: str | None = None, *, tool_call_id: str | None = None, stop: bool = True
    ) -> None:
        """The person rejected. ``stop`` halts the run (reason ``interrupted``)."""
        self._decide("reject" if stop else "rejectAndContinue", tool_call_id, reason)
        if stop:
            self._stop(tool_call_id, reason)

    def _stop(self, tool_call_id: str | None, reason: str | None) -> None:
        op = self.step.operation
        op.complete("interrupted")
        common = op.common()
        self.live.follow(
            "on_stop_by_human_intervention",
            lambda: StopByHumanInterventionEvent(
                **common, toolCallId=tool_call_id, rejectionReason=reason
            ),
        )

    def _close(self, exc: BaseException | None) -> None:
        return None


class Compaction(SpanScope):
    """A context compaction, linked to its operation. Call :meth:`done` with the outcome."""

    def __init__(self, step: Step, *, message_count: int, token_count: int) -> None:
        super().__init__(step.tracer, step)
        self.step = step
        self.message_count = message_count
        self.token_count = token_count
        self.group_id = f"grp_{uuid.uuid4().hex[:12]}"
        self.messages_after: int | None = None
        self.tokens_after: int | None = None
        self.summary = ""

    def done(
        self,
        *,
        messages_after: int,
        tokens_after: int,
        summary: str = "",
        group_id: str | None = None,
    ) -> None:
        """Record the compacted context."""
        self.messages_after = messages_after
        self.tokens_after = tokens_after
        self.summary = summary
        self.group_id = group_id or self.group_id

    def _open(self, *, deferred: bool) -> None:
        op = self.step.operation
        common = op.common()

        def build() -> HookEvent:
            return BeforeCompactEvent(
                **common,
                agentId=op.agent_id,
                stepIndex=self.step.index,
                messageCount=self.message_count,
                tokenCount=self.token_count,
            )

        live = LiveEvent(
            "before_compact",
            build,
            values=op.values,
            operation_id=op.operation_id,
            deferred=deferred,
        )
        self._begin(
            sc.OP_COMPACT,
            live,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_COMPACT,
                sc.COMPACT_MESSAGES_BEFORE: self.message_count,
                sc.COMPACT_TOKENS_BEFORE: self.token_count,
                sc.OPERATION_ID: op.operation_id,
            },
            links=[Link(op.span.get_span_context(), {sc.LINK_RELATION: sc.LINK_PARENT_OPERATION})],
        )

    def _close(self, exc: BaseException | None) -> None:
        op = self.step.operation
        common = op.common()
        m = self.tracer.metrics
        if exc is None and self.messages_after is None:
            exc = RuntimeError("compaction ended without done()")
            self.fail(exc)
        if exc is not None:
            error = error_text(exc)
            self.live.follow(
                "on_compact_error",
                lambda: CompactErrorEvent(
                    **common,
                    agentId=op.agent_id,
                    stepIndex=self.step.index,
                    tokenCount=self.token_count,
                    error=error,
                ),
            )
            m.compactions.add(1, {sc.GEN_AI_AGENT_NAME: op.agent, sc.ATTR_OUTCOME: "error"})
            return
        after = self.messages_after or 0
        saved = max(0, self.token_count - (self.tokens_after or 0))
        self.span.set_attributes(
            {
                sc.COMPACT_MESSAGES_AFTER: after,
                sc.COMPACT_TOKENS_SAVED: saved,
                sc.COMPACT_GROUP_ID: self.group_id,
            }
        )
        group, summary = self.group_id, self.summary
        self.live.follow(
            "after_compact",
            lambda: AfterCompactEvent(
                **common,
                agentId=op.agent_id,
                stepIndex=self.step.index,
                groupId=group,
                messagesBefore=self.message_count,
                messagesAfter=after,
                summary=summary,
                tokensSaved=saved,
            ),
        )
        m.compactions.add(1, {sc.GEN_AI_AGENT_NAME: op.agent, sc.ATTR_OUTCOME: "success"})
        m.tokens_saved.add(saved, {sc.GEN_AI_AGENT_NAME: op.agent})
        op.compacted = True  # the next model call sees the compacted conversation


class AgentCall(SpanScope):
    """A sub-agent call. Inside it, :meth:`operation` starts the child run.

    In-process children share the trace (their ``invoke_agent`` span is a child of this call);
    isolated children get a trace of their own. Both carry a link to the parent operation.
    """

    def __init__(self, step: Step, agent_id: str, instruction: str, *, isolated: bool) -> None:
        super().__init__(step.tracer, step)
        self.step = step
        self.agent_id = agent_id
        self.instruction = instruction
        self.isolated = isolated
        self.child: Operation | None = None

    def operation(self, agent: str | None = None, **options: Any) -> Operation:
        """The child run (``agent`` defaults to the called agent id)."""
        from otelhooks._instrument._operation import Operation

        parent = self.step.operation
        options.setdefault("session_id", parent.session_id)
        options.setdefault("user_id", parent.user_id)
        options.setdefault("input", self.instruction)
        self.child = Operation(
            self.tracer, agent or self.agent_id, parent=parent, isolated=self.isolated, **options
        )
        self.child._outer = self  # its exception leaves through this call
        return self.child

    def _open(self, *, deferred: bool) -> None:
        op = self.step.operation
        common = op.common()

        def build() -> HookEvent:
            return BeforeCallAgentEvent(
                **common, agentId=self.agent_id, instruction=self.instruction
            )

        live = LiveEvent(
            "before_call_agent",
            build,
            values=(self.agent_id,),
            operation_id=op.operation_id,
            deferred=deferred,
        )
        self._begin(
            f"{sc.OP_CALL_AGENT} {self.agent_id}",
            live,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_CALL_AGENT,
                sc.SUBAGENT_ID: self.agent_id,
                sc.SUBAGENT_ISOLATED: self.isolated,
                sc.OPERATION_ID: op.operation_id,
            },
        )

    def _close(self, exc: BaseException | None) -> None:
        op = self.step.operation
        common = op.common()
        child = self.child
        if exc is None and child is not None and child.error is not None:
            exc = child.error
            self.fail(exc)
        if exc is not None:
            error = error_text(exc)
            self.live.follow(
                "on_call_agent_error",
                lambda: CallAgentErrorEvent(**common, agentId=self.agent_id, error=error),
            )
            return
        sub_id = child.operation_id if child else None
        thread = child.thread_id if child else None
        success = child is not None and child.reason == "done"
        attrs: dict[str, Any] = {sc.SUBAGENT_SUCCESS: success}
        if sub_id:
            attrs[sc.SUBAGENT_OPERATION_ID] = sub_id
        if thread:
            attrs[sc.SUBAGENT_THREAD_ID] = thread
        self.span.set_attributes(attrs)
        self.live.follow(
            "after_call_agent",
            lambda: AfterCallAgentEvent(
                **common,
                agentId=self.agent_id,
                subOperationId=sub_id,
                threadId=thread,
                success=success,
            ),
        )
