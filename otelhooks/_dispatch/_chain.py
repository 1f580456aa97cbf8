"""The intercept chain rules, written once and driven by the sync and the async dispatcher.

Rules (each has its own test):

1. Interceptors run in registration order; each sees the payload the previous one left.
2. A handler returns ``None`` to change nothing, a payload (model or dict) to rewrite, or
   :class:`~otelhooks.Block` to block. Under the kernel contract (``intercept=True``)
   ``None`` blocks. A rewrite is validated, whatever shape it comes in. A handler that
   changed the rewritable field in place (``data.content = ...``, the kernel's ``return
   data``; ``event.args["path"] = ...``; ``data.result["content"] = ...``) rewrote it: the
   runtime runs, sends or keeps what the later hooks saw.
3. The first block wins and ends the chain; a tool call's default reason is LobeHub's
   ``Blocked by beforeToolCall hook.``
4. ``event.mock(result)`` on ``before_tool_call``: the first accepted mock wins and ends the chain.
   ``event.deny(reason)`` blocks as returning ``Block(reason)`` does, whatever the handler then
   returns (and wins over a mock it made); a deny made before the handler failed stands.
5. A handler that raises, times out or returns the wrong type is recorded as an error and then
   follows its ``on_error`` policy: ``continue`` (ignored) or ``block``.
6. Command hooks decide Claude-style, and Claude's precedence deny > defer > ask > allow holds
   whatever their registration order: a command's ``ask`` or ``defer`` blocks the call but keeps
   the chain open to the remaining *command* hooks (other hooks are skipped, as after any
   block); a later, stronger decision replaces it (the earliest of equal ones stands), and a deny
   ends the chain. A block from any other hook counts as a deny. An ``allow`` never lifts a
   block, so its ``updatedInput`` only takes effect when no command objected.
7. A hook in ``mode: permissive`` gets its own deep copy of the payload; what it would do (block,
   mock, rewrite, fail under ``on_error: block``) is recorded in its step's ``permissive`` and
   never applied: the chain goes on as if it had allowed.
8. Arguments a person edited on an approval's card are judged again from the first hook, past
   that approval (its person chose them): the call that runs passed every guard, those listed
   before the approval included (:meth:`InterceptChain.again`; docs/design.md says why).
"""

from __future__ import annotations

from typing import Any

from otelhooks._dispatch._copies import copied, scratch_copy
from otelhooks._dispatch._rewrites import rewrite
from otelhooks._events import EVENTS, HookEvent, ToolCallEvent, ToolResult
from otelhooks._events._marks import ToolCallMarks
from otelhooks._hook_step import HookStep
from otelhooks._hooks import Block, HookFacts
from otelhooks._live import Answered, ApprovalNote, Verdict
from otelhooks._redact import scrub

__all__ = ["DEFAULT_BLOCK_REASONS", "InterceptChain"]

_DENY = 3
_DECISION_RANK = {"ask": 1, "defer": 2, "deny": _DENY}

# The hook kinds a chain lists as would-call instead of running, by (dry_run, call_webhooks).
_LISTED: dict[tuple[bool, bool], frozenset[str]] = {
    (False, True): frozenset(),
    (False, False): frozenset({"webhook"}),
    (True, True): frozenset({"approval"}),
    (True, False): frozenset({"webhook", "approval"}),
}

# The field a runtime takes from each intercept event's rewrite. The chain keeps it as it came
# (hooks get a deep copy of a tool call's args or a result, which they may change deep inside)
# and compares after each hook: a change made in place is a rewrite by that hook.
_REWRITES: dict[str, str] = {spec.name: spec.rewrites for spec in EVENTS.values() if spec.rewrites}

# ``kept`` when the field is not watched: no rewritable field, or one that cannot be copied or
# compared (nested past the recursion limit, an array whose ``!=`` is no bool).
_UNWATCHED: Any = object()

DEFAULT_BLOCK_REASONS: dict[str, str] = {
    "before_tool_call": "Blocked by beforeToolCall hook.",
    "message_sending": "Blocked by message_sending hook.",
    "before_agent_start": "Blocked by before_agent_start hook.",
    "tool_result_persist": "Blocked by tool_result_persist hook.",
    "before_human_intervention": "Rejected by beforeHumanIntervention hook.",
}


