"""``hooks_for``: one async SDK callback per hook event, all on one in-process bridge."""

from __future__ import annotations

import contextvars
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from otelhooks._actions._approval import longest_approval_of
from otelhooks._instrument._current import current_operation
from otelhooks.integrations.claude_agent_sdk._turn_scopes import TurnSessions, enclosing_operation
from otelhooks.integrations.claude_agent_sdk._undelivered import (
    DeliveryCheck,
    undelivered_events,
)
from otelhooks.integrations.claude_agent_sdk._witness import PreToolUseWitness
from otelhooks.integrations.claude_code._entries import (
    APPROVAL_EVENTS,
    BLOCK_ON_FAILURE_EVENTS,
    covering_timeout,
)
from otelhooks.integrations.coding_agents._answers import closed_answer
from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._fair import FairRunner, Late
from otelhooks.integrations.coding_agents._input import (
    SKILL_COMMAND,
    as_tool_call,
    whole_characters,
)
from otelhooks.integrations.coding_agents._run import BridgeOptions, _refusal, late_refusal
from otelhooks.integrations.coding_agents._spans import SpanWriter

if TYPE_CHECKING:
    from claude_agent_sdk import HookMatcher

    from otelhooks._pipeline import OtelHooks

__all__ = [
    "AGENT",
    "SDK_EVENTS",
    "UNDELIVERED_EVENTS",
    "SdkHooks",
    "hooks_for",
    "refusal_output",
    "sdk_output",
]

_log = structlog.get_logger("otelhooks")

AGENT = "claude-agent-sdk"
# The events whose callbacks the CLI the SDK bundles calls (claude-agent-sdk 0.2.190, CLI
# 2.1.337; measured: ``tests/agent_sdk/test_delivered_events.py``). Its SessionStart (at startup),
# SessionEnd and InstructionsLoaded never reach a callback, so a session's spans end with its
# turn (Stop) and ``close``. The SDK's ``HookEvent`` names only ten events, but the SDK passes
# every name to its CLI: a skill's inline shell command (PreSkillShellCommand, with no
# PreToolUse: not hooked, a project skill's ``!`rm -rf ...` `` ran past every guard), a slash
# command's expansion (UserPromptExpansion: not hooked, a guard blocking ``/deploy`` never ran),
# PostToolBatch, ConfigChange, CwdChanged and PostCompact all reach a callback; so do
# PermissionDenied (auto mode refusing a call its safety check cannot judge: not hooked, the
# call's span ended as an error at close and no on_tool_call_denied hook heard of it) and
# Notification (a permission still undecided after 6 s), and Interrupt (``client.interrupt()``:
# not hooked, the turn and the call it stopped stayed open until close). Not MessageDisplay,
# which does too: a
# callback per batch of displayed lines (``install`` does not write it either). Hooks on every
# other event are refused or warned of (:mod:`._undelivered`).
SDK_EVENTS: tuple[str, ...] = (
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    SKILL_COMMAND,
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "ConfigChange",
    "CwdChanged",
    "PreCompact",
    "PostCompact",
    "Stop",
    "Interrupt",
)
# the Claude Code hook events no callback of hooks_for hears
UNDELIVERED_EVENTS: tuple[str, ...] = undelivered_events(SDK_EVENTS)
_TOOL_EVENTS = frozenset(
    {"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure"}
)
# dispatched in a turn whatever the session file holds: a prompt opens one, a tool call's start
# opens one if none is open, and its end or denial is dispatched in the turn its start was in
_IN_TURN = frozenset(
    {"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"}
)
# answered with hookSpecificOutput.permissionDecision, a deny keeps the command from running
_DENIABLE = frozenset({"PreToolUse", SKILL_COMMAND})
# Python keywords the SDK spells with a trailing underscore (it renames them for the CLI)
_RENAMED = {"continue": "continue_", "async": "async_"}


