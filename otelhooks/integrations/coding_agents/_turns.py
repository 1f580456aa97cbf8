"""Turns of a coding-agent session: ``invoke_agent`` spans from ``UserPromptSubmit`` to ``Stop``.

``UserPromptSubmit`` opens the turn (state file) and runs the ``before_agent_start``
interceptors: a block, or a rewrite the CLI cannot carry, ends it at once. ``Stop`` runs the
``on_complete`` hooks before the turn ends (a block keeps it going); ``StopFailure`` ends it with
an error (``on_error``). A turn that never saw its ``Stop`` ends ``interrupted`` at Claude Code's
``Interrupt`` (the bridge's), else when the next opens or the session ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._config._claude_answer import block_answer
from otelhooks._events import BeforeAgentStartEvent, CompleteEvent, ErrorEvent
from otelhooks._span_mapping import verdict_attributes
from otelhooks.integrations.coding_agents._answers import (
    combine,
    denied_by,
    keep_block,
    respond,
    run_hooks,
    tell_failures,
)
from otelhooks.integrations.coding_agents._common import (
    HookResponse,
    cli_name,
)
from otelhooks.integrations.coding_agents._mapping import own_fields
from otelhooks.integrations.coding_agents._part import Part
from otelhooks.integrations.coding_agents._spans import (
    SpanRecord,
    event_ids,
    session_trace_id,
)
from otelhooks.integrations.coding_agents._state_rows import OpenOperation

__all__ = ["Turns", "turn_ids"]


def turn_ids(session: str, op: OpenOperation | None, span_id: int | None) -> dict[str, Any]:
    """The ids an event of ``session`` carries, in turn ``op`` (if one is open)."""
    return event_ids(session, op.operation_id if op is not None else None, span_id)


class Turns(Part):
    """The turn half of the bridge (see the module docstring)."""

    def _attributes(self, op: OpenOperation, reason: str) -> dict[str, types.AttributeValue]:
        return {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: self.provider,
            sc.GEN_AI_AGENT_NAME: self.agent,
            sc.GEN_AI_AGENT_ID: self.agent,
            sc.GEN_AI_CONVERSATION_ID: op.session_id,
            sc.SESSION_ID: op.session_id,
            sc.OPERATION_ID: op.operation_id,
            sc.COMPLETE_REASON: reason,
        }

    def end(
        self,
        op: OpenOperation,
        reason: Literal["done", "error", "interrupted"],
        error: str | None,
        *,
        error_type: str = "StopFailure",
        completed: bool = False,
        attributes: Mapping[str, types.AttributeValue] | None = None,
        events: Sequence[tuple[str, Mapping[str, types.AttributeValue]]] = (),
    ) -> None:
        end = time.time_ns()
        if self.writer.read:  # else nothing receives spans: none is built
            self.writer.write(
                SpanRecord(
                    f"{sc.OP_INVOKE_AGENT} {self.agent}",
                    session_trace_id(op.session_id),
                    op.span_id,
                    None,
                    op.start_ns,
                    end,
                    {**self._attributes(op, reason), **(attributes or {})},
                    error=error,
                    error_type=error_type if error else None,
                    events=events,
                )
            )
        if completed and error is None:
            return  # Stop's hooks ran before Claude Code was answered: no event to build
        common = turn_ids(op.session_id, op, op.span_id)
        if error is not None:
            self.observe(
                "on_error",
                ErrorEvent(**common, agentId=self.agent, errorMessage=error, errorType=error_type),
                (self.agent,),
            )
        if completed:
            return  # its hooks ran before Claude Code was answered (Stop)
        complete = CompleteEvent(
            **common,
            agentId=self.agent,
            runId=op.operation_id,
            reason=reason,
            success=reason == "done",
            error=error,
            duration=(end - op.start_ns) / 1e9,
        )
        self.observe("on_complete", complete, (self.agent,))

    def prompt(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        prompt = str(payload.get("prompt") or "")
        # the state file keeps the prompt only when content is captured (data at rest)
        op, previous = self.state.start_operation(session, prompt if self.capture else "")
        if previous is not None:
            self.end(previous, "interrupted", None)

        def event() -> BeforeAgentStartEvent:  # built for a hook only
            metadata = {k: payload.get(k) for k in ("cwd", "permission_mode", "transcript_path")}
            return BeforeAgentStartEvent(
                **turn_ids(session, op, op.span_id),
                agentId=self.agent,
                input=prompt,
                userMessage=prompt,
                fullPrompt=prompt,
                metadata=metadata,
            )

        verdict, answers = run_hooks(
            self.engine, "before_agent_start", event, (self.agent,), operation_id=op.operation_id
        )
        rewritten = verdict.payload
        if (
            verdict.rewritten_by
            and isinstance(rewritten, BeforeAgentStartEvent)
            and (rewritten.userMessage, rewritten.input) != (prompt, prompt)
        ):
            # Claude Code cannot replace a prompt (its reference: UserPromptSubmit "can't replace
            # the prompt"), nor can Codex or Gemini CLI (BeforeAgent appends context or denies):
            # the prompt the hook rewrote must not reach the model as it was
            by = ", ".join(verdict.rewritten_by)
            new = rewritten.userMessage if rewritten.userMessage != prompt else rewritten.input
            reason = (
                f"hook {by} rewrote this prompt, and {cli_name(self.agent)} cannot replace a "
                f"prompt; submit the rewritten one instead: {new}"
            )
            answers.append(block_answer(by, reason))
        output, lost = combine(name, answers, agent=self.agent)
        keep_block(name, output, verdict)
        if output.get("decision") == "block" or output.get("continue") is False:
            # which hook refused the prompt, and why, as an in-process run's span says it
            said = verdict_attributes("before_agent_start", verdict)
            if not verdict.blocked:  # a command hook's answer, or a rewrite refused above
                said[sc.HOOK_DECIDED_BY] = denied_by(answers) or ""
                why = output.get("reason") or output.get("stopReason") or ""
                said[sc.HOOK_DECISION_REASON] = str(why)
            self.state.end_operation(session)
            self.end(op, "interrupted", None, attributes=said)
        else:
            tell_failures(output, verdict.errors)
        return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)

    def stop(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        if name == "StopFailure":
            # a failed turn is reported even if its start was not seen (hooks added mid-turn)
            self.state.current_operation(session)
            failed = self.state.end_operation(session)
            if failed is not None:
                kind = str(payload.get("error") or "unknown")  # rate_limit, overloaded, ...
                details = payload.get("error_details")
                error = f"{kind}: {details}" if isinstance(details, str) and details else kind
                self.end(failed, "error", error, error_type=kind)
            return HookResponse()  # Claude Code ignores StopFailure's output
        # Stop hooks may keep the turn going (decision: block): they run before it ends

        def complete() -> CompleteEvent:  # built for a hook only (the turn read only then)
            op = self.state.peek_operation(session)
            own = own_fields(name, payload, capture=self.capture, project=self.project)
            return CompleteEvent.model_validate(
                {
                    **turn_ids(session, op, op.span_id if op is not None else None),
                    "agentId": self.agent,
                    "runId": op.operation_id if op is not None else session,
                    "reason": "done",
                    "success": True,
                    "duration": (time.time_ns() - op.start_ns) / 1e9 if op is not None else 0.0,
                    "claudeCode": own,
                }
            )

        _, answers = run_hooks(self.engine, "on_complete", complete, (self.agent,))
        output, lost = combine(name, answers, agent=self.agent)
        if output.get("decision") != "block":
            ended = self.state.end_operation(session)
            if ended is not None:
                self.end(ended, "done", None, completed=True)
        return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)
