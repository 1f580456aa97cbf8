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

What the output tells the dispatcher (Claude Code hooks reference, "Exit code output", "Other
exit codes", "JSON output"), as the handler return protocol:

- A stdout that starts with ``{`` and is a valid JSON object is read on **every** exit code and
  decides on its own (a deny printed before ``exit 1`` denies); stdout is trimmed as Claude Code
  trims it, a byte-order mark included (:func:`trimmed`). On ``before_tool_call``
  ``hookSpecificOutput.permissionDecision`` decides: ``deny`` blocks with
  ``permissionDecisionReason``; ``allow`` lets the call run and applies ``updatedInput`` as the
  new arguments; ``ask`` and ``defer`` also keep the call from running (otelhooks cannot ask a
  person from inside a hook chain, and has no paused run to resume later), with a reason that
  says which. On any intercept event ``{"decision": "block", "reason": ...}`` blocks (over a
  ``permissionDecision`` other than ``deny``, as in Claude Code), and
  ``{"continue": false, "stopReason": ...}`` blocks whatever else the answer says. Stdout that
  starts with ``{`` but is not valid JSON is plain text, which decides nothing, unless it names
  an answer field: a broken answer is read as one cut at the cap is (:func:`read_answer`).
- A deny no agent would read but whose intent is plain denies, its reason saying where it was
  read from (:func:`read_answer`): inside a JSON array, as a JSON string, spelled ``"Block"``,
  ``"DENY"`` or ``"continue": "false"``, or on stderr with nothing on stdout (where only Gemini
  CLI reads it); any other answer of that kind is a failure, never a silent allow.
- Gemini CLI's own answers are read too, as a guard written from its reference prints them:
  ``{"decision": "deny"}`` blocks as ``block`` does (``allow`` is ``approve``), and
  ``hookSpecificOutput.tool_input`` is merged into the tool's arguments, as Gemini CLI merges
  it. Read as schema errors, they let the call run.
- A JSON object that breaks Claude Code's output schema (a field of the wrong type, a
  ``decision`` other than ``approve``/``block``/``allow``/``deny``, an unknown
  ``permissionDecision``) is a non-blocking error: a :class:`~otelhooks.HookError`, never a
  silent allow, never a deny.
- exit 0 without a decision: success. exit 2: block (intercept events; on observed events it
  decides nothing here, and a coding-agent bridge passes it on to its CLI); the reason is the
  JSON's (``permissionDecisionReason``, ``reason``, ``stopReason``) when stdout is a JSON object
  that gives one, stderr otherwise.
- A deny (block, ask, defer) printed before the command timed out stands: it decided, then hung
  on something else. Its allow does not.
- any other exit whose output decides nothing, a signal, a timeout, a process that cannot start:
  a :class:`~otelhooks.HookError`, which the dispatcher records (span attribute
  ``otelhooks.hook.errors``, ``otelhooks.hook.invocations{outcome=error|timeout}``, a
  ``command hook failed`` log line) and then follows the hook's ``on_error`` policy
  (``continue`` by default).

When several command hooks of one ``before_tool_call`` disagree, Claude Code's precedence holds:
deny > defer > ask > allow (see :mod:`otelhooks._dispatch._chain`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import structlog

from otelhooks._actions._command_env import (
    excerpt,
    hook_environment,
    inherited_environment,
    stdin_document,
    to_json,
)
from otelhooks._actions._command_output import (
    BLOCKING,
    BROKEN_NOTE,
    LINES_NOTE,
    OUTPUT_CAP_BYTES,
    REASON_CAP_CHARS,
    Answer,
    cut_reason,
    read_answer,
    schema_problem,
    stderr_answer,
    trimmed,
)
from otelhooks._actions._command_process import exchange, kill_group, spawn, terminate
from otelhooks._actions._notes import note
from otelhooks._errors import ConfigError, HookError, HookTimeoutError
from otelhooks._events import EVENTS, HookEvent, ToolCallEvent
from otelhooks._hooks import Block
from otelhooks._redact import scrub

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = [
    "MAX_CLAUDE_COMMAND_TIMEOUT_S",
    "MAX_COMMAND_TIMEOUT_S",
    "OUTPUT_CAP_BYTES",
    "REASON_CAP_CHARS",
    "CommandAction",
    "CommandBlock",
    "CommandDecision",
    "CommandOutcome",
    "cut_reason",
]

MAX_COMMAND_TIMEOUT_S: Final = 30.0
# Claude Code's settings give command hooks 600 s by default: hooks in its dialect keep its limit.
MAX_CLAUDE_COMMAND_TIMEOUT_S: Final = 600.0

Decision = Literal["allow", "deny", "ask", "defer"]
_DECISIONS: Final = ("allow", "deny", "ask", "defer")

_log = structlog.get_logger("otelhooks")


class CommandBlock(Block):
    """A block that came from a command's decision; ``decision`` ranks it (deny > defer > ask)."""

    __slots__ = ("decision",)

    def __init__(self, reason: str | None, *, decision: Decision = "deny") -> None:
        super().__init__(reason)
        self.decision = decision

    def __repr__(self) -> str:
        return f"CommandBlock({self.reason!r}, decision={self.decision!r})"


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What one run of a command did (a value, never an exception).

    Attributes:
        exit_code: the exit status; ``None`` when it was killed at its timeout or never started;
            negative when a signal ended it.
        stdout, stderr: the captured text, at most :data:`OUTPUT_CAP_BYTES` bytes each.
        stdout_bytes, stderr_bytes: how many bytes the process wrote in all.
        timed_out: killed (with its process group) at the timeout.
        start_error: why the process could not be started.
        duration_s: wall time.
        pid: the process id (also its process group id).
    """

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    timed_out: bool = False
    start_error: str | None = None
    duration_s: float = 0.0
    pid: int | None = None

    @property
    def truncated(self) -> bool:
        """Some output went past the cap and was dropped."""
        return self.stdout_bytes > OUTPUT_CAP_BYTES or self.stderr_bytes > OUTPUT_CAP_BYTES


@dataclass(frozen=True, slots=True)
class CommandDecision:
    """How the dispatcher reads an outcome: ``result`` follows the handler return protocol.

    ``problem`` is set for a failure (non-blocking unless ``on_error: block``); ``decision`` is the
    Claude-style permission decision, when the command gave one (``deny`` for an exit 2 block).
    """

    result: Any = None
    decision: Decision | None = None
    reason: str | None = None
    problem: str | None = None
    updated_input: dict[str, Any] | None = None


class CommandAction:
    """Runs the hook's command as a process (see the module docstring for every rule).

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
        started = time.monotonic()
        deadline = started + self.timeout
        try:
            proc = spawn(self.argv(), env)
        except (OSError, ValueError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return CommandOutcome(
                exit_code=None,
                start_error=f"cannot start {self.argv()[0]!r}: {problem}",
                duration_s=time.monotonic() - started,
            )
        timed_out = True
        try:
            talk = exchange(proc, data, deadline)
            timed_out = talk.timed_out
            out, err = talk.out, talk.err
        finally:
            # Ended before it is reaped, so the group id cannot have been reused; whatever it
            # started goes with it, whether it exited or timed out.
            if timed_out:
                terminate(proc)
            else:
                kill_group(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            proc.wait()  # reap: no zombie of ours
        return CommandOutcome(
            exit_code=None if timed_out else proc.returncode,
            stdout=out.kept.decode("utf-8", "replace"),
            stderr=err.kept.decode("utf-8", "replace"),
            stdout_bytes=out.seen,
            stderr_bytes=err.seen,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            pid=proc.pid,
        )

    def interpret(self, outcome: CommandOutcome, payload: HookEvent) -> CommandDecision:
        """Read an outcome by Claude Code's rules (see the module docstring)."""
        if outcome.start_error is not None:
            return CommandDecision(problem=outcome.start_error)
        if outcome.timed_out:
            late = self._said_in_time(outcome, payload)
            if late is not None:
                return late
            return CommandDecision(problem=f"timed out after {self.timeout:g}s; process killed")
        code = outcome.exit_code
        assert code is not None
        intercept = EVENTS[payload.event].intercept
        text = trimmed(outcome.stdout)
        answer = read_answer(text, outcome.stdout_bytes)
        if answer is None and not text and code != 2 and outcome.stdout_bytes <= OUTPUT_CAP_BYTES:
            answer = stderr_answer(outcome.stdout, outcome.stderr)
        if code == 2:
            return self._exit_two(outcome, answer, payload, intercept=intercept)
        if not text and outcome.stdout_bytes > OUTPUT_CAP_BYTES:
            # Only white space was kept: an answer after it (Claude Code reads all of stdout)
            # is unknown here, so the command failed to answer rather than allowed.
            return CommandDecision(
                problem=f"wrote {outcome.stdout_bytes} bytes of stdout, the first "
                f"{OUTPUT_CAP_BYTES} white space: any answer after them was not read"
            )
        if answer is not None:
            verdict = self._read(answer, payload, intercept=intercept)
            # A JSON object decides on its own, whatever the exit code (exit 1 included); one
            # that decides nothing leaves a failing exit code to be reported below.
            if code == 0 or verdict.problem is not None or verdict.decision is not None:
                return verdict
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
            # stderr says why; without it, what it printed (Gemini CLI denies with that text
            # on an exit over 1, where Claude Code and Codex CLI take it for a failure)
            detail = outcome.stderr.strip() or (f"stdout: {text}" if text else "")
            return CommandDecision(problem=f"{how}: {excerpt(detail)}" if detail else how)
        return CommandDecision(result=payload)

    def _said_in_time(self, outcome: CommandOutcome, payload: HookEvent) -> CommandDecision | None:
        """The deny (block, ask, defer) a command printed before it timed out: it decided, then
        hung on something else (an audit call that does not answer), and the deny stands.
        Its allow does not: the command did not finish, and what it still had to say is
        unknown. None when it printed no such answer."""
        if not EVENTS[payload.event].intercept:
            return None
        answer = read_answer(trimmed(outcome.stdout), outcome.stdout_bytes)
        if answer is None or not answer.blocks:
            return None
        verdict = self._read(answer, payload, intercept=True)
        if not isinstance(verdict.result, CommandBlock):
            return None
        said = verdict.reason or f"Blocked by hook {self.hook.id}."
        reason = f"{said} [otelhooks: printed before the hook timed out after {self.timeout:g}s]"
        block = CommandBlock(reason, decision=verdict.result.decision)
        return CommandDecision(result=block, decision=block.decision, reason=reason)

    def _exit_two(
        self,
        outcome: CommandOutcome,
        answer: Answer | None,
        payload: HookEvent,
        *,
        intercept: bool,
    ) -> CommandDecision:
        """Exit 2 blocks; the reason is the JSON's when it gives one, stderr otherwise."""
        if not intercept:
            return CommandDecision(result=payload)
        reason = answer.reason() if answer is not None else None
        if reason is not None:
            reason = cut_reason(reason, total_bytes=answer.cut_at if answer else None)
        else:
            reason = outcome.stderr.strip() or None
            if outcome.stderr_bytes > OUTPUT_CAP_BYTES or (
                reason and len(reason) > REASON_CAP_CHARS
            ):
                cut = outcome.stderr_bytes if outcome.stderr_bytes > OUTPUT_CAP_BYTES else None
                reason = cut_reason(reason or "", total_bytes=cut)
        return CommandDecision(
            result=CommandBlock(reason, decision="deny"), decision="deny", reason=reason
        )

    def _read(self, answer: Answer, payload: HookEvent, *, intercept: bool) -> CommandDecision:
        """What a JSON object on stdout decides (a schema-invalid one is a failure)."""
        if not answer.whole:
            return self._decide_cut(answer, payload, intercept=intercept)
        problem = schema_problem(answer.fields)
        if problem is not None:
            return CommandDecision(
                problem=f"JSON output is not Claude Code's hook output: {problem}"
            )
        if not intercept:
            return CommandDecision(result=payload)
        return self._decide(answer.fields, payload)

    def _decide_cut(
        self, answer: Answer, payload: HookEvent, *, intercept: bool
    ) -> CommandDecision:
        """Decide on a JSON answer cut at the cap or broken: a deny (or block, ask, defer) still
        holds; anything else it says is a failure (an observer's broken answer too: said)."""
        total = answer.cut_at
        if answer.broken is not None and (not intercept or not answer.blocks):
            if answer.note in (BROKEN_NOTE, LINES_NOTE):
                return CommandDecision(
                    problem=f"stdout starts with '{{' and names an answer field, but does not "
                    f"parse ({answer.broken}): no decision but a deny, ask or defer is taken "
                    "from it"
                )
            return CommandDecision(
                problem=f"the answer is not one the agent reads ({answer.broken}): no decision "
                "but a deny, ask or defer is taken from it"
            )
        if not intercept:
            return CommandDecision(result=payload)
        specific = answer.fields.get("hookSpecificOutput")
        allows = isinstance(specific, dict) and specific.get("permissionDecision") == "allow"
        if not answer.readable or allows:
            return CommandDecision(
                problem=f"JSON output of {total} bytes is over the {OUTPUT_CAP_BYTES}-byte cap "
                "and gives no decision that can be taken from its first part"
            )
        verdict = self._decide(answer.fields, payload)
        if answer.broken is not None or verdict.reason is not None or verdict.decision is not None:
            if answer.broken is not None:
                reason = verdict.reason or f"Blocked by hook {self.hook.id}.{answer.note}"
            else:
                reason = cut_reason(verdict.reason or "", total_bytes=total) or ""
            block = CommandBlock(reason, decision=verdict.decision or "deny")
            return CommandDecision(result=block, decision=block.decision, reason=reason)
        return verdict

    def _decide(self, answer: dict[str, Any], payload: HookEvent) -> CommandDecision:
        specific = answer.get("hookSpecificOutput")
        is_tool_call = isinstance(payload, ToolCallEvent)
        if answer.get("continue") is False:
            # Claude Code: `continue: false` stops everything and wins over any decision.
            reason = answer.get("stopReason")
            reason = cut_reason(reason) if isinstance(reason, str) and reason else None
            return CommandDecision(
                result=CommandBlock(reason, decision="deny"), decision="deny", reason=reason
            )
        blocks = answer.get("decision") in BLOCKING
        if is_tool_call and isinstance(specific, dict) and "permissionDecision" in specific:
            verdict = self._permission(specific, payload)
            # Claude Code: a top-level block stands over any permissionDecision but a deny
            # (whose reason it shows), an allow with updatedInput included.
            if not blocks or verdict.decision == "deny":
                return verdict
        if is_tool_call and answer.get("decision") == "ask" and not blocks:
            # Gemini CLI's ask (its reference's `decision: "ask"`), as permissionDecision's
            reason = answer.get("reason")
            return self._permission(
                {"permissionDecision": "ask", "permissionDecisionReason": reason}, payload
            )
        if blocks:
            reason = answer.get("reason")
            reason = cut_reason(reason) if isinstance(reason, str) and reason else None
            return CommandDecision(
                result=CommandBlock(reason, decision="deny"), decision="deny", reason=reason
            )
        rewrite = specific.get("tool_input") if isinstance(specific, dict) else None
        if isinstance(payload, ToolCallEvent) and isinstance(rewrite, dict):
            # Gemini CLI's rewrite of a tool's arguments, merged into them as Gemini CLI does
            updated = {**payload.args, **rewrite}
            return CommandDecision(
                result={"args": updated}, decision="allow", updated_input=updated
            )
        return CommandDecision(result=payload)

    def _permission(self, specific: dict[str, Any], payload: HookEvent) -> CommandDecision:
        decision = specific.get("permissionDecision")
        if decision not in _DECISIONS:
            return CommandDecision(
                problem=f"permissionDecision must be one of {', '.join(_DECISIONS)}, "
                f"not {decision!r}"
            )
        reason = specific.get("permissionDecisionReason")
        reason = cut_reason(reason) if isinstance(reason, str) and reason else None
        updated = specific.get("updatedInput")
        if updated is not None and not isinstance(updated, dict):
            return CommandDecision(problem="updatedInput must be a JSON object")
        if decision == "allow":
            result: Any = {"args": updated} if updated is not None else payload
            return CommandDecision(
                result=result, decision="allow", reason=reason, updated_input=updated
            )
        if decision == "ask":
            reason = reason or f"Hook {self.hook.id} asks for confirmation before this tool call."
        elif decision == "defer":
            reason = reason or f"Hook {self.hook.id} deferred the decision on this tool call."
        return CommandDecision(
            result=CommandBlock(reason, decision=decision), decision=decision, reason=reason
        )

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
