"""An event's hooks run now, and their combined answer made the hook process's reply.

:func:`run_hooks` runs the hooks of one event on the agent's thread and collects what each
answered (a command's output, an ``http`` body, a block: :func:`answers_from_notes`);
:func:`combine` (:mod:`._combine`, the combination rule) makes one answer of them; and
:func:`respond` turns that answer into the exit code, stdout and stderr the agent reads
(``--deny-mode exit2``: a deny is exit 2 with the reason on stderr).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from otelhooks._actions._notes import collecting
from otelhooks._config._claude_answer import HookAnswer, block_answer, command_answer
from otelhooks._encoding import jsonable
from otelhooks._engine import HooksEngine
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._events import EVENTS as EVENT_SPECS
from otelhooks._events import HookEvent
from otelhooks._hooks import Block, Hook
from otelhooks._live import Verdict
from otelhooks._redact import scrub
from otelhooks.integrations.coding_agents._agent_limits import output_withheld_by
from otelhooks.integrations.coding_agents._combine import (
    ANSWERING_EVENTS,
    BLOCKING_EVENTS,
    CONTEXT_EVENTS,
    EXIT2_BLOCKING_EVENTS,
    combine,
)
from otelhooks.integrations.coding_agents._common import AGENT, DenyMode, HookResponse, cli_name
from otelhooks.integrations.coding_agents._decisions import decides, denied_by
from otelhooks.integrations.coding_agents._guard_time import cut_short, guards_s
from otelhooks.integrations.coding_agents._shapes import withheld_like

# combine and the event sets are :mod:`._combine`'s, denied_by :mod:`._decisions`' and
# output_withheld_by :mod:`._agent_limits`'; they are named here too because the bridge's
# callers take the whole answer path (run, combine, respond) from this module
__all__ = [
    "ANSWERING_EVENTS",
    "BLOCKING_EVENTS",
    "CONTEXT_EVENTS",
    "answers_from_notes",
    "closed_answer",
    "combine",
    "could_not_check",
    "denied_by",
    "dumps",
    "keep_block",
    "late_problem",
    "output_withheld_by",
    "respond",
    "run_hooks",
    "tell_failures",
]

_log = structlog.get_logger("otelhooks")


def late_problem(
    problem: str, hooks: Iterable[Hook] | None, waited_s: float | None = None
) -> tuple[str, bool]:
    """What a late answer says (``problem``, and the hooks that block when they fail, named) and
    whether it must be a deny: some of ``hooks`` (those that were to decide the event) block
    when they fail (``on_error: block``, enforced), or the bridge waited ``waited_s``, less than
    their own timeouts allow them (:func:`~._guard_time.cut_short`: a limit it could not pass).

    An event not answered in time is such a failure for each of them that had not decided yet:
    hooks run one after another, so slow neighbours can use up the answer time before a hook's
    own timeout, and its block must not become the CLI running the tool. A guard cut short
    never had the time it asked for: nothing says it would not have denied, so its event is
    blocked too, with a reason that says so.

    Example:
        >>> import otelhooks
        >>> policy = {"id": "p", "type": "PreToolUse", "command": "true", "on_error": "block"}
        >>> oh = otelhooks.configure(hooks=[policy], set_global=False, otlp=False)
        >>> late_problem("no answer within 25 s", oh.engine.registry.hooks())
        ('no answer within 25 s (hook p blocks when it fails)', True)
        >>> oh.shutdown().ok
        True
    """
    hooks = list(hooks or ())
    blocking = [h.id for h in hooks if h.error_policy == "block" and h.mode == "enforce"]
    if not blocking:
        short = cut_short(waited_s, hooks) if waited_s is not None else []
        if short:
            need = guards_s(hooks)
            own = "its timeout" if len(short) == 1 else "their timeouts"
            return f"{problem}, hook {', '.join(short)} cut short ({own}: {need:g} s)", True
        return problem, False
    return f"{problem} (hook {', '.join(blocking)} blocks when it fails)", True


def could_not_check(problem: str, *, fail_closed: bool) -> str:
    """The reason of a deny no hook gave (``problem``: what failed): it names ``--fail-closed``
    only when that is on, for a deny a hook's own rule gave (:func:`late_problem`) must not
    claim a mode the user did not ask for.

    Example:
        >>> could_not_check("hook g cut short", fail_closed=False)
        'otelhooks could not check this tool call, so it is blocked: hook g cut short'
    """
    mode = " (fail-closed)" if fail_closed else ", so it is blocked"
    return f"otelhooks could not check this tool call{mode}: {problem}"


def closed_answer(
    event: str,
    reason: str,
    payload: Mapping[str, Any],
    *,
    deny_mode: DenyMode = "json",
    agent: str = AGENT,
) -> HookResponse:
    """The answer of ``event`` (not ``PreToolUse``, whose answer is a deny) when a hook that
    blocks when it fails could not decide it in time (:func:`late_problem`): its block, as its
    failure in time gives it, and a ``PostToolUse``'s output withheld in the tool's own shape
    (the hook may have been its redaction: the output must not reach the model unchecked).

    Example:
        >>> answer = closed_answer("PostToolUse", "late", {"tool_response": {"stdout": "S-42"}})
        >>> json.loads(answer.stdout)["hookSpecificOutput"]["updatedToolOutput"]
        {'stdout': '[tool output withheld: late]'}
    """
    extra: dict[str, Any] = {}
    if event == "PostToolUse":
        note = f"[tool output withheld: {reason}]"
        extra["updatedToolOutput"] = withheld_like(payload.get("tool_response"), note)
    output, lost = combine(event, [block_answer("otelhooks", reason)], extra=extra, agent=agent)
    return respond(event, output, lost, deny_mode=deny_mode, agent=agent)


def answers_from_notes(notes: Iterable[tuple[str, object]]) -> list[HookAnswer]:
    """The answers the hooks left as notes, one per hook in the order they ran: a hook's own
    answer (a command's output, an ``http`` body) over the ``Block`` it returned for it."""
    own: dict[str, HookAnswer] = {}
    blocks: dict[str, HookAnswer] = {}
    order: list[str] = []
    for hook_id, detail in notes:
        if hook_id not in order:
            order.append(hook_id)
        answer: HookAnswer | None = None
        if isinstance(detail, HookAnswer):
            answer = detail
        elif isinstance(detail, tuple) and detail and hasattr(detail[0], "exit_code"):
            outcome = detail[0]  # a command's (outcome, decision) note
            answer = command_answer(hook_id, outcome.exit_code, outcome.stdout, outcome.stderr)
        elif isinstance(detail, Block):  # an observer's block (HooksEngine.trial notes it)
            blocks[hook_id] = block_answer(hook_id, detail.reason)
            continue
        if answer is not None:
            own[hook_id] = answer
    return [own.get(h) or blocks[h] for h in order if h in own or h in blocks]


def keep_block(event: str, output: dict[str, Any], verdict: Verdict) -> bool:
    """Make the combined ``output`` block when the engine's ``verdict`` did and it does not;
    returns whether it had to, and logs it as the bug it is.

    The chain and :func:`combine` read a hook's output apart (the chain through the hook's
    action, the bridge through :func:`answers_from_notes`, for the fields only the agent
    reads), each by the same rules. Were they ever to disagree, the agent is told the engine's
    block, never an allow.

    Example:
        >>> out = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
        ...                               "permissionDecision": "allow"}}
        >>> from structlog.testing import capture_logs
        >>> blocked = Verdict(blocked=True, decided_by="no-rm", reason="no")
        >>> with capture_logs() as logs:
        ...     keep_block("PreToolUse", out, blocked)
        True
        >>> logs[0]["log_level"], logs[0]["hook_id"]
        ('error', 'no-rm')
        >>> answer = out["hookSpecificOutput"]
        >>> answer["permissionDecision"], answer["permissionDecisionReason"]
        ('deny', 'no')
    """
    if not verdict.blocked or output.get("continue") is False:
        return False
    reason = verdict.reason or f"Blocked by hook {verdict.decided_by or 'a hook'}."
    if event == "PreToolUse":
        specific = output.get("hookSpecificOutput")
        if not isinstance(specific, dict):
            specific = output["hookSpecificOutput"] = {"hookEventName": event}
        if specific.get("permissionDecision") in ("deny", "ask", "defer"):
            return False  # an ask or defer is a command's own block, passed on as it is
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = reason
        specific.pop("updatedInput", None)
    elif event in BLOCKING_EVENTS:
        if output.get("decision") == "block":
            return False
        output["decision"] = "block"
        output["reason"] = reason
    else:
        return False
    _log.error(
        "the hooks' combined answer allowed what the engine blocked: blocked",
        hook_event=event,
        hook_id=verdict.decided_by,
    )
    return True


# a failed guard's problem as the person reads it (a command's stderr may be long)
_FAILURE_CHARS = 500


def tell_failures(output: dict[str, Any], errors: Sequence[str]) -> None:
    """Say in ``output``'s ``systemMessage``, on one line, which guards failed (``hook id:
    problem``, a verdict's ``errors``) when the action goes on anyway: a guard that could not
    decide must not look like one that had no objection (the CLI shows the message to the
    person; the model does not read it).

    Example:
        >>> out = {}
        >>> tell_failures(out, ["hook 'no-rm' on before_tool_call: exited with 127"])
        >>> out["systemMessage"].removeprefix("otelhooks: a hook failed and did not decide: ")
        "hook 'no-rm' on before_tool_call: exited with 127"
    """
    if not errors:
        return
    # one line: a command's stderr or an exception's message may hold several, and the CLIs
    # show the message as a status line (Gemini CLI's stderr, Codex CLI's hook warning)
    failed = "; ".join(" ".join(scrub(e).split())[:_FAILURE_CHARS] for e in errors)
    said = f"otelhooks: a hook failed and did not decide: {failed}"
    earlier = output.get("systemMessage")
    output["systemMessage"] = f"{earlier}\n\n{said}" if earlier else said


def dumps(output: Mapping[str, Any]) -> str:
    """The output as the agent reads it (``""`` when there is nothing to say): strict JSON by
    the one encoding of :mod:`otelhooks._encoding`, whatever a hook put in it (a rewrite's
    ``Path`` or set made writing fail, exit 1, and the call ran as it was; its ``NaN`` was JSON
    no CLI reads)."""
    return json.dumps(jsonable(output), ensure_ascii=False, allow_nan=False) if output else ""


def run_hooks(
    engine: HooksEngine,
    event: str,
    payload: HookEvent | Callable[[], HookEvent],
    values: tuple[str, ...],
    *,
    operation_id: str | None = None,
    only: Callable[[Hook], bool] | None = None,
) -> tuple[Verdict, list[HookAnswer]]:
    """Run the hooks of ``event`` now and collect what each answered.

    An intercept event runs its chain as live; any other event runs its observers on this
    thread (:meth:`HooksEngine.fire`; those ``only`` accepts, when given), so their answers are
    known before the agent is answered.
    A chain's block without an answer of its own (a Python ``Block``, a kernel ``None``, a
    control webhook, ``on_error: block``) is a block answer of the hook that decided.

    ``payload`` may be its builder: it is called only when a hook matches (an event no hook
    watches costs no model), and the verdict is then an empty one without a payload.
    """
    if not callable(payload):
        built = payload
    elif engine.registry.may_match(event, values):  # any operation's: the payload names it
        built = payload()
    else:
        return Verdict(), []
    return _run(engine, event, built, values, operation_id, only)


def _run(
    engine: HooksEngine,
    event: str,
    payload: HookEvent,
    values: tuple[str, ...],
    operation_id: str | None,
    only: Callable[[Hook], bool] | None = None,
) -> tuple[Verdict, list[HookAnswer]]:
    with collecting() as notes:
        try:
            if EVENT_SPECS[payload.event].intercept:
                verdict = engine.dispatch(event, payload, values=values, operation_id=operation_id)
            else:
                verdict = engine.fire(event, payload, values=values, only=only)
        except CriticalHookDeliveryError:
            _log.exception("critical hook delivery failed", hook_event=event)
            verdict = Verdict(payload=payload)
    answers = answers_from_notes(notes)
    if answers:
        # a permissive hook's answer is recorded by the engine (its would-be decision), never
        # passed on: the agent reads the bridge's answer, not the hook's own output
        permissive = {h.id for h in engine.registry.hooks() if h.mode == "permissive"}
        # the operation whose hooks ran: the engine takes the payload's when none is given
        scope = operation_id if operation_id is not None else payload.operationId
        if scope is not None:
            scoped = engine.registry.hooks(operation_id=scope)
            permissive.update(h.id for h in scoped if h.mode == "permissive")
        answers = [a for a in answers if a.hook_id not in permissive]
    if verdict.blocked and not any(a.hook_id == verdict.decided_by and decides(a) for a in answers):
        answers.append(block_answer(verdict.decided_by or "hook", verdict.reason))
    return verdict, answers


def respond(
    event: str,
    output: Mapping[str, Any],
    lost: Sequence[str],
    *,
    deny_mode: DenyMode,
    agent: str = AGENT,
) -> HookResponse:
    """The hook process's answer for a combined ``output`` (see :class:`HookResponse`) to
    ``agent`` (what its warnings name)."""
    if not output and not lost:
        return HookResponse()  # nothing to say (a WorktreeCreate no hook ran for included)
    cli = cli_name(agent)
    for problem in lost:
        _log.warning(f"a decision {cli} cannot carry", hook_event=event, problem=problem)
    specific = output.get("hookSpecificOutput") or {}
    if event == "WorktreeCreate":
        path = specific.get("worktreePath")
        if not output:
            return HookResponse()  # no hook ran for it: otelhooks only observed
        if not isinstance(path, str) or not path:
            return HookResponse(1, stderr=f"otelhooks: no hook gave {cli} a worktree path")
        return HookResponse(stdout=path, http_body=dumps(output))
    reason = specific.get("permissionDecisionReason") or output.get("reason") or ""
    if event in EXIT2_BLOCKING_EVENTS and output.get("decision") == "block":
        rest = {k: v for k, v in output.items() if k not in ("decision", "reason")}
        return HookResponse(2, stdout=dumps(rest), stderr=reason)
    denied = specific.get("permissionDecision") == "deny" or (
        event in BLOCKING_EVENTS and output.get("decision") == "block"
    )
    if deny_mode == "exit2" and denied:
        # the block is the exit code and stderr; the JSON carries only what else was said
        rest = {k: v for k, v in output.items() if k not in ("decision", "reason")}
        left = {
            k: v
            for k, v in specific.items()
            if k not in ("hookEventName", "permissionDecision", "permissionDecisionReason")
        }
        rest.pop("hookSpecificOutput", None)
        if left:
            rest["hookSpecificOutput"] = {"hookEventName": event, **left}
        return HookResponse(2, stdout=dumps(rest), stderr=reason)
    return HookResponse(stdout=dumps(output))
