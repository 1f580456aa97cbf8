"""One hook input in, the agent's answer out: :func:`run_hook`, the bridge's single entry point.

``otelhooks claude-code`` (``codex``, ``gemini``) calls it with stdin; an HTTP route (Claude
Code's ``http`` hooks) can call it with the request body and answer with the result: ``stdout``
is the JSON body, and an ``exit_code`` of 2 is a block whose reason is ``stderr``.

Problems of the bridge itself (input that is not JSON, a hooks file that does not load, a state
file that cannot be written) answer as each CLI expects from a failing hook: exit 1, the
problem on stderr (``otelhooks codex: ...``), a *non-blocking* error (the CLI shows it and goes
on). With ``fail_closed`` a ``PreToolUse`` (or an input whose event cannot be read) answers
*deny* with the problem as the reason instead, so a guard that cannot run never looks like "no
objection"; its stderr names the CLI all the same.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import structlog
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._actions._command_env import event_environment
from otelhooks._env_seconds import BRIDGE_LEAST_S, seconds_setting
from otelhooks._errors import ConfigError
from otelhooks._export._otlp import summarise_sdk_logs
from otelhooks._export._report import DeliveryTracker, shutdown_timeout
from otelhooks.integrations.coding_agents._common import AGENT, DenyMode, HookResponse
from otelhooks.integrations.coding_agents._environment import (
    approval_tokens,
    export_files,
    export_settings,
    otlp_exporter,
    project_path,
)
from otelhooks.integrations.coding_agents._input import InputProblem, parse_input
from otelhooks.integrations.coding_agents._state import DEFAULT_STATE_PATH, STATE_ENV, env_value
from otelhooks.integrations.coding_agents._unheard import unheard

__all__ = ["HOOKS_ENV", "TRACES_ENV", "AnswerClock", "BridgeOptions", "run_hook"]

# Claude Code waits for the hook process (``SessionEnd`` hooks get 1.5 s in all): a dead
# endpoint is given up on at once, a silent one within this (``$OTELHOOKS_SHUTDOWN_TIMEOUT``).
BRIDGE_SHUTDOWN_TIMEOUT_S = 1.0
# ``install`` gives a hook command 30 s: the bridge answers by 25, leaving the client its time
DEFAULT_ANSWER_S = 25.0
ANSWER_ENV = "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S"
HOOKS_ENV = "OTELHOOKS_HOOKS"
TRACES_ENV = "OTELHOOKS_TRACES_OUT"
EXPORT_ENV = "OTELHOOKS_EXPORT_ENV"
_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

_log = structlog.get_logger("otelhooks")


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    """How the bridge runs (the flags of ``otelhooks claude-code``, ``codex`` and ``gemini``).

    Attributes:
        hooks: hook config files or folders (``$OTELHOOKS_HOOKS`` adds more).
        traces_out: OTLP JSON lines file (default ``$OTELHOOKS_TRACES_OUT``).
        state: the state file (default ``$OTELHOOKS_BRIDGE_STATE``, then
            ``~/.otelhooks/claude-code.sqlite3``).
        export_env: the export file (default ``otelhooks.env`` next to the hooks).
        deny_mode: ``json`` (``permissionDecision``) or ``exit2``.
        fail_closed: answer ``PreToolUse`` with a deny when the bridge itself fails, or (Codex
            CLI, Gemini CLI) when a guard of the call failed (its answer unreadable, a crash).
        service_name: ``service.name`` of the spans.
        dialect: the CLI whose hook schema the input and answer are in (``claude-code``,
            ``codex``, ``gemini``: :mod:`otelhooks.integrations.coding_agents`).
        hook_timeout: the seconds the CLI gives this hook before it ends it (``--hook-timeout``,
            which ``install`` writes beside the entry's ``timeout``); the bridge answers before
            that, a block when its guards had more time (``None``: not known).
        name: who the bridge's own failure messages name (``otelhooks {name}: ...``; ``None``:
            the dialect). The Claude Agent SDK adapter speaks Claude Code's dialect under its
            own name.

    Example:
        >>> BridgeOptions(hooks=(".claude/otelhooks.yaml",), fail_closed=True).fail_closed
        True
    """

    hooks: Sequence[str] = ()
    traces_out: str | None = None
    state: str | None = None
    export_env: str | None = None
    deny_mode: DenyMode = "json"
    fail_closed: bool = False
    service_name: str = AGENT
    extra_exporters: Sequence[SpanExporter] = field(default_factory=tuple)
    dialect: str = "claude-code"
    hook_timeout: float | None = None
    name: str | None = None


class AnswerClock(Protocol):
    """The clock of a hook process's one answer
    (:class:`~otelhooks.integrations.coding_agents._one_process.Deadline`), told what the hooks
    deciding the event allow it."""

    def allow_approvals(self, hooks: Sequence[Any]) -> None:
        """Longer, for an approval hook that waits for a person."""

    def decided_by(self, hooks: Sequence[Any] | None) -> None:
        """The hooks that decide the event (their ``on_error`` shapes the late answer)."""

    def gone(self) -> bool:
        """Whether the hook client waiting for the answer is gone (its CLI killed it): the
        answer reaches nobody."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def _refusal(
    event: str | None, problem: str, options: BridgeOptions, *, closed: bool = False
) -> HookResponse:
    """What a bridge problem answers: deny when fail-closed guards this event, else exit 1;
    a deny too when the hooks deciding it close it (``closed``: one blocks when it fails, or
    was cut short), whose reason claims no ``--fail-closed`` the user did not ask for."""
    who = options.name or options.dialect
    if (options.fail_closed or closed) and event in ("PreToolUse", None):
        from otelhooks.integrations.coding_agents._answers import could_not_check

        reason = could_not_check(problem, fail_closed=options.fail_closed)
        if options.deny_mode == "exit2" and event == "PreToolUse":
            return HookResponse(2, stderr=reason)
        decision = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        stdout = json.dumps({"hookSpecificOutput": decision})
        return HookResponse(stdout=stdout, stderr=f"otelhooks {who}: {problem}")
    return HookResponse(1, stderr=f"otelhooks {who}: {problem}")


