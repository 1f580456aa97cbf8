"""Recorded events through a policy: ``HooksEngine.dry_run``, the chain the live agent runs.

Nothing here matches or runs hooks itself: each event goes to the engine's dry run
(:func:`~otelhooks._engine.dry_run_if_hooked`, :meth:`HooksEngine.dry_run` building the payload
only when a hook wants it: same matchers, order, handlers, commands and scripts as live; nothing
queued for observers, nothing counted), and the verdict is compared with the decision the span
recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from otelhooks._dispatch import InterceptChain
from otelhooks._dispatch._chain import _DECISION_RANK
from otelhooks._engine import HooksEngine, dry_run_if_hooked
from otelhooks._events import EVENTS
from otelhooks._hook_step import HookStep
from otelhooks._live import Verdict
from otelhooks.replay._events import Decision, RecordedEvent

__all__ = ["CHANGES", "ReplayOutcome", "decision_of", "replay_events"]

# What a replayed event can change to (the values ``--fail-on`` takes), and "error": a hook of
# the policy failed on the event.
CHANGES = ("deny", "mock", "rewrite", "allow", "error")

_ALLOW = Decision()
# A command's ``ask`` or ``defer`` as the strongest answer, by the chain's rank: live, a coding
# agent that can carry it (Claude Code asks the person, or pauses for a decision made
# elsewhere; Gemini CLI asks) leaves the call to someone a dry run never asks: like an
# approval, the event is not evaluated. An agent that cannot (``CANNOT``: the bridge denies)
# and the in-process runtimes deny the call.
_SOFT = {rank: name for name, rank in _DECISION_RANK.items() if name in ("ask", "defer")}
_SOFT_NAMES = frozenset(_SOFT.values())


@dataclass(slots=True)
class ReplayOutcome:
    """One recorded event and what the policy decides for it now.

    Attributes:
        recorded: the event, with the decision recorded then (``recorded.recorded``).
        now: what the policy decides now.
        changed: ``now.action`` differs from the recorded action (an ``ask`` or ``defer``
            never does: someone else decides, and the hook is listed in ``would_call``).
        diff: for a rewrite, the changes to the payload (``{"path", "op", "from", "to"}``,
            ``op`` one of ``add``, ``remove``, ``replace``).
        errors: ``hook id: problem`` for each hook that failed.
        matched: the intercept hooks that matched, in the order they ran.
        would_call: control webhooks that were not called (no ``--live-webhooks``),
            approvals and commands that answered ``ask``, whose person is never asked.
        steps: what each hook did.
        not_evaluable: ``hook id: why`` for each hook the recording cannot judge the event by
            (arguments cut short by the capture limit, tool kinds not recorded).
    """

    recorded: RecordedEvent
    now: Decision
    changed: bool
    diff: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    would_call: list[str] = field(default_factory=list)
    steps: list[HookStep] = field(default_factory=list)
    not_evaluable: list[str] = field(default_factory=list)

    @property
    def change(self) -> str | None:
        """What changed: the new action (``deny``, ``mock``, ``rewrite``, ``allow``), else
        ``error`` when a hook failed, else None."""
        if self.changed:
            return self.now.action
        return "error" if self.errors else None

    @property
    def content_missing(self) -> bool:
        """Hooks matched an event recorded without its content: they decided on names only."""
        return not self.recorded.content_recorded and bool(self.matched)


def decision_of(verdict: Verdict | InterceptChain) -> Decision:
    """The :class:`Decision` a verdict amounts to (a block wins, then a mock, then rewrites);
    or a dry run's chain, which carries the same fields.

    Example:
        >>> from otelhooks import Verdict
        >>> str(decision_of(Verdict(blocked=True, decided_by="no-rm", reason="no")))
        'deny by no-rm: no'
    """
    if verdict.blocked:
        return Decision("deny", (verdict.decided_by,) if verdict.decided_by else (), verdict.reason)
    if verdict.mock is not None:
        return Decision("mock", (verdict.mocked_by,) if verdict.mocked_by else ())
    if verdict.rewritten_by:
        return Decision("rewrite", tuple(verdict.rewritten_by))
    return _ALLOW  # immutable: one for every allowed event


def replay_events(
    engine: HooksEngine,
    events: Iterable[RecordedEvent],
    *,
    live_webhooks: bool = False,
    pooled: bool = False,
    problems: list[str] | None = None,
) -> Iterator[ReplayOutcome]:
    """Decide every event with ``engine`` and compare with what was recorded.

    Args:
        engine: the policy (``HooksEngine.from_files(...)``).
        events: from :func:`recorded_events`.
        live_webhooks: call control webhooks; otherwise they are listed in ``would_call``
            (approvals always are).
        pooled: call Python hooks on the engine's handler pool under their deadlines, as live
            (a hook that hangs is cut off). By default they run on this thread and their
            deadlines are judged when they return: the same verdicts, several times faster.
        problems: where an event whose payload cannot be built from its span is described
            and skipped; without it, the error is raised.

    Example:
        >>> from otelhooks import HooksEngine
        >>> from otelhooks.replay import read_recording, recorded_events
        >>> engine = HooksEngine.from_files(["examples/replay/policy.yaml"])
        >>> spans = read_recording("examples/replay/traces.jsonl")
        >>> changed = [o for o in replay_events(engine, recorded_events(spans)) if o.changed]
        >>> sorted({o.now.action for o in changed})
        ['allow', 'deny', 'mock', 'rewrite']
    """
    inline = not pooled
    for event in events:
        try:
            chain = dry_run_if_hooked(
                engine,
                event.event,
                event.values,
                event.build,
                call_webhooks=live_webhooks,
                inline=inline,
            )
            if chain is None:
                # No hook wants the event: (as live) no payload is built, the verdict is empty.
                outcome = ReplayOutcome(event, _ALLOW, event.recorded.action != "allow")
            else:
                outcome = _outcome(event, chain)
            if event.unknown is not None:
                outcome.not_evaluable = _not_evaluable(engine, event, outcome.matched)
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            # A recorded value the payload cannot hold (pydantic refused it, or it is too
            # deep): this event cannot be replayed; the others still are.
            if problems is None:
                raise
            problems.append(
                f"trace {event.trace_id} span {event.span_id}: {event.event} cannot be "
                f"replayed ({type(exc).__name__}: {str(exc)[:200]})"
            )
            continue
        yield outcome


def _carries(agent: str | None, decision: str) -> bool:
    """Whether the coding agent that ran a recorded call acts on a hook's ``decision``
    (``ask``, ``defer``) rather than have the bridge deny the call."""
    # imported here: only an event a command asks about or defers needs the bridge's rules
    from otelhooks.integrations.coding_agents._agent_limits import CANNOT
    from otelhooks.integrations.coding_agents._common import AGENT
    from otelhooks.integrations.coding_agents._dialects import DIALECTS

    known = agent == AGENT or any(agent == d.agent for d in DIALECTS.values())
    return known and decision not in CANNOT.get(agent or "", ())


def _not_evaluable(engine: HooksEngine, event: RecordedEvent, matched: list[str]) -> list[str]:
    """The hooks ``event.unknown`` keeps from being judged: with matcher values the span does
    not say, those that match only with them; without, every hook that matched."""
    assert event.unknown is not None
    why, extra = event.unknown
    if extra:
        known = {hook.id for hook in engine.registry.match(event.event, event.values)}
        wider = engine.registry.match(event.event, event.values + extra)
        return [f"{hook.id}: {why}" for hook in wider if hook.id not in known]
    return [f"{hook_id}: {why}" for hook_id in matched]


def _outcome(event: RecordedEvent, chain: InterceptChain) -> ReplayOutcome:
    diff: list[dict[str, Any]] = []
    now = decision_of(chain)
    would_call = chain.would_call
    soft = _SOFT.get(chain.soft_rank) if now.action == "deny" else None
    if soft is not None and _carries(event.agent, soft):
        now = Decision(soft, now.by, now.reason)
        would_call = [*would_call, *now.by]
    if now.action == "rewrite":
        # Hooks may have changed the payload in place: what it was is built again from the
        # span (a few events in a hundred are rewritten; a copy of every payload is not kept).
        name = EVENTS[event.event].rewrites or ""
        before = getattr(event.build(), name)
        diff = diff_values(before, getattr(chain.payload, name, None), name)
    # The dry run's chain is this event's own: its lists are kept.
    return ReplayOutcome(
        event,
        now,
        now.action != event.recorded.action and now.action not in _SOFT_NAMES,
        diff,
        chain.errors,
        chain.matched,
        would_call,
        chain.steps,
    )


def diff_values(old: Any, new: Any, path: str) -> list[dict[str, Any]]:
    """The changes from ``old`` to ``new``, key by key through nested dicts.

    Example:
        >>> diff_values({"cmd": "rm -rf /", "n": 1}, {"cmd": "ls", "n": 1}, "args")
        [{'path': 'args.cmd', 'op': 'replace', 'from': 'rm -rf /', 'to': 'ls'}]
    """
    if isinstance(old, dict) and isinstance(new, dict):
        changes: list[dict[str, Any]] = []
        for key in old.keys() | new.keys():
            sub = f"{path}.{key}"
            if key not in new:
                changes.append({"path": sub, "op": "remove", "from": old[key]})
            elif key not in old:
                changes.append({"path": sub, "op": "add", "to": new[key]})
            else:
                changes += diff_values(old[key], new[key], sub)
        return sorted(changes, key=lambda c: str(c["path"]))
    if old == new:
        return []
    return [{"path": path, "op": "replace", "from": old, "to": new}]
