"""Command hooks: a real process per invocation, as in the workspace engine and Claude Code.

How a command runs:

- A string command runs through ``/bin/sh -c`` (as the workspace engine's ``exec`` does); a list
  runs without a shell. Payload values never become part of the command line: they travel only in
  ``HOOK_*`` environment variables and on stdin, so ``$(touch pwned)`` in a tool argument stays
  text.
- The process inherits the environment plus the ``HOOK_*`` variables of :func:`hook_environment`
  and gets :func:`stdin_document` (the event JSON plus Claude Code's snake_case fields) on stdin,
  content included whatever the capture switch: it is the user's own code on this machine, and
  both protocols require those fields.
- It runs in its own session, under the reaper of :mod:`._command_process` on Linux: when the
  hook exits, every process it started (``&``, ``nohup``, ``setsid``, double-forked) is killed
  and reaped, and its output is read until it exits, then drained for at most 0.2 s, so a child
  holding stdout open never holds the answer back. At its timeout (10 s by default, 30 s at
  most; 600 s in Claude Code's dialect, as its settings allow) the same happens, and the whole
  group gets ``SIGKILL``; no zombie of ours remains.
- stdout and stderr are read as they come and kept up to :data:`OUTPUT_CAP_BYTES` each (the rest
  is read and counted, never stored); logs show a short excerpt. A block reason is cut to
  :data:`REASON_CAP_CHARS` characters (Claude Code's own cap for hook output in its UI) with
  the marker of :func:`cut_reason`. Output cut at the cap still decides: a JSON answer cut short
  is read for its decision (``permissionDecision``, ``"decision": "block"``) and its reason, so
  a deny longer than the cap still denies; a cut answer that would allow (its ``updatedInput``
  is lost) is a failure, which follows ``on_error``. Known secrets
  (:mod:`otelhooks._redact`) are scrubbed from whatever of it otelhooks writes (log lines, the
  error, a block reason); the process itself may print anything.

What the output tells the dispatcher (a deny, an allow with new arguments, a failure that
follows ``on_error``) is read by Claude Code's rules for hook output in
:mod:`._command_verdict`; the process itself, from its start to its reaping, is
:mod:`._command_process`'s. This module is the hook's action: the command checked when the hook
is built, the event handed to it, and what it decided handed back to the dispatcher.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import structlog

from otelhooks._actions._command_env import (
    excerpt,
    hook_environment,
    inherited_environment,
    stdin_document,
    to_json,
)
from otelhooks._actions._command_output import OUTPUT_CAP_BYTES, REASON_CAP_CHARS, cut_reason
from otelhooks._actions._command_process import CommandOutcome, run_once
from otelhooks._actions._command_verdict import CommandDecision, interpret
from otelhooks._actions._notes import note
from otelhooks._errors import ConfigError, HookError, HookTimeoutError
from otelhooks._events import HookEvent
from otelhooks._redact import scrub

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = [
    "MAX_CLAUDE_COMMAND_TIMEOUT_S",
    "MAX_COMMAND_TIMEOUT_S",
    "OUTPUT_CAP_BYTES",
    "REASON_CAP_CHARS",
    "CommandAction",
    "cut_reason",
]

MAX_COMMAND_TIMEOUT_S: Final = 30.0
# Claude Code's settings give command hooks 600 s by default: hooks in its dialect keep its limit.
MAX_CLAUDE_COMMAND_TIMEOUT_S: Final = 600.0

_log = structlog.get_logger("otelhooks")


class CommandAction:
    """Runs the hook's command as a process (the module docstrings of this module,
    :mod:`._command_process` and :mod:`._command_verdict` give every rule).

    Attributes:
        command: the string (run by ``/bin/sh -c``) or argument list (run directly).
        timeout: seconds before the process group is killed.
        deadline_s: how long the dispatcher waits for the call (the timeout plus a second to
            kill and reap; a timeout is reported as :class:`~otelhooks.HookTimeoutError`).
        workspace_id: ``HOOK_WORKSPACE_ID`` (the workspace loader sets it; else
            ``$OTELHOOKS_WORKSPACE_ID``).
    """

    kind = "command"
    is_async = False
    concurrent = True
    hands_payload = False  # otelhooks' own code reads the payload; it never changes it

    def __init__(self, hook: Hook) -> None:
        command = hook.command
        if isinstance(command, str):
            if not command.strip():
                raise ConfigError("a command hook needs a non-empty command", field="command")
        elif not command or not all(isinstance(a, str) and a for a in command):
            raise ConfigError(
                "a command list needs a program and non-empty string arguments", field="command"
            )
        limit = MAX_CLAUDE_COMMAND_TIMEOUT_S if hook.dialect == "claude" else MAX_COMMAND_TIMEOUT_S
        if hook.timeout > limit:
            raise ConfigError(
                f"a command hook may run at most {limit:g} s, not {hook.timeout:g} s",
                field="timeout",
            )
        self.hook = hook
        self.command: str | list[str] = command
        self.timeout = hook.timeout
        # The dispatcher's deadline is a safety net: the command is killed at its own timeout
        # and reaped before the dispatcher moves on, so nothing runs past the event.
        self.deadline_s = hook.timeout + 1.0
        self.workspace_id: str | None = None

    def __repr__(self) -> str:
        return f"CommandAction({self.command!r}, timeout={self.timeout:g})"

    def argv(self) -> list[str]:
        """What is executed: ``/bin/sh -c COMMAND`` for a string, the list itself otherwise."""
        if isinstance(self.command, str):
            return ["/bin/sh", "-c", self.command]
        return list(self.command)

    def run(self, payload: HookEvent) -> CommandOutcome:
        """Run the command once for ``payload`` and return what happened (never raises)."""
        env = {
            **inherited_environment(),
            **hook_environment(self.hook, payload, workspace_id=self.workspace_id),
        }
        data = to_json(stdin_document(self.hook, payload)).encode("utf-8")
        return run_once(self.argv(), env, data, self.timeout)

    def interpret(self, outcome: CommandOutcome, payload: HookEvent) -> CommandDecision:
        """Read an outcome by Claude Code's rules (:mod:`._command_verdict`)."""
        return interpret(outcome, payload, hook_id=self.hook.id, timeout=self.timeout)

    def __call__(self, payload: HookEvent) -> Any:
        """Run the command and return the handler return protocol (or raise a HookError)."""
        outcome = self.run(payload)
        verdict = self.interpret(outcome, payload)
        note(self.hook.id, (outcome, verdict))  # exit code and output, for `otelhooks hooks test`
        if verdict.problem is not None:
            _log.warning(
                "command hook failed",
                hook_id=self.hook.id,
                lifecycle_event=payload.event,
                problem=scrub(verdict.problem),
                exit_code=outcome.exit_code,
                # scrubbed whole, then shortened: a cut through a secret would leave its
                # prefix, which no longer matches the secret
                stdout=excerpt(scrub(outcome.stdout)),
                stderr=excerpt(scrub(outcome.stderr)),
                output_bytes=outcome.stdout_bytes + outcome.stderr_bytes,
            )
            if outcome.timed_out:
                raise HookTimeoutError(verdict.problem, hook_id=self.hook.id, event=payload.event)
            raise HookError(verdict.problem, hook_id=self.hook.id, event=payload.event)
        if outcome.timed_out:
            _log.warning(
                "command hook timed out after its answer, which stands",
                hook_id=self.hook.id,
                lifecycle_event=payload.event,
                decision=verdict.decision,
            )
        return verdict.result
