"""``CodingAgentBridge``: one coding agent's hook event in, spans, hooks and its answer out.

The mapping (one place; the full event table is :data:`._mapping.EVENTS`):

===========================  ====================================================================
Claude Code event            otelhooks
===========================  ====================================================================
(every event)                the session is one trace: trace id = SHA-256 of ``session_id``
``UserPromptSubmit``         a turn opens: ``invoke_agent {agent}``; ``before_agent_start``
                             interceptors run and a block answers ``{"decision": "block"}``
``PreToolUse``               ``execute_tool {tool_name}`` starts (child of the turn);
                             ``before_tool_call`` interceptors run: a deny (or a mock, which
                             Claude cannot take as a result) answers ``permissionDecision: deny``
                             (or exit 2 with the reason on stderr), rewritten arguments answer
                             ``ask`` with ``updatedInput`` (the person confirms the change)
``PreSkillShellCommand``     a skill's inline shell command: judged as the ``PreToolUse`` of its
                             shell tool, and its span ends once it is answered
``PostToolUse``              the tool span ends (another process): ``tool_result_persist``
                             interceptors (a rewrite or block is ``updatedToolOutput``), then
                             ``after_tool_call``
``PostToolUseFailure``       the tool span ends with an error: ``on_tool_call_error``
``PermissionDenied``         ``on_tool_call_denied``; an open tool span ends ``denied``
``Stop`` / ``StopFailure``   the turn ends: ``on_complete`` (and ``on_error``); a Stop hook's
                             block keeps the turn open
``Interrupt``                the turn ends ``interrupted`` now, with the tool calls it was
                             running: ``on_complete`` and ``on_stop_by_human_intervention``
``BeforeModel/AfterModel``   (Gemini CLI) a ``chat {model}`` span in the turn, ``llm_input`` /
                             ``llm_output`` observers (:mod:`._model_calls`)
``SessionStart/End``         ``session_start`` / ``session_end``, ``agent_lifecycle`` spans; at
                             the end every open span of the session is closed
every other event            its canonical event for the observers (``PreCompact`` is
                             ``before_compact``, ...) and a short ``agent_lifecycle {event}``
                             span in the turn with a span event named as the CLI names it;
                             a name the table does not know is the same, as
                             ``claude_code_event``
===========================  ====================================================================

The hooks of every event Claude Code lets a hook decide (:data:`._combine.ANSWERING_EVENTS`) run
before the answer, observers included, and each hook's answer is combined with the others' as
Claude Code combines them (:mod:`._combine`). Nothing is answered unless a hook decided: an empty
answer leaves the CLI's own permission rules in charge.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import structlog
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.util import types
from pydantic import ValidationError

from otelhooks import _semconv as sc
from otelhooks._config._claude_answer import HookAnswer
from otelhooks._engine import HooksEngine
from otelhooks._events import (
    MessageSendingEvent,
    SessionEndEvent,
    SessionStartEvent,
    StopByHumanInterventionEvent,
)
from otelhooks._export._report import DeliveryReport, merge
from otelhooks._hooks import Hook
from otelhooks._resource import recording_resource
from otelhooks._setup import configure
from otelhooks._span_mapping import approval_events
from otelhooks.integrations.coding_agents._answers import (
    ANSWERING_EVENTS,
    combine,
    respond,
    run_hooks,
)
from otelhooks.integrations.coding_agents._approvals import approval_allows
from otelhooks.integrations.coding_agents._common import (
    AGENT,
    PROVIDER,
    DenyMode,
    HookResponse,
    event_marker,
    observer,
)
from otelhooks.integrations.coding_agents._input import SKILL_COMMAND_KEY
from otelhooks.integrations.coding_agents._mapping import (
    ALSO_NOW,
    EVENTS,
    claude_fields,
    lifecycle_attributes,
    matcher_value,
    point_payload,
)
from otelhooks.integrations.coding_agents._model_calls import ModelCalls
from otelhooks.integrations.coding_agents._part import Shared
from otelhooks.integrations.coding_agents._permission_requests import request_answered
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._spans import (
    SpanRecord,
    SpanWriter,
    session_trace_id,
)
from otelhooks.integrations.coding_agents._state import BridgeState
from otelhooks.integrations.coding_agents._state_rows import OpenOperation
from otelhooks.integrations.coding_agents._tools import ToolUses, tool_args, tool_values
from otelhooks.integrations.coding_agents._turns import Turns, turn_ids

__all__ = ["ClaudeCodeBridge", "CodingAgentBridge"]

_log = structlog.get_logger("otelhooks")


def _capture_content() -> bool:
    return os.environ.get(sc.ENV_CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")


class CodingAgentBridge:
    """Handles a coding agent's hook events, one per process (or many, in tests).

    The events are in Claude Code's hook schema, the one Codex CLI copies; a
    :class:`~otelhooks.integrations.coding_agents.Dialect` translates Gemini CLI's to it and the
    answer back. ``ClaudeCodeBridge`` (``otelhooks.integrations.claude_code``) is this class.

    Args:
        hooks: the otelhooks hooks to run (any config format, loaded).
        state: the state file shared by the hook processes.
        exporters: where spans go.
        deny_mode: answer a denial with JSON ``permissionDecision: deny`` (``json``) or with
            exit code 2 and the reason on stderr (``exit2``).
        service_name: ``service.name`` of the spans.
        engine: run this hooks engine instead of one made from ``hooks`` (a server shares
            its own; the caller then owns its shutdown).
        writer: write spans through this writer instead of one made from ``exporters``.
        capture: record content (prompts, tool arguments and results) on spans and in the state
            file; ``None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

        shutdown_timeout_s: how long :meth:`close` may take (Claude Code gives some hooks,
            ``SessionEnd`` among them, 1.5 s).
        fail_fast: do not retry a refused or silent webhook (a hook process is short-lived).
        agent: ``gen_ai.agent.name`` of the spans and the agent id of the events: the coding
            agent whose dialect was translated (``claude-code``, ``codex``, ``gemini-cli``).
        provider: ``gen_ai.provider.name`` of the spans (whose models that agent calls).
        fail_closed: deny a Codex CLI or Gemini CLI tool call whose guard failed
            (``--fail-closed``).

    Example:
        >>> bridge = CodingAgentBridge(state=BridgeState("/tmp/cc.sqlite3"))
        >>> bridge.handle({"hook_event_name": "Stop", "session_id": "s-1"}).exit_code
        0
        >>> bridge.close().ok
        True
    """

    def __init__(
        self,
        *,
        hooks: Sequence[Hook | Mapping[str, Any]] = (),
        state: BridgeState,
        exporters: Sequence[SpanExporter] = (),
        deny_mode: DenyMode = "json",
        service_name: str = AGENT,
        capture: bool | None = None,
        engine: HooksEngine | None = None,
        writer: SpanWriter | None = None,
        shutdown_timeout_s: float = 10.0,
        fail_fast: bool = False,
        agent: str = AGENT,
        provider: str = PROVIDER,
        spend: ServerSessions | None = None,
        project_dir: str | None = None,
        fail_closed: bool = False,
    ) -> None:
        self.agent = agent
        self.project = project_dir
        self.provider = provider
        self.state = state
        self.deny_mode = deny_mode
        self.capture = _capture_content() if capture is None else capture
        self.oh = None
        if engine is None:
            self.oh = configure(
                service_name=service_name,
                hooks=hooks,
                otlp=False,
                set_global=False,
                structured_logging=False,
                shutdown_timeout_s=shutdown_timeout_s,
                fail_fast=fail_fast,
            )
            engine = self.oh.engine
        self.engine = engine
        self.observe = observer(self.engine)
        resource = recording_resource({"service.name": service_name})
        self.writer = writer if writer is not None else SpanWriter(exporters, resource)
        shared = Shared(
            state=state,
            engine=self.engine,
            observe=self.observe,
            writer=self.writer,
            deny_mode=deny_mode,
            capture=self.capture,
            agent=agent,
            provider=provider,
            project=project_dir,
            fail_closed=fail_closed,
        )
        self.tools = ToolUses(shared, spend=spend)
        self.turns = Turns(shared)
        self.models = ModelCalls(shared)

    def close(self, timeout_s: float | None = None) -> DeliveryReport:
        """Run the queued observers and webhooks, export the spans (the exporters were given
        to the constructor; their own outcome is theirs to report).

        Returns:
            What reached each webhook URL (nothing, for a bridge on a server's engine: the
            server owns that engine and reports its deliveries).
        """
        report = self.oh.shutdown(timeout_s, log=False) if self.oh is not None else merge(())
        self.writer.shutdown()
        return report

    # -- dispatch ----------------------------------------------------------------------------------

    def hooks_now(self, payload: Mapping[str, Any], *, late: bool = False) -> list[Hook] | None:
        """The hooks that may run before ``payload`` is answered, as the engine's index names
        them (``None``: the bridge cannot tell, so any may); with ``late``, those whose failure
        an answer not given in time is (their ``on_error: block`` makes it a block).

        An event outside :data:`ANSWERING_EVENTS` runs none (its observers are queued). A
        ``PreToolUse`` runs the ``before_tool_call`` hooks matching its tool's names; any other
        event every hook of the events it runs, whatever its matcher (an event that ends a tool
        use is dispatched with the name its start recorded, which its own input may not
        repeat). Hooks of any operation count: the operation is not known before its state is
        read. A late ``PermissionRequest`` answer (a failure, which Claude Code ignores) carries
        no changed arguments: Claude Code goes on with the asked ones, which its ``PreToolUse``
        guards judged, so those guards (run here on changed arguments only) are not among them.

        Example:
            >>> bridge = CodingAgentBridge(state=BridgeState("/tmp/cc-now.sqlite3"))
            >>> bridge.hooks_now({"hook_event_name": "PreToolUse", "tool_name": "Bash"})
            []
            >>> bridge.close().ok
            True
        """
        name = str(payload.get("hook_event_name") or "")
        if name not in ANSWERING_EVENTS:
            return []
        registry = self.engine.registry
        if name == "PreToolUse":
            tool_name = str(payload.get("tool_name") or "tool")
            return registry.may_match("before_tool_call", tool_values(tool_name, payload))
        known = EVENTS.get(name)
        if known is None:
            return None
        found: list[Hook] = []
        also = () if late and name == "PermissionRequest" else ALSO_NOW.get(name, ())
        for event in (known.canonical, *also):
            found += registry.may_match(event)
        return found

    def handle(self, payload: Mapping[str, Any], *, open_tools_only: bool = False) -> HookResponse:
        """Handle one hook event (the JSON the CLI writes on the hook's stdin, in Claude Code's
        schema: a :class:`~otelhooks.integrations.coding_agents.Dialect` translates others).

        A ``Post*`` event whose tool use was never started in its session (hooks installed
        mid-session) ends a made-up zero-length ``execute_tool`` span; with
        ``open_tools_only`` (a server) it changes no state and writes no span (a client could
        otherwise write spans for any id). Either way its hooks run and their answer is
        returned: a redaction or a block of a tool use whose start was missed still reaches the
        agent.
        """
        session = str(payload.get("session_id") or "unknown-session")
        name = str(payload.get("hook_event_name") or "")
        if name == "PreToolUse":
            response = self.tools.pre(session, payload)
            if payload.get(SKILL_COMMAND_KEY):
                # no PostToolUse follows a skill's inline command: one not denied ends now; an
                # ask, a defer or changed arguments keep it from running too (Claude Code 2.1.332)
                tool = self.state.end_tool(session, tool_args(payload)[2])
                if tool is not None:
                    self.tools.end_tool(tool, "not_run" if _held(response) else "allowed")
            return response
        if name in ("PostToolUse", "PostToolUseFailure"):
            return self.tools.post(session, name, payload, open_only=open_tools_only)
        if name == "PermissionDenied":
            return self.tools.permission_denied(session, payload, open_only=open_tools_only)
        if name == "BeforeModel":  # Gemini CLI's (see _model_calls)
            return self.models.before(session, payload)
        if name == "AfterModel":
            return self.models.after(session, payload)
        handler = {
            "UserPromptSubmit": self.turns.prompt,
            "Stop": self.turns.stop,
            "StopFailure": self.turns.stop,
            "SessionStart": self._session_start,
            "SessionEnd": self._session_end,
            "Interrupt": self._interrupt,
        }.get(name, self._point)
        return handler(session, name, payload)

    # -- sessions and point events -----------------------------------------------------------------

    def _lifecycle_span(
        self,
        session: str,
        event: str,
        op: OpenOperation | None,
        events: Sequence[tuple[str, Mapping[str, types.AttributeValue]]] = (),
        *,
        write: bool = True,
    ) -> SpanRecord:
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
            events=events,
        )
        if write:
            self.writer.write(record)
        return record

    def _session_start(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        span_id = self._lifecycle_span(session, "session_start", None).span_id
        extra = claude_fields(payload, capture=self.capture)
        event = SessionStartEvent(
            **turn_ids(session, None, span_id), agentId=self.agent, metadata=extra
        )
        values = (str(payload.get("source") or "*"),)
        _, answers = run_hooks(self.engine, "session_start", event, values)
        output, lost = combine(name, answers, agent=self.agent)
        return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)

    def _session_end(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        op, tools = self.state.end_session(session)
        for tool in tools:
            message = "the session ended before the tool finished"
            self.tools.end_tool(tool, "error", error=message, error_type="SessionEnded")
        if op is not None:
            self.turns.end(op, "interrupted", None)
        span_id = self._lifecycle_span(session, "session_end", None).span_id
        reason = str(payload.get("reason") or "")
        event = SessionEndEvent(**turn_ids(session, None, span_id), reason=reason)
        self.observe("session_end", event, (reason or "*",))
        return HookResponse()

    def _interrupt(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        """A person (or a permission they denied) stopped the turn (Claude Code 2.1.335 on). It
        sends no ``Stop``, nor a ``PostToolUse`` for a call it stopped: the turn and its open
        calls end now, not when the next prompt or the session's end finds them open."""
        op, tools = self.state.end_turn(session)
        marker = (
            event_marker(self.agent, name, payload),
            lifecycle_attributes(payload, capture=self.capture),
        )
        for tool in tools:
            self.tools.end_tool(tool, "interrupted", events=(marker,))
        if op is not None:
            self.turns.end(op, "interrupted", None, events=(marker,))
        known = EVENTS[name]
        reason = payload.get("reason")
        stopped = StopByHumanInterventionEvent(
            **turn_ids(session, op, op.span_id if op is not None else None),
            toolCallId=tools[0].tool_use_id if tools else None,
            rejectionReason=reason if isinstance(reason, str) and reason else None,
        )
        self.observe(known.canonical, stopped, (matcher_value(known, payload),))
        return HookResponse()  # Claude Code ignores Interrupt's output

    def _point(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        """Any event without spans of its own: a short span, a span event, its observers."""
        known = EVENTS.get(name)
        canonical = known.canonical if known is not None else "claude_code_event"
        op = self.state.peek_operation(session)
        marker = (
            event_marker(self.agent, name or "unknown", payload),
            lifecycle_attributes(payload, capture=self.capture),
        )
        # a permission request's span is written once its hooks answered: a person's answer to
        # an approval hook is a span event of it
        later = name == "PermissionRequest"
        record = self._lifecycle_span(session, canonical, op, (marker,), write=not later)
        common = turn_ids(session, op, record.span_id)
        try:
            event = point_payload(
                known, payload, common, capture=self.capture, project=self.project
            )
        except ValidationError as exc:
            # ``event`` is structlog's own first argument: the hook event goes under another key
            _log.warning(
                "event not dispatched: payload does not fit", hook_event=name, error=str(exc)
            )
            event = None
        if event is None or known is None:  # known None: a newer event has no hooks to run yet
            if later:
                self.writer.write(record)
            return HookResponse()
        value = matcher_value(known, payload)
        values = tool_values(value) if known.matcher == "tool_name" else (value,)
        if name not in ANSWERING_EVENTS:
            self.observe(event.event, event, values)
            return HookResponse()
        answers: list[HookAnswer] = []
        extra: dict[str, Any] = {}
        if name == "MessageDisplay":
            extra, answers = self._message_sending(session, payload, common)
        verdict, more = run_hooks(self.engine, event.event, event, values)
        if later:
            more = [*more, *approval_allows(name, verdict)]
        output, lost = combine(name, [*answers, *more], extra=extra, agent=self.agent)
        if later:
            # the PreToolUse guards' answer on changed arguments, or the request's own deny, is
            # on the span and ends the call denied
            judged = request_answered(self.tools, session, payload, output, common, verdict, more)
            approvals = [(n, a) for n, a, _ in approval_events(verdict)]
            self.writer.write(
                replace(
                    record,
                    attributes={**record.attributes, **judged},
                    events=[*record.events, *approvals],
                )
            )
        return respond(name, output, lost, deny_mode=self.deny_mode, agent=self.agent)

    def _message_sending(
        self, session: str, payload: Mapping[str, Any], common: dict[str, Any]
    ) -> tuple[dict[str, Any], list[HookAnswer]]:
        """``message_sending`` interceptors on the text Claude Code is about to display: a
        rewrite is ``displayContent`` (the nearest field: Claude Code cannot change what is
        stored or what Claude sees), a block displays a note in its place."""
        values = ("claude-code",)
        if not self.engine.matches("message_sending", values):
            return {}, []
        delta = str(payload.get("delta") or "")
        sending = MessageSendingEvent(
            **common, channelId="claude-code", target="display", content=delta
        )
        verdict, _ = run_hooks(self.engine, "message_sending", sending, values)
        if verdict.blocked:
            return {"displayContent": f"[withheld by hook {verdict.decided_by}]"}, []
        new = verdict.payload
        if isinstance(new, MessageSendingEvent) and new.content != delta:
            return {"displayContent": new.content}, []
        return {}, []


def _held(response: HookResponse) -> bool:
    """Whether a ``PreToolUse`` answer asks, defers or changes the arguments: none of them lets
    a skill's inline shell command run (Claude Code applies no changed arguments there)."""
    try:
        data = json.loads(response.stdout) if response.stdout.strip() else None
    except ValueError:
        return False
    specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if not isinstance(specific, dict):
        return False
    return specific.get("permissionDecision") in ("ask", "defer") or "updatedInput" in specific


# Its name while it served Claude Code alone (``otelhooks.integrations.claude_code`` documents it)
ClaudeCodeBridge = CodingAgentBridge
