"""Tool uses of a Claude Code session: ``execute_tool`` spans from ``PreToolUse`` to ``Post*``.

``PreToolUse`` records the start (state file) and runs the ``before_tool_call`` interceptors; a
deny or a mock ends the span at once and is answered in Claude Code's format. ``PostToolUse`` /
``PostToolUseFailure`` / ``PermissionDenied``, in another process, end it. What the span and the
hooks' events of a tool use say is :mod:`._tool_spans`' (the base of :class:`ToolUses`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._config._claude_answer import HookAnswer, block_answer
from otelhooks._events import (
    AfterToolCallEvent,
    RunningSpend,
    ToolCallDeniedEvent,
    ToolCallErrorEvent,
    ToolCallEvent,
    ToolResult,
    ToolResultPersistEvent,
)
from otelhooks._fingerprint import canonical_json
from otelhooks._hooks import Hook
from otelhooks._instrument._spend import running
from otelhooks._live import Verdict, persist_event
from otelhooks._matchers import tool_aliases
from otelhooks._redact import scrub
from otelhooks._span_mapping import approval_events, security_findings, security_findings_enabled
from otelhooks._store._errors import StoreError
from otelhooks._tool_kinds import cli_aliases
from otelhooks.integrations.coding_agents._answers import (
    combine,
    denied_by,
    keep_block,
    output_withheld_by,
    respond,
    run_hooks,
    tell_failures,
)
from otelhooks.integrations.coding_agents._approvals import approval_allows
from otelhooks.integrations.coding_agents._common import AGENT, HookResponse, text
from otelhooks.integrations.coding_agents._mapping import event_cwd, turn_attributes
from otelhooks.integrations.coding_agents._part import Shared
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._shapes import reported_error, shaped
from otelhooks.integrations.coding_agents._spans import APPROVALS_KEY
from otelhooks.integrations.coding_agents._state_rows import OpenTool
from otelhooks.integrations.coding_agents._tool_spans import ToolSpans

__all__ = ["FAIL_CLOSED", "ToolUses", "tool_args", "tool_values"]

# the agents whose --fail-closed also denies a call a guard failed on (Claude Code has its own
# onFailure, and each hook its on_error)
_NO_ON_FAILURE = frozenset({"codex", "gemini-cli"})
# what a deny under --fail-closed says first (the bridge's own refusals say the same)
FAIL_CLOSED = "otelhooks could not check this tool call (fail-closed)"


def tool_args(payload: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """(tool name, tool input, tool use id) of a tool event."""
    name = str(payload.get("tool_name") or "tool")
    raw = payload.get("tool_input")
    args = dict(raw) if isinstance(raw, Mapping) else {"input": raw}
    use_id = str(payload.get("tool_use_id") or f"{name}:{canonical_json(args)}")
    return name, args, use_id


def tool_values(tool_name: str, payload: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """What matchers see: the name; for an MCP tool (``mcp__server__tool``) the names the MCP
    gateway gives it (``server/tool``, ``tool``), so one guard fires in both; the former names
    of a Claude Code tool (``Task`` for ``Agent``), which Claude Code's own hooks still match it
    by, in every CLI's bridge (the bridge speaks Claude Code's schema, and a guard written from
    its reference names them); and the names the CLI itself matches the tool by, which its
    dialect put in the input's ``matcher_aliases`` (Codex CLI's ``Write`` and ``Edit`` for
    ``apply_patch``, Gemini CLI's ``mcp_<server>_<tool>``), so a guard written from that CLI's
    reference fires where the CLI's own hook would.

    Example:
        >>> tool_values("apply_patch", {"matcher_aliases": ["Write", "Edit"]})
        ('apply_patch', 'Write', 'Edit')
        >>> tool_values("Agent")
        ('Agent', 'Task')
    """
    own = payload.get("matcher_aliases") if payload is not None else None
    more = [a for a in own if isinstance(a, str) and a] if isinstance(own, list) else []
    former = cli_aliases(AGENT, tool_name)
    return (tool_name, *tool_aliases(tool_name), *former, *more)


def _prints(hook: Hook) -> bool:
    """A hook whose printed answer the agent reads (a command's)."""
    return hook.action.kind == "command"


def _prints_not(hook: Hook) -> bool:
    return not _prints(hook)


class ToolUses(ToolSpans):
    """The tool-use half of the bridge (see the module docstring)."""

    def __init__(self, shared: Shared, *, spend: ServerSessions | None = None) -> None:
        super().__init__(shared)
        # where the sessions' running cost is kept (Claude Code's own cost_usd, from its
        # telemetry under `serve`): what a budget guard reads on PreToolUse
        self.spend = spend

    def pre(self, session: str, payload: Mapping[str, Any]) -> HookResponse:
        tool_name, args, use_id = tool_args(payload)
        # the state file keeps the arguments only when content is captured (data at rest)
        # what the span keeps whatever the hooks decide, kept with the start: a call no hook
        # adds to needs no second change (set_tool_attributes) before it is answered
        known = {**turn_attributes(payload), **self._args_attributes(args)}
        cwd = event_cwd(payload)
        if self.capture and cwd is not None:  # with the arguments, what their paths are relative to
            known[sc.CLAUDE_CODE_CWD] = cwd
            project = self.project
            if project is not None:
                known[sc.CLAUDE_CODE_PROJECT_DIR] = project
        tool = self.state.begin_tool(
            session, use_id, tool_name, args if self.capture else {}, attributes=known
        )
        if tool.tool_name != tool_name:
            # its id is open with another tool (a session id two agents share, a client
            # choosing ids): the hooks judge this call, never the open one's tool
            tool = replace(tool, tool_name=tool_name)

        values = tool_values(tool_name, payload)  # the matcher values of this tool use
        verdict, answers, output, lost = self.judge(session, tool, args, payload)
        mock = verdict.mock
        specific = output.get("hookSpecificOutput") or {}
        decision = specific.get("permissionDecision")
        reason = str(specific.get("permissionDecisionReason") or "")
        if decision != "deny":
            tell_failures(output, verdict.errors)
        response = respond("PreToolUse", output, lost, deny_mode=self.deny_mode, agent=self.agent)
        attrs = {**known, **self._decision_attributes(verdict, answers, decision, reason)}
        kept: dict[str, Any] = attrs  # built for this call: the state keeps it as it is
        events = [[n, a] for n, a, _ in approval_events(verdict)]
        if security_findings_enabled():
            events += [[n, a] for n, a in security_findings(verdict)]
        if events:
            # who answered an approval hook (and, experimental, the findings): span events of
            # this call's span, once it ends
            kept[APPROVALS_KEY] = events
        if decision == "deny":
            self.state.end_tool(session, use_id)
            self._refuse(tool, kept, verdict, args, reason, values, mocked=mock is not None)
            return response
        if kept != tool.attributes:  # the hooks added to them (or a repeated start's differ)
            self.state.set_tool_attributes(tool, kept)
        return response

    def _decision_attributes(
        self, verdict: Verdict, answers: list[HookAnswer], decision: Any, reason: str
    ) -> dict[str, types.AttributeValue]:
        """What a call's span says of its guards' answer: what Claude Code was told, and by
        whom (``continue: false`` included). One rule for a ``PreToolUse`` and for a
        ``PermissionRequest`` whose changed arguments they judged, or that was denied
        (:meth:`end_asked`)."""
        attrs = self._verdict_attributes(verdict)
        if decision is not None:
            attrs[sc.HOOK_DECISION] = str(decision)
        if decision == "deny" and not verdict.blocked and verdict.mock is None:
            attrs[sc.HOOK_DECIDED_BY] = denied_by(answers) or ""
            attrs[sc.HOOK_DECISION_REASON] = reason
            attrs[sc.HOOK_CLASSIFICATION] = sc.CLASSIFICATION_HOOK_DENIED
        return attrs

    @staticmethod
    def _decided_by(verdict: Verdict, attrs: Mapping[str, Any]) -> str:
        return verdict.decided_by or verdict.mocked_by or str(attrs.get(sc.HOOK_DECIDED_BY, ""))

    def _tell_denied(
        self, context: dict[str, Any], reason: str, decided_by: str, values: tuple[str, ...]
    ) -> None:
        """``on_tool_call_denied`` observers of a call a guard denied (``context``: its
        :meth:`_tool_event`)."""
        self.observe(
            "on_tool_call_denied",
            lambda: ToolCallDeniedEvent(**context, reason=reason, decidedBy=decided_by),
            values,
        )

    def judge(
        self, session: str, tool: OpenTool, args: dict[str, Any], payload: Mapping[str, Any]
    ) -> tuple[Verdict, list[HookAnswer], dict[str, Any], list[str]]:
        """The ``before_tool_call`` guards on ``tool`` called with ``args``, their answers
        combined as the ``PreToolUse`` answer: a mock is a deny whose reason is the mocked
        result, a rewrite is ``updatedInput``, a person's allow an allow."""

        def event() -> ToolCallEvent:  # built only for a hook that matches
            fields: dict[str, Any] = {
                **self._tool_event(tool, args),
                "claudeCode": self._own(payload),
            }
            if self.spend is not None:
                try:
                    fields["spend"] = running(None, self.spend.spend_of(session))
                except StoreError as exc:  # a budget guard fails: its on_error decides
                    fields["spend"] = RunningSpend(error=str(exc))
            return ToolCallEvent(**fields)

        values = tool_values(tool.tool_name, payload)
        verdict, answers = run_hooks(
            self.engine, "before_tool_call", event, values, operation_id=tool.operation_id
        )
        mock = verdict.mock
        if mock is not None:
            # Claude Code cannot take a result in place of running the tool: the nearest is a
            # deny whose reason (which the model reads) is the mocked result
            by = verdict.mocked_by or "a hook"
            answers.append(block_answer(by, f"mocked by {by}: {mock.content}"))
        rewritten = verdict.payload
        updated = (
            rewritten.args
            if verdict.rewritten_by
            and isinstance(rewritten, ToolCallEvent)
            and rewritten.args != args
            else None
        )
        answers += approval_allows("PreToolUse", verdict)  # a person's allow is an allow
        failures = self._enforced_failures(verdict, tool.operation_id)
        if self.fail_closed and self.agent in _NO_ON_FAILURE and failures and not verdict.blocked:
            # --fail-closed: a guard that failed (an answer no agent reads, a crash) did not
            # say the call is safe, and the person chose that such a call does not run; Codex
            # CLI and Gemini CLI have no onFailure of their own, and Codex shows no failure
            failed = "; ".join(scrub(e)[:500] for e in failures)
            reason = f"{FAIL_CLOSED}: a hook failed and did not decide: {failed}"
            answers.append(block_answer("otelhooks", reason))
        output, lost = combine("PreToolUse", answers, updated_input=updated, agent=self.agent)
        keep_block("PreToolUse", output, verdict)
        return verdict, answers, output, lost

    def _enforced_failures(self, verdict: Verdict, operation_id: str | None) -> list[str]:
        """The verdict's errors but a permissive hook's (which never blocks: its failure is
        only recorded, ``--fail-closed`` or not)."""
        hooks = [*self.engine.registry.hooks()]
        if operation_id is not None:
            hooks += self.engine.registry.hooks(operation_id=operation_id)
        permissive = {h.id for h in hooks if h.mode == "permissive"}
        return [e for e in verdict.errors if e.split(": ", 1)[0] not in permissive]

    def end_asked(
        self,
        tool: OpenTool,
        payload: Mapping[str, Any],
        asked: dict[str, Any],
        verdict: Verdict,
        answers: list[HookAnswer],
        reason: str,
    ) -> dict[str, types.AttributeValue]:
        """The call a denied ``PermissionRequest`` asked about (``asked``: its arguments as
        asked; ``tool``: the call as judged) ends denied, as :meth:`pre` ends one: its span,
        opened at its ``PreToolUse``, and the observers; without an open span (its
        ``PreToolUse`` was not seen) the observers only. Returns what the deny's span says of
        it (the request's span says it too)."""
        attrs = self._decision_attributes(verdict, answers, "deny", reason)
        values = tool_values(tool.tool_name, payload)
        fingerprint = str(self._args_attributes(asked)[sc.TOOL_ARGS_FINGERPRINT])
        opened_id = self.state.asked_tool(tool.session_id, tool.tool_name, fingerprint)
        opened = self.state.end_tool(tool.session_id, opened_id) if opened_id else None
        if opened is not None:
            kept = {**opened.attributes, **attrs}
            self._refuse(opened, kept, verdict, tool.tool_input, reason, values, mocked=False)
        else:
            context = self._tool_event(tool, tool.tool_input)
            self._tell_denied(context, reason, self._decided_by(verdict, attrs), values)
        return attrs

    def _refuse(
        self,
        tool: OpenTool,
        attrs: dict[str, Any],
        verdict: Verdict,
        args: dict[str, Any],
        reason: str,
        values: tuple[str, ...],
        *,
        mocked: bool,
    ) -> None:
        """A hook denied (or mocked) the call: Claude Code does not run the tool."""
        denied = not mocked
        outcome = "denied" if denied else "mocked"
        self.end_tool(replace(tool, attributes=dict(attrs)), outcome, result=reason)
        context = self._tool_event(tool, args)
        decided_by = self._decided_by(verdict, attrs)
        if denied:
            self._tell_denied(context, reason, decided_by, values)

        def after() -> AfterToolCallEvent:
            state = {
                "type": "blocked",
                "classification": sc.CLASSIFICATION_HOOK_DENIED,
                "reason": reason,
                "decidedBy": decided_by,
            }
            result = (
                ToolResult(content=reason, success=False, error=reason, state=state)
                if denied
                else (verdict.mock or ToolResult())
            )
            return AfterToolCallEvent(
                **context,
                content=result.content,
                success=result.success,
                mocked=not denied,
                result=result,
                toolOutput=result.content,
            )

        self.observe("after_tool_call", after, values)

    def _take_tool(self, session: str, payload: Mapping[str, Any], open_only: bool) -> OpenTool:
        """The tool use a ``Post*`` event ends. One whose start was missed is made up: with
        ``open_only`` (a server) outside the session state and without a span (``span_id`` 0,
        which :meth:`end_tool` writes nothing for: a forged or misrouted end ends nothing and
        records no call), else recorded as a zero-length span. Either way its hooks run on it."""
        tool_name, args, use_id = tool_args(payload)
        tool = self.state.end_tool(session, use_id)
        if tool is None and open_only:
            return OpenTool(session, use_id, 0, 0, "", time.time_ns(), tool_name, args, 0, {})
        if tool is None:
            self.state.begin_tool(session, use_id, tool_name, args if self.capture else {})
            tool = self.state.end_tool(session, use_id)
            assert tool is not None
        if sc.TOOL_ARGS_FINGERPRINT not in tool.attributes:
            # a start this process did not see: the Post* input carries the arguments too
            tool = replace(tool, attributes={**self._args_attributes(args), **tool.attributes})
        return tool

    def _persist(
        self, tool: OpenTool, response: Any, values: tuple[str, ...]
    ) -> tuple[Any, list[HookAnswer], dict[str, Any], Verdict]:
        """Run ``tool_result_persist`` interceptors (the kernel's result filter) on the output:
        a rewrite or a block becomes ``updatedToolOutput`` in the tool's own output shape; the
        last item is their verdict (the engine's block is in ``answers`` too)."""
        if not self.engine.matches("tool_result_persist", values):
            return response, [], {}, Verdict()
        event = ToolResultPersistEvent(
            sessionKey=tool.session_id,
            operationId=tool.operation_id,
            toolName=tool.tool_name,
            toolCallId=tool.tool_use_id,
            apiName=tool.tool_name,
            result=response,
        )
        verdict, answers = run_hooks(self.engine, "tool_result_persist", event, values)
        if verdict.blocked:
            note = f"[tool output withheld by hook {verdict.decided_by}: {verdict.reason}]"
            updated = shaped(response, note)
        elif verdict.rewritten_by and isinstance(verdict.payload, ToolResultPersistEvent):
            updated = shaped(response, verdict.payload.result)
        else:
            return response, answers, {}, verdict
        if updated == response:
            return response, answers, {}, verdict
        return updated, answers, {"updatedToolOutput": updated}, verdict

    def post(
        self, session: str, name: str, payload: Mapping[str, Any], *, open_only: bool = False
    ) -> HookResponse:
        tool = self._take_tool(session, payload, open_only)
        measured = payload.get("duration_ms")  # Claude Code's own timing, when it sends one
        elapsed_ms = (time.time_ns() - tool.start_ns) / 1e6
        ended: dict[str, types.AttributeValue] = {}
        if isinstance(measured, int | float) and not isinstance(measured, bool):
            elapsed_ms = float(measured)
            ended["claude_code.duration_ms"] = elapsed_ms
        values = tool_values(tool.tool_name, payload)

        def context() -> dict[str, Any]:
            return {
                **self._tool_event(tool, tool_args(payload)[1]),
                "claudeCode": self._own(payload),
            }

        if name == "PostToolUseFailure":
            error = str(payload.get("error") or "the tool failed")
            error_type = "interrupted" if payload.get("is_interrupt") else "ToolError"
            self.end_tool(
                tool, "error", result=error, error=error, error_type=error_type, extra=ended
            )
            failed = partial(ToolCallErrorEvent, error=error, errorType=error_type)
            _, answers = run_hooks(
                self.engine, "on_tool_call_error", lambda: failed(**context()), values
            )
            output, lost = combine(name, answers, agent=self.agent)
            return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)
        # what the model will see (after a tool_result_persist rewrite) is what is recorded
        response, answers, extra, persisted = self._persist(
            tool, payload.get("tool_response"), values
        )
        blocked = persisted.blocked
        content = text(response)
        ended_ns = time.time_ns()  # the tool's end, not its after_tool_call hooks'
        # a tool that failed (Gemini CLI's AfterTool says so in its output) is no success: as a
        # tool's unsuccessful result in process, after_tool_call hears it (success false)
        reported = reported_error(payload.get("tool_response"))

        def after() -> AfterToolCallEvent:
            # what the model was given: a block (its reason, the hook named) is no success
            state = None
            error = reported[0] if reported else None
            if persisted.blocked:
                error = persisted.reason
                state = {
                    "type": "blocked",
                    "reason": persisted.reason,
                    "decidedBy": persisted.decided_by,
                }
            return AfterToolCallEvent(
                **context(),
                content=content,
                success=error is None and not persisted.blocked,
                executionTimeMs=elapsed_ms,
                duration=elapsed_ms / 1000,
                result=ToolResult(
                    content=content,
                    success=error is None and not persisted.blocked,
                    executionTime=elapsed_ms,
                    error=error,
                    state=state,
                ),
                toolOutput=response,
            )

        # command hooks first: a block they print (Codex's PostToolUse, Gemini's AfterTool) is
        # what the model reads in the output's place, and the other hooks are told it; they
        # ran on this thread before too, so nothing waits longer for them
        _, more = run_hooks(self.engine, "after_tool_call", after, values, only=_prints)
        withheld = output_withheld_by(more, self.agent) if not blocked else None
        if withheld is not None:
            # a command hook's block keeps the output from the model as a tool_result_persist
            # block does: the span says so alike, and keeps what the model read instead
            hook_id, reason = withheld
            persisted = replace(
                persisted,
                blocked=True,
                decided_by=hook_id,
                reason=reason,
                matched=[*persisted.matched, hook_id],
            )
            content = f"[tool output withheld by hook {hook_id}: {reason}]"
        _, rest = run_hooks(self.engine, "after_tool_call", after, values, only=_prints_not)
        more += rest
        # a withheld output is the hooks' block, not the tool's success (nor its error); the
        # span event names the hook and its reason, as in process and at the MCP gateway
        said = (
            [(sc.EVENT_TOOL_RESULT_PERSIST, persist_event(persisted))] if persisted.matched else []
        )
        if persisted.blocked or reported is None:
            outcome = "blocked" if persisted.blocked else "success"
            self.end_tool(tool, outcome, result=content, extra=ended, events=said, end_ns=ended_ns)
        else:
            error, error_type = reported
            self.end_tool(
                tool,
                "error",
                result=content,
                error=error,
                error_type=error_type,
                extra=ended,
                events=said,
                end_ns=ended_ns,
            )
        output, lost = combine(name, [*answers, *more], extra=extra, agent=self.agent)
        return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)

    def permission_denied(
        self, session: str, payload: Mapping[str, Any], *, open_only: bool = False
    ) -> HookResponse:
        tool = self._take_tool(session, payload, open_only)
        reason = str(payload.get("reason") or "denied by Claude Code")
        self.end_tool(tool, "denied", result=reason)
        context = {
            **self._tool_event(tool, tool_args(payload)[1]),
            "claudeCode": self._own(payload),
        }
        denied = ToolCallDeniedEvent(**context, reason=reason, decidedBy=self.agent)
        values = tool_values(tool.tool_name, payload)
        _, answers = run_hooks(self.engine, "on_tool_call_denied", denied, values)
        output, lost = combine("PermissionDenied", answers, agent=self.agent)
        return respond("PermissionDenied", output, lost, deny_mode=self.deny_mode, agent=self.agent)