def late_refusal(
    event: str | None,
    problem: str,
    options: BridgeOptions,
    hooks: Sequence[Any] | None,
    raw: str | bytes | Mapping[str, Any] = b"",
    waited_s: float | None = None,
) -> HookResponse:
    """What an event not answered in time (``waited_s``) answers: a bridge problem's answer
    (:func:`_refusal`); when a hook that was to decide it blocks when it fails, or had more
    time than the bridge could wait
    (:func:`~otelhooks.integrations.coding_agents._answers.late_problem`), ``--fail-closed`` or
    not, that hook's block: a deny, or for another event than ``PreToolUse`` its block
    (:func:`~otelhooks.integrations.coding_agents._answers.closed_answer`, read from ``raw``,
    the event's input)."""
    from otelhooks.integrations.coding_agents._answers import closed_answer, late_problem
    from otelhooks.integrations.coding_agents._guard_time import ASKS_ON_FAILURE

    problem, closed = late_problem(problem, hooks, None if event in ASKS_ON_FAILURE else waited_s)
    if closed and event not in ("PreToolUse", None):
        from otelhooks.integrations.coding_agents._dialects import dialect_named

        dialect = dialect_named(options.dialect)
        try:
            payload = dialect.to_bridge(dict(raw) if isinstance(raw, Mapping) else parse_input(raw))
        except InputProblem:
            payload = {}
        return closed_answer(
            event,
            f"otelhooks: {problem}",
            payload,
            deny_mode=options.deny_mode,
            agent=dialect.agent,
        )
    return _refusal(event, problem, options, closed=closed)


def run_hook(
    raw: str | bytes | Mapping[str, Any],
    options: BridgeOptions,
    *,
    environ: Mapping[str, str] | None = None,
) -> HookResponse:
    """Handle one hook input (JSON text, or the parsed object) and answer it in the dialect's
    format (``options.dialect``: Claude Code, Codex CLI or Gemini CLI).

    Args:
        raw: the hook input as the CLI sends it (stdin of a command hook, body of an
            ``http`` hook).
        options: the bridge's flags.
        environ: the environment to read (``os.environ`` when omitted); relative paths resolve
            against its ``CLAUDE_PROJECT_DIR``.

    Returns:
        exit code, stdout (the CLI's JSON answer, or empty) and stderr.

    Example:
        >>> run_hook('{"hook_event_name": "Stop", "session_id": "s"}', BridgeOptions(
        ...     state="/tmp/cc-doc.sqlite3")).exit_code
        0
    """
    return _run_hook(raw, options, os.environ if environ is None else environ)