def sdk_output(event: str, response: HookResponse) -> dict[str, Any]:
    """The bridge's answer (Claude Code's hook output) as an SDK callback returns it.

    Example:
        >>> out = sdk_output("PreToolUse", HookResponse(2, stderr="no"))
        >>> out["hookSpecificOutput"]["permissionDecision"]
        'deny'
    """
    if response.exit_code == 2:  # a block, its reason on stderr (the exit2 form)
        if event in _DENIABLE:
            decision = {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": response.stderr,
            }
            return {"hookSpecificOutput": decision}
        return {"decision": "block", "reason": response.stderr}
    if not response.stdout.strip():
        if response.exit_code != 0 and response.stderr:
            # a failure that decides nothing (the CLI's exit 1): the CLI shows a command hook's
            # stderr then, and a callback's answer shows only its systemMessage
            return {"systemMessage": response.stderr}
        return {}
    try:
        data = json.loads(response.stdout)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    specific = data.get("hookSpecificOutput")
    if event == SKILL_COMMAND and isinstance(specific, dict):
        # judged as the PreToolUse of its shell tool: answered in its own event's name
        data["hookSpecificOutput"] = {**specific, "hookEventName": event}
    return {str(_RENAMED.get(k, k)): v for k, v in data.items()}


def refusal_output(event: str, reason: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The answer of a callback that refuses its event (a guard that would never run): the
    call denied, a prompt, a tool's output or a request blocked as the event's blocking answer
    gives it, and the run stopped (``continue: false``), with ``reason`` in the SDK's stream.

    Example:
        >>> out = refusal_output("PreToolUse", "no", {})
        >>> out["hookSpecificOutput"]["permissionDecision"], out["continue_"]
        ('deny', False)
    """
    if event in _DENIABLE:
        output = sdk_output(event, HookResponse(2, stderr=reason))
    elif event in ANSWERING_EVENTS:
        output = sdk_output(event, closed_answer(event, reason, payload))
    else:
        output = {}
    output.update(continue_=False, stopReason=reason, systemMessage=reason)
    return output


class _Refused(Exception):
    """A callback's event meets a guard that would never run (:class:`DeliveryCheck`)."""


class SdkHooks(dict[str, list["HookMatcher"]]):
    """What :func:`hooks_for` returns: the ``hooks`` of ``ClaudeAgentOptions`` (a plain
    ``{event: [HookMatcher]}`` mapping) and :meth:`close`, which ends its sessions.

    Under the SDK the CLI sends no ``SessionEnd``, and a call it refuses after ``PreToolUse``
    (a guard's ``ask``, with nobody to ask) sends nothing more either: only
    ``close`` tells that those calls never ran.
    """

    def __init__(self, hooks: dict[str, list[HookMatcher]], close: Callable[[], None]) -> None:
        super().__init__(hooks)
        self._close = close

    def close(self) -> None:
        """End every session the callbacks saw, as a ``SessionEnd`` would (reason ``closed``):
        a tool call still open is ended as an error (``SessionEnded``) with the decision its
        guards gave, the open turn as interrupted; the spans go to ``oh``'s processors. Then
        free the threads, the session file's connection and the temporary folder ``hooks_for``
        made. A callback called after this answers as a failure (a ``PreToolUse`` is denied).
        Calling it again does nothing."""
        self._close()

    def __enter__(self) -> SdkHooks:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def hooks_for(
    oh: OtelHooks,
    *,
    state: str | os.PathLike[str] | None = None,
    timeout_s: float = 60.0,
    fail_closed: bool = False,
    accept_undelivered: bool = False,
) -> SdkHooks:
    """The ``hooks`` of ``ClaudeAgentOptions`` running ``oh``'s hooks and tracing the run.

    Args:
        oh: what :func:`otelhooks.configure` returned: its engine runs the hooks, its span
            processors export the spans (``oh.shutdown()`` flushes them).
        state: the bridge's session file (a fresh temporary one when omitted).
        timeout_s: how long the SDK waits for one callback; on the events an ``approval:``
            hook may hold (``PreToolUse``, ``PermissionRequest``, ``UserPromptSubmit``), at
            least the longest approval's timeout and 15 s more, as ``install`` writes it (the
            CLI refuses a call whose callback it stopped waiting for). The approvals counted
            are those of ``oh`` and of the ``oh.operation(...)`` the SDK runs in when the SDK
            starts its CLI (``query``, ``ClaudeSDKClient.connect``): one registered after
            ``hooks_for`` counts from the next start; one registered while a CLI runs is
            refused at its deadline there, with the reason.
        fail_closed: when the callback fails on a ``PreToolUse`` or a skill's inline shell
            command (``PreSkillShellCommand``), in the bridge or before it, deny it (as the
            command bridge's ``--fail-closed``). Otherwise the failure is logged and the
            callback raises, which the CLI shows and then runs the tool. Also, as ``install
            --fail-closed``, ask the CLI to block what any other callback that fails was to
            check (``HookMatcher(on_failure="block")`` on the events a hook can stop: a prompt,
            a slash command's expansion, a tool's output ...), and stop the run at the end of
            a call that ran past the guards (below).
        accept_undelivered: run even when a guard of ``oh`` is on an event the SDK never calls
            back for (:data:`UNDELIVERED_EVENTS`: ``SessionStart``, ``SessionEnd``,
            ``InstructionsLoaded`` ...), which then never runs; only warned of. The same for
            the guards the callbacks find later (below).

    Raises:
        ValueError: an enforcing hook of ``oh`` (registered by now) is on an event whose hooks
            decide under the Claude Code CLI and that the SDK never calls back for: it could
            not run (``accept_undelivered=True`` runs without it). Every hook that would never
            run, on such an event or on no Claude Code event at all, is named in an
            ``UndeliveredHookWarning``.

    The hooks of an ``oh.operation(..., hooks=[...])`` the SDK is started in (``query``, or
    ``ClaudeSDKClient.connect``, inside its ``with``) run on every event of the SDK's turns:
    each turn is an operation of its own, run within the application's. A callback that runs in
    no operation while one with hooks of its own is open (a client connected before it began)
    names that operation's hooks in an ``UndeliveredHookWarning``: they do not see the session.

    The same rule holds for the hooks ``oh`` is given after this call, for those of the
    operation and for those registered for a turn's own operation id: the first callback that
    finds a guard among them that would never run (on an event the SDK never calls back for;
    the operation's on an event sent outside any turn) refuses its event (a tool call denied, a
    prompt blocked) and stops the run (``continue: false``), with the reason in the SDK's
    stream, unless ``accept_undelivered``; every such hook is named once in an
    ``UndeliveredHookWarning``.

    A call the CLI ran with no guard of these callbacks asked (``PreToolUse`` replaced in
    ``ClaudeAgentOptions.hooks``), or with arguments changed after they judged it
    (``can_use_tool``'s ``updated_input``, another callback's ``updatedInput``), is told at its
    ``PostToolUse``: an error logged and a ``systemMessage`` in the SDK's stream.

    A skill's inline shell command (``!`cmd` `` in a ``SKILL.md``), which the CLI runs as the
    skill loads with no ``PreToolUse``, is judged by the guards of its shell tool (``Bash``).

    Returns:
        ``{event: [HookMatcher(matcher=..., hooks=[callback])]}`` for every event of
        :data:`SDK_EVENTS`, whose :meth:`SdkHooks.close` (or ``with``) ends its sessions.
    """
    from otelhooks.integrations.claude_agent_sdk._matcher import WaitingMatcher

    # before anything is made: a guard that can never run is refused, not left to look in force;
    # a hook the engine is given later is judged by the same rule at each callback
    delivery = DeliveryCheck(oh.engine.registry, SDK_EVENTS, accept=accept_undelivered)
    delivery.start()
    folder = Path(tempfile.mkdtemp()) if state is None else None
    path = Path(state) if state is not None else Path(str(folder)) / "sessions.sqlite3"
    # each turn's operation runs within the application's operation the SDK runs in
    sessions = TurnSessions(path, oh.engine)
    writer = SpanWriter((), oh.tracer_provider.resource)
    for processor in oh.exporters:
        # the same processors as oh's own spans: one pipeline, flushed by oh.shutdown()
        writer.provider.add_span_processor(processor)
    bridge = CodingAgentBridge(
        engine=oh.engine,
        state=sessions,
        writer=writer,
        agent=AGENT,
        provider="anthropic",
    )
    # Threads of its own, as the bridge daemon's: events waiting behind a slow hook hold none of
    # the application's asyncio.to_thread executor (parallel tool calls would fill it); a
    # session's events wait only behind its own; a hook still running when its answer is due
    # is given up on and its thread replaced, so it holds back no other event.
    runner = FairRunner()
    # its failure messages name this adapter (``otelhooks claude-agent-sdk: ...``); ``told``:
    # what a late answer's reason says of the mode
    refusing = BridgeOptions(fail_closed=True, name=AGENT)
    told = BridgeOptions(fail_closed=fail_closed, name=AGENT)

    def wait_of(event: str) -> float:
        """How long the CLI is to wait for ``event``'s callback, by the hooks registered now: an
        approval holds the call until a person answers, and a CLI that gave up first refused
        the call whatever the person then answered (read as the SDK starts the CLI, in the
        application's operation: its approvals count too)."""
        if event not in APPROVAL_EVENTS:
            return timeout_s
        registry = oh.engine.registry
        outer = enclosing_operation()
        scoped = registry.hooks(operation_id=outer) if outer is not None else []
        approvals = longest_approval_of([*registry.hooks(), *scoped])
        return max(timeout_s, covering_timeout(approvals)) if approvals else timeout_s

    def handle(payload: dict[str, Any]) -> HookResponse:
        # the hooks this event meets: the global ones, the application's operation's and the
        # open turn's (read on this thread: the event loop never waits for the session file)
        outer = enclosing_operation()
        registry = oh.engine.registry
        # the turn is read only when an operation has hooks of its own: with none (the common
        # case), no scope of a turn can hold any
        scoped = outer is not None or registry.operation_ids()
        session = str(payload.get("session_id") or "unknown-session")
        turn = sessions.peek_operation(session) if scoped else None
        scopes = tuple(s for s in (outer, turn.operation_id if turn else None) if s is not None)
        refused = delivery.refusal(scopes)
        if outer is None:  # an operation the SDK should run in may be open where it cannot see
            delivery.unseen(sessions.turn_ids)
        elif not registry.has_own(outer):  # ended, or given no hooks
            delivery.ended(current_operation())
        name = payload["hook_event_name"]
        if refused is None and outer is not None and turn is None and name not in _IN_TURN:
            refused = delivery.outside_turn(name, outer)
        if refused is not None:
            raise _Refused(refused)
        try:
            return bridge.handle(payload)
        except Exception as exc:
            if not fail_closed or payload["hook_event_name"] != "PreToolUse":
                raise  # logged by the callback
            _log.exception("the Claude Agent SDK bridge failed", hook_event="PreToolUse")
            return _refusal("PreToolUse", f"{type(exc).__name__}: {exc}", refusing)
        finally:
            sessions.release_ended()  # the turns this event ended: their observers are matched

    witness = PreToolUseWitness()  # a call that ran past the guard callback says so
    closed: list[bool] = []  # once close() ran, every event is answered as a failure

    def late(event: str, payload: dict[str, Any], exc: Late, wait_s: float) -> HookResponse:
        """The CLI refuses a call (or blocks a prompt) whose callback it stopped waiting for:
        answered just before, with the reason, and logged. Any other event is answered as the
        bridge daemon answers it late (its deciding hooks' block, a ``PostToolUse``'s output
        withheld: the CLI would hand the model the output no redaction saw)."""
        problem = str(exc) if exc.reason == "deadline" else f"no answer: {exc}"
        _log.error(
            "a Claude Agent SDK hook event answered as a failure", hook_event=event, problem=problem
        )
        if event in _DENIABLE:
            # a deny whatever the flag (the CLI refuses it anyway), claiming no mode not on
            return _refusal("PreToolUse", problem, told, closed=True)
        if event in APPROVAL_EVENTS:
            return closed_answer(event, f"otelhooks: {problem}", payload)
        try:
            deciding = bridge.hooks_now(payload, late=True)
        except Exception:  # the hooks cannot be told: any may have been to decide it
            _log.exception("hooks_for could not tell which hooks decide a late event")
            deciding = None
        return late_refusal(event, problem, told, deciding, payload, exc.had_s(wait_s))

    matchers: dict[str, WaitingMatcher] = {}

    def callback_for(event: str) -> Any:
        async def callback(input_data: Any, tool_use_id: str | None, context: Any) -> Any:
            try:
                return await answer(input_data, tool_use_id)
            except Exception as exc:
                # anything that fails before the bridge answers (an input that is no JSON
                # object, say): a callback that raises lets the CLI run the call
                _log.exception("the Claude Agent SDK bridge failed", hook_event=event)
                if not fail_closed or event not in _DENIABLE:
                    raise
                problem = f"{type(exc).__name__}: {exc}"
                return sdk_output(event, _refusal("PreToolUse", problem, refusing))

        async def answer(input_data: Any, tool_use_id: str | None) -> Any:
            # what the CLI was told as the SDK started it (hooks registered since count from
            # the next start); answered before it stops waiting, with a refusal that says why
            matcher = matchers[event]
            given = matcher.told_here()
            if given is None:  # the SDK read it elsewhere: the last start's
                given = matcher.given
            wait_s = given if given is not None else wait_of(event)
            answer_s = wait_s - min(1.0, wait_s / 4)
            # the CLI's JSON may hold lone surrogates (\ud800 escapes): no file or span takes them
            payload = whole_characters(dict(input_data))
            payload.setdefault("hook_event_name", event)
            # a skill's inline command meets the guards of its shell tool, as under the CLI
            payload = as_tool_call(payload)
            if tool_use_id and not payload.get("tool_use_id"):
                payload["tool_use_id"] = tool_use_id
            unguarded = witness.note(payload)
            if unguarded:
                _log.error(unguarded, hook_event=event)
            # the callback's context: the application's operation the SDK runs inside
            run = partial(contextvars.copy_context().run, handle, payload)
            try:
                if closed:
                    raise Late("closed", "hooks_for was closed", 0.0)
                key = str(payload.get("session_id") or "")
                response = await runner.run(key, run, timeout_s=answer_s)
            except Late as exc:  # past its deadline, or too many events wait
                response = late(event, payload, exc, answer_s)
            except _Refused as exc:  # a guard it would meet never runs: the run stops
                _log.error(str(exc), hook_event=event)
                return refusal_output(event, str(exc), payload)
            output = sdk_output(event, response)
            specific = output.get("hookSpecificOutput")
            rewrite = specific.get("updatedInput") if isinstance(specific, dict) else None
            use_id = str(payload.get("tool_use_id") or "")
            if payload["hook_event_name"] == "PreToolUse" and use_id and rewrite is not None:
                witness.judged(use_id, rewrite)  # the arguments the guards left
            if unguarded:  # where the application sees it: the SDK's messages
                shown = output.get("systemMessage")
                output["systemMessage"] = f"{shown}\n{unguarded}" if shown else unguarded
                if fail_closed:  # that call ran; no more run unguarded: the run stops
                    output.update(continue_=False, stopReason=unguarded)
            return output

        return callback

    def close() -> None:
        if closed:
            return
        closed.append(True)
        runner.close()  # the events under way end first
        for session in sessions.held_sessions():
            end = {"hook_event_name": "SessionEnd", "session_id": session, "reason": "closed"}
            try:
                bridge.handle(end)
            except Exception:
                _log.exception("hooks_for could not end a session")
        sessions.close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def matcher_for(event: str) -> WaitingMatcher:
        blocks: dict[str, Any] = {}
        if fail_closed and event in BLOCK_ON_FAILURE_EVENTS:
            # as install --fail-closed writes it: a callback that fails (raises, or answers
            # nothing the CLI takes) blocks what it was to check; the CLI counts it as no
            # decision otherwise, and a prompt the bridge failed on reached the model
            blocks["on_failure"] = "block"
        matchers[event] = WaitingMatcher(
            matcher="*" if event in _TOOL_EVENTS else None,
            hooks=[callback_for(event)],
            wait=partial(wait_of, event),
            **blocks,
        )
        return matchers[event]

    made: dict[str, list[HookMatcher]] = {event: [matcher_for(event)] for event in SDK_EVENTS}
    return SdkHooks(made, close)