class InterceptChain:
    """State of one intercept dispatch: feed it each hook's result with :meth:`apply`.

    It reads each hook through its :class:`~otelhooks._hooks.HookFacts` (``Hook.facts``), as the
    registry's :class:`~otelhooks._dispatch._match_index.Intercepts` hold them (``facts``; and
    ``matched``, the ids its verdict lists: taken apart, so the chain imports nothing of the
    registry, which imports the actions, one of which imports the chain). It carries what
    the hooks decided in the fields of a :class:`~otelhooks._live.Verdict` (``blocked`` ...
    ``approvals``), so a dry run's caller reads them here, and :meth:`verdict` makes the public
    object for those that keep one: one object per chain, not two."""

    payload: HookEvent
    marks: ToolCallMarks | None
    blocked: bool
    reason: str | None
    decided_by: str | None
    mock: ToolResult | None
    mocked_by: str | None

    __slots__ = (
        "approvals",
        "blocked",
        "decided_by",
        "dry_run",
        "edited_by",
        "errors",
        "event",
        "field",
        "hooks",
        "kept",
        "listed",
        "marks",
        "matched",
        "mock",
        "mocked_by",
        "payload",
        "permissive",
        "reason",
        "rewritten_by",
        "scratch",
        "soft_rank",
        "steps",
        "would_call",
    )

    def __init__(
        self,
        event: str,
        payload: HookEvent,
        hooks: tuple[HookFacts, ...],
        matched: tuple[str, ...],
        watched: bool,
        dry_run: bool = False,
        call_webhooks: bool = True,
        owned: bool = False,
    ) -> None:
        self.hooks = hooks
        self.event = event
        self.dry_run = dry_run  # deciding only (HooksEngine.dry_run): nothing is counted
        # The kinds of hook that ask outside and are listed in ``would_call`` instead of run: a
        # control webhook unless ``call_webhooks``; an approval in a dry run, since no call
        # waits for the person's answer there (and a card would ask them about none).
        self.listed = _LISTED[dry_run, call_webhooks]
        self.soft_rank = 0  # set while a command's ask/defer block leaves the chain open (rule 6)
        self.scratch: HookEvent | None = None  # the copy a permissive hook was given (rule 7)
        # What the last permissive hook would have done (read it for a permissive hook only).
        self.permissive: str | None = None
        # What the hooks decided: the fields of a Verdict (see there).
        self.blocked = False
        self.reason = self.decided_by = self.mock = self.mocked_by = None
        self.rewritten_by: list[str] = []
        self.errors: list[str] = []
        self.matched = list(matched)
        self.would_call: list[str] = []
        self.steps: list[HookStep] = []
        self.approvals: list[ApprovalNote] = []
        # the approval whose person's edit is the payload held, until the hooks before it saw it
        self.edited_by: HookFacts | None = None
        # ``watched``: an enforcing Python hook runs, whose in-place change counts (rule 2); a
        # chain of none copies nothing: the copy guards against code otelhooks does not own
        # changing the payload in place (its commands, webhooks, approvals and budgets never
        # do; permissive hooks get their own copy; notifications observe).
        self.field = _REWRITES.get(event, "") if watched else ""
        self.kept: Any = _UNWATCHED
        self._hold(payload, owned)

    def verdict(self) -> Verdict:
        """What the hooks decided, as the public :class:`~otelhooks._live.Verdict`."""
        return Verdict(
            self.payload,
            self.blocked,
            self.reason,
            self.decided_by,
            self.rewritten_by,
            self.mock,
            self.mocked_by,
            self.errors,
            self.matched,
            self.would_call,
            self.steps,
            self.approvals,
        )

    def again(self) -> tuple[HookFacts, ...]:
        """The hooks to run next (rule 8) once the loop stopped at an approval whose person
        edited the arguments (``edited_by``): every hook from the first again, on the edited
        arguments, past that approval (a guard listed before it judged only the arguments
        asked about)."""
        author, self.edited_by = self.edited_by, None
        return tuple(hook for hook in self.hooks if hook is not author)

    def _hold(self, payload: HookEvent, owned: bool = False) -> None:
        """Go on with ``payload`` (the first, a rewrite, or a fresh copy after a failure) and
        its marks. The hooks get its rewritable field and the chain keeps another copy of it
        as it came, to compare with after each hook (rule 2): what a hook changes in place
        never reaches the runtime's own objects.

        Which of the two the hooks get is a question of ownership, and the copy and the
        comparison are the same either way. A payload holding the runtime's (or the user's)
        own objects keeps the value as it came and is given a deep copy in its place (a tool
        call's ``toolInput`` too, when it is the same object as its ``args``). An ``owned``
        payload was built for this chain alone (a replay builds each from its span, and
        nothing else holds its values): the hooks get its values as they are and the copy is
        what the chain keeps, which spares the payload two assignments."""
        self.payload = payload
        # A tool call's marks (None for other events), read once per payload the chain holds.
        self.marks = payload._marks if isinstance(payload, ToolCallEvent) else None
        field = self.field
        if not field:
            return
        value = self.kept = getattr(payload, field)
        if isinstance(value, str):
            return  # text changes only by assignment
        handed = copied(value)
        if handed is value:  # nested past the interpreter's recursion limit
            self.kept = _UNWATCHED
            return
        if owned:
            self.kept = handed
            return
        # Through the model's own assignment, like any change to a payload: writing its
        # ``__dict__`` would save two ``__setattr__`` calls and step past pydantic's rules.
        if isinstance(payload, ToolCallEvent) and payload.toolInput is value:
            payload.toolInput = handed
        setattr(payload, field, handed)

    def skips(self, hook: HookFacts) -> bool:
        """Whether ``hook`` no longer runs: after an ask/defer block only commands do."""
        return self.soft_rank > 0 and hook.kind != "command"

    def scratch_for(self, hook: HookFacts) -> HookEvent:
        """The payload to hand to a permissive ``hook``: its own copy (rule 7)."""
        self.permissive = None
        self.scratch = scratch_copy(self.payload)
        return self.scratch

    def apply(self, hook: HookFacts, result: Any) -> tuple[bool, str]:
        """Apply a handler's return value and record the hook's step. Returns (stop, outcome):
        a stop with ``edited_by`` set is an approval's edit, which :meth:`again` judges."""
        marks = self.marks
        # The common case, first: an enforcing hook allowed (rule 2), left no mark (rule 4)
        # and its field as it was (an approval's answer is neither the payload nor None).
        if (
            (result is self.payload or (result is None and not hook.intercept))
            and not hook.permissive
            and (marks is None or not (marks.denied or marks.mock is not None))
        ):
            kept = self.kept
            # Rule 2: what it changed in place (deep inside or not) is a rewrite; the field
            # compared with the value kept as it came (_hold).
            try:
                changed = kept is not _UNWATCHED and bool(getattr(self.payload, self.field) != kept)
            except Exception:  # a field whose comparison fails is no longer watched
                changed = False
                self.kept = _UNWATCHED
            if not changed:
                self.steps.append(hook.steps["ok"])
                return False, "ok"
        edited = False
        if isinstance(result, Answered):  # an approval: who answered goes on the call's span
            self.approvals.append(result.note)
            edited = result.note.args is not None
            result = result.result
        if hook.permissive:
            outcome = self._would(hook, result)
            self.steps.append(HookStep(hook.id, hook.kind, outcome, permissive=self.permissive))
            return False, outcome
        stop, outcome = self._enforce(hook, result)
        self.steps.append(hook.steps[outcome])
        if edited and outcome == "rewritten":
            self.edited_by = hook  # rule 8: the loop stops here and starts again (again())
            return True, outcome
        return stop, outcome

    def _enforce(self, hook: HookFacts, result: Any) -> tuple[bool, str]:
        """Rules 2-6 for an enforcing hook's return value. Returns (stop, outcome)."""
        payload, marks = self.payload, self.marks
        if marks is not None and marks.denied:
            result = Block(marks.deny_reason)  # event.deny(): a block, whatever it returned
            marks.closed = True
        if isinstance(result, Block):
            rank = _DECISION_RANK.get(getattr(result, "decision", "deny"), _DENY)
            if self.soft_rank and rank <= self.soft_rank:
                return False, "blocked"  # not stronger than the block already decided
            self._block(hook, result.reason)
            self.soft_rank = rank if rank < _DENY else 0
            return rank == _DENY, "blocked"
        if self.soft_rank:
            return False, "ok"  # already blocked by an ask/defer: an allow changes nothing
        if marks is not None and marks.mock is not None:
            self.mock = marks.mock
            self.mocked_by = hook.id  # a mock ends the chain: made by the hook just run
            marks.closed = True
            return True, "mocked"
        if result is None or result is payload:
            if hook.intercept and result is None:
                return self._block(hook, None), "blocked"
            # Past apply's common case with no block, mark or ask/defer: it changed its field
            # in place, a rewrite, validated as one.
            result = payload
        rewritten = rewrite(payload, result)
        if isinstance(rewritten, str):
            return self.fail(hook, rewritten)
        self._hold(rewritten)
        self.rewritten_by.append(hook.id)
        return False, "rewritten"

    def fail(self, hook: HookFacts, problem: str, outcome: str = "error") -> tuple[bool, str]:
        """Record a failed hook and apply its ``on_error`` policy. Known secrets in ``problem``
        are scrubbed: it goes on the span (``otelhooks.hook.errors``) and maybe into a block reason.

        The failed handler may still be running (abandoned at its deadline): later hooks get a
        copy of the payload, and the original refuses mocks, so nothing it does afterwards counts.
        """
        problem = scrub(problem)
        self.errors.append(f"{hook.id}: {problem}")
        if hook.permissive:  # rule 7: it had only a copy, and it never blocks
            self.scratch = None
            block = hook.blocks_on_error
            self.permissive = f"error: would block: {problem}" if block else f"error: {problem}"
            return False, outcome
        payload, marks, kept = self.payload, self.marks, self.kept
        # What the failed hook changed in place, then or later, is lost: later hooks get a
        # copy holding the field as it was before it ran.
        fresh = payload
        if kept is not _UNWATCHED:
            update = {self.field: kept}
            if isinstance(payload, ToolCallEvent):
                update["toolInput"] = kept
            fresh = payload.model_copy(update=update)
        if isinstance(fresh, ToolCallEvent) and marks is not None:
            marks.closed = True
            if fresh is payload:
                fresh = fresh.model_copy()
            fresh._marks = ToolCallMarks()
        if fresh is not payload:
            self._hold(fresh)
        if marks is not None and marks.denied:  # a deny made before the failure stands
            self._block(hook, marks.deny_reason)
            self.soft_rank = 0
            return True, outcome
        if hook.blocks_on_error:
            self._block(hook, f"hook {hook.id} failed: {problem}")
            self.soft_rank = 0
            return True, outcome
        return False, outcome

    def _would(self, hook: HookFacts, result: Any) -> str:
        """Rule 7: what a permissive hook's result would do, recorded in ``permissive``; returns
        the outcome it would have had."""
        scratch, self.scratch = self.scratch, None
        scratch_marks = scratch._marks if isinstance(scratch, ToolCallEvent) else None
        if scratch_marks is not None and scratch_marks.denied:
            result = Block(scratch_marks.deny_reason)
        if isinstance(result, Block):
            decision = getattr(result, "decision", "deny")
            reason = _reason_text(result.reason)
            self.permissive = f"{decision}: {reason}" if reason else decision
            return "blocked"
        if scratch_marks is not None and scratch_marks.mock is not None:
            self.permissive = "mock"
            return "mocked"
        if result is None or result is scratch:
            if hook.intercept and result is None:
                self.permissive = "deny"
                return "blocked"
            if scratch is not None and scratch.model_dump() != self.payload.model_dump():
                self.permissive = "rewrite"  # changed in place, as kernel handlers may
                return "rewritten"
            self.permissive = "allow"
            return "ok"
        problem = rewrite(self.payload, result)
        if isinstance(problem, str):
            self.permissive = f"error: {problem}"
            self.errors.append(f"{hook.id}: {self.permissive[7:]}")
            return "error"
        self.permissive = "rewrite"
        return "rewritten"

    def _block(self, hook: HookFacts, reason: object) -> bool:
        self.blocked = True
        # A reason may be a command's stderr: it reaches the span, the agent and the event log.
        self.reason = _reason_text(reason) or DEFAULT_BLOCK_REASONS.get(
            self.event, "Blocked by hook."
        )
        self.decided_by = hook.id
        return True


def _reason_text(reason: object) -> str | None:
    """A block's reason as the text it is shown as, known secrets scrubbed; None for none.

    A handler may give any object (``Block(exc)``, ``event.deny(42)``): its ``str()``, since the
    agent's answer, the span and the event log carry text (the command bridge failed to write
    the deny, exit 1, and the call ran).
    """
    if not reason:
        return None
    return scrub(reason if isinstance(reason, str) else str(reason))