def _run_hook(
    raw: str | bytes | Mapping[str, Any],
    options: BridgeOptions,
    env: Mapping[str, str],
    deadline: AnswerClock | None = None,
) -> HookResponse:
    """:func:`run_hook`, in the dialect's own words: every answer goes through here."""
    from otelhooks.integrations.coding_agents._dialects import dialect_named

    response = _bridge_answer(raw, options, env, deadline)
    with event_environment(env):  # the answer's form may depend on the hook's environment
        return dialect_named(options.dialect).answer(response)


def _bridge_answer(
    raw: str | bytes | Mapping[str, Any],
    options: BridgeOptions,
    env: Mapping[str, str],
    deadline: AnswerClock | None,
) -> HookResponse:
    """The answer in the bridge's own (Claude Code's) words."""
    from otelhooks.integrations.coding_agents._dialects import dialect_named

    dialect = dialect_named(options.dialect)
    if isinstance(raw, Mapping):
        payload = dict(raw)
    else:
        try:
            payload = parse_input(raw)
        except InputProblem as exc:
            return _refusal(dialect.event_of(raw), str(exc), options)
    payload = dialect.to_bridge(payload)
    name = payload.get("hook_event_name")
    event = name if isinstance(name, str) else None
    try:
        return _handle(payload, options, env, deadline)
    except ConfigError as exc:
        return _refusal(event, str(exc), options)
    except Exception as exc:
        _log.exception(f"the {dialect.display_name} bridge failed", hook_event=event)
        return _refusal(event, f"{type(exc).__name__}: {exc}", options)


def answer_seconds(env: Mapping[str, str]) -> float:
    """How long a hook event may take before it is answered as a failure
    (``$OTELHOOKS_BRIDGE_DAEMON_ANSWER_S``, default 25 s, at least 1 s)."""
    return answer_time(env)[0]


def answer_time(env: Mapping[str, str]) -> tuple[float, bool]:
    """:func:`answer_seconds`, and whether it is set outright (a valid
    ``$OTELHOOKS_BRIDGE_DAEMON_ANSWER_S``, though raised to its least): a time set is the time,
    whatever the guards' timeouts; the default is only the least
    (:func:`~._guard_time.event_wait`)."""
    return seconds_setting(
        env_value(env, ANSWER_ENV), ANSWER_ENV, DEFAULT_ANSWER_S, least=BRIDGE_LEAST_S
    )


def answer_limit(options: BridgeOptions) -> float | None:
    """The most the bridge may take for an event: the CLI's timeout for the hook
    (``options.hook_timeout``) less the margin the answer needs to reach it."""
    from otelhooks.integrations.coding_agents._guard_time import MARGIN_S

    if options.hook_timeout is None:
        return None
    return max(1.0, options.hook_timeout - MARGIN_S)


def env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """The seconds the variable ``name`` of ``env`` gives, else ``default``, by the one rule
    for such a variable (:func:`~otelhooks._env_seconds.seconds_setting`): an invalid value is
    logged and ``default`` used (a typo in a tuning variable must not turn every guard's answer
    into a failure), one under 1 s logged and 1 s used."""
    return seconds_setting(env_value(env, name), name, default, least=BRIDGE_LEAST_S)[0]


def hooks_and_settings(
    options: BridgeOptions, env: Mapping[str, str]
) -> tuple[list[Path], dict[str, str], list[Path]]:
    """The hook files that apply, the export settings (the export file's values under the
    process's own variables) and the export files they were read from (:func:`export_files`),
    relative paths resolved against ``$CLAUDE_PROJECT_DIR``."""
    listed = [*options.hooks, *(p for p in env.get(HOOKS_ENV, "").split(os.pathsep) if p)]
    hook_paths = [project_path(p, env) for p in listed]
    explicit = options.export_env or env.get(EXPORT_ENV)
    explicit_path = project_path(explicit, env) if explicit else None
    settings = export_settings(hook_paths, explicit_path, env)
    read = export_files(hook_paths, explicit_path)
    # the export file may name more hooks (it is read for OTELHOOKS_* too)
    if HOOKS_ENV not in env and settings.get(HOOKS_ENV):
        hook_paths += [project_path(p, env) for p in settings[HOOKS_ENV].split(os.pathsep) if p]
    return hook_paths, settings, read


def _handle(
    payload: dict[str, Any],
    options: BridgeOptions,
    env: Mapping[str, str],
    deadline: AnswerClock | None = None,
) -> HookResponse:
    from otelhooks._config import load_config
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
    from otelhooks.integrations.coding_agents._spans import LockedFileExporter
    from otelhooks.integrations.coding_agents._state import BridgeState

    hook_paths, settings, read = hooks_and_settings(options, env)
    hooks = load_config(hook_paths).hooks
    approval_tokens(hooks, read, env)
    if deadline is not None:
        deadline.allow_approvals(hooks)
    timeout_s = shutdown_timeout(BRIDGE_SHUTDOWN_TIMEOUT_S)
    exporters: list[SpanExporter] = list(options.extra_exporters)
    traces_out = options.traces_out or settings.get(TRACES_ENV)
    file_tracker: DeliveryTracker | None = None
    if traces_out:
        # Its lock is waited for as long as a destination of a hook process (1 s by default):
        # far above an append (under a millisecond), far below the 25 s answer time, within
        # the 1.5 s of SessionEnd hooks. Past it, or when the file cannot be written, the spans
        # are lost and reported after the guard's answer, never instead of it.
        path = os.path.abspath(project_path(traces_out, env))
        file_tracker = DeliveryTracker("spans", path)
        locked = LockedFileExporter(  # its failures are the report line's, below
            OtlpJsonLinesSpanExporter(path), f"{path}.lock", wait_s=timeout_s, log_failures=False
        )
        exporters.append(_Counted(locked, file_tracker))
    tracker = DeliveryTracker("spans", "", fail_fast=True, request_timeout_s=timeout_s)
    otlp = otlp_exporter(settings, tracker)
    if otlp is not None:
        summarise_sdk_logs(math.inf)  # the report line says it once; no retry lines
        exporters.append(_Counted(otlp, tracker))
    state_path = options.state or env_value(settings, STATE_ENV)
    from otelhooks.integrations.coding_agents._dialects import dialect_named
    from otelhooks.integrations.coding_agents._mapping import project_dir

    dialect = dialect_named(options.dialect)
    # the environment given decides, not the process's own (an HTTP route passes its own)
    state = BridgeState(project_path(state_path or DEFAULT_STATE_PATH, env))
    bridge = CodingAgentBridge(
        agent=dialect.agent,
        provider=dialect.provider,
        hooks=hooks,
        state=state,
        exporters=exporters,
        deny_mode=options.deny_mode,
        service_name=settings.get("OTEL_SERVICE_NAME") or options.service_name,
        capture=_truthy(settings.get(_CAPTURE_ENV)),
        shutdown_timeout_s=timeout_s,
        fail_fast=True,
        project_dir=project_dir(env),
        fail_closed=options.fail_closed,
    )
    if deadline is not None:
        deadline.decided_by(bridge.hooks_now(payload, late=True))
    response = HookResponse(1, stderr=f"otelhooks {dialect.name}: the bridge did not answer")
    try:
        response = bridge.handle(payload)
        if deadline is not None and deadline.gone():  # said before the counts are exported
            event, use = payload.get("hook_event_name"), payload.get("tool_use_id")
            unheard(
                bridge.engine.metrics.drop_counter("claude_code_hooks"),
                event if isinstance(event, str) else None,
                use if isinstance(use, str) else None,
                response,
            )
    finally:
        failed: list[str] = []
        try:
            delivery = list(bridge.close())
            if otlp is not None:
                delivery.insert(0, tracker.report())
            if file_tracker is not None:
                delivery.insert(0, file_tracker.report())
            # Only what went wrong: the CLI shows a hook's stderr to the user.
            failed = [f"otelhooks {dialect.name}: {d.line()}" for d in delivery if not d.ok]
        except Exception:
            # an export that fails after the decision must not turn a deny into exit 1
            _log.exception(f"the {dialect.display_name} bridge: closing failed")
        state.close()
    if failed:
        stderr = "\n".join([response.stderr, *failed] if response.stderr else failed)
        response = HookResponse(response.exit_code, response.stdout, stderr)
    return response


class _Counted(SpanExporter):
    """``inner`` with every span it is given, and accepts, counted on ``tracker`` (a wrapper:
    the exporter itself is left as it was made)."""

    def __init__(self, inner: SpanExporter, tracker: DeliveryTracker) -> None:
        self.inner = inner
        self.tracker = tracker

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.tracker.sent(len(spans))
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.tracker.accepted(len(spans))  # what the answer rejected is failed
        else:
            self.tracker.failed(len(spans), getattr(self.inner, "last_error", None))
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()
