"""The replay report: every event that would change, and a summary per hook and per tool.

Two renderings of one :class:`ReplayReport`: :meth:`~ReplayReport.table` for people and
:meth:`~ReplayReport.json_lines` for tools (one JSON object per line, ``type`` first: ``event``,
``hook``, ``tool``, then one ``summary``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from otelhooks.replay._events import Decision
from otelhooks.replay._run import ReplayOutcome

__all__ = ["Problems", "ReplayReport", "Tally"]

_FAILED_STEPS = ("error", "timeout")
_NONE_FAILED: frozenset[str] = frozenset()


class Problems(list[str]):
    """What could not be read, in order: the first :attr:`keep` descriptions, and a count of
    all (a recording of a million bad lines is not a million strings kept)."""

    keep = 1000

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def append(self, text: str) -> None:
        self.total += 1
        if len(self) < self.keep:
            super().append(text)

    def extend_from(self, other: Problems) -> None:
        """Add ``other``'s problems after these (its count too, kept or not)."""
        for text in other:
            self.append(text)
        self.total += other.total - len(other)


@dataclass(slots=True)
class Tally:
    """Counts for one hook or one tool.

    Attributes:
        seen: events the hook matched (for a tool: its recorded calls).
        deny, mock, rewrite: events the policy now denies, mocks, rewrites.
        errors: events where a hook failed.
        would_call: control webhooks not called (no ``--live-webhooks``).
        changed: events whose decision differs from the recorded one.
    """

    seen: int = 0
    deny: int = 0
    mock: int = 0
    rewrite: int = 0
    errors: int = 0
    would_call: int = 0
    changed: int = 0


class ReplayReport:
    """Collects :class:`ReplayOutcome` s; keeps only the events worth reporting.

    An event is reported when its decision changed, a hook failed on it, a control webhook was
    not called for it, a hook in ``mode: permissive`` would have acted on it (``permissive``,
    never part of the decision), or hooks decided it without its content
    (``content not recorded``).

    Args:
        hook_ids: the policy's hooks, in registration order (every one gets a summary row).
        sources: the recordings and policy files, for the header.

    Example:
        >>> report = ReplayReport(["no-rm"])
        >>> report.events, report.failed(["deny"])
        (0, {})
    """

    def __init__(
        self, hook_ids: Sequence[str] = (), *, sources: dict[str, list[str]] | None = None
    ) -> None:
        self.sources = sources or {}
        self.spans = 0
        self.events = 0
        self.by_event: Counter[str] = Counter()
        self.changes: Counter[str] = Counter()
        self.content_missing = 0
        self.reported: list[ReplayOutcome] = []
        self.hooks: dict[str, Tally] = {hook_id: Tally() for hook_id in hook_ids}
        self.tools: dict[str, Tally] = {}
        # Lines, frames and events that could not be read (``otelhooks replay`` exits 2).
        self.unreadable = Problems()

    def add(self, outcome: ReplayOutcome) -> None:
        """Count ``outcome`` (and keep it when it is worth reporting)."""
        event = outcome.recorded
        self.events += 1
        self.by_event[event.event] += 1
        tool = None
        if event.event == "before_tool_call":
            tool = self.tools.get(event.subject)
            if tool is None:
                tool = self.tools[event.subject] = Tally()
            tool.seen += 1
        if not outcome.matched and not outcome.changed:  # nothing matched, nothing changed: counted
            return
        now = outcome.now
        changed, errors = outcome.changed, outcome.errors
        # Allowed as recorded, no hook failed: no change, and each hook (and the tool) counts as
        # seen and would call its webhook, nothing else.
        plain = not changed and not errors and now.action == "allow"
        change = None if plain else outcome.change
        if change is not None:
            self.changes[change] += 1
        missing = not event.content_recorded and outcome.content_missing
        if missing:
            self.content_missing += 1
        would_call = outcome.would_call
        reported = change is not None or missing or would_call
        if not reported:
            # Reported too when a permissive hook would have acted (as _permissive lists it).
            for step in outcome.steps:
                if step.permissive not in (None, "allow"):
                    reported = True
                    break
        if reported:
            self.reported.append(outcome)
        # A hook that failed left an error (HooksEngine.dry_run): no errors, no failed steps.
        failed = (
            {s.hook_id for s in outcome.steps if s.outcome in _FAILED_STEPS}
            if errors
            else _NONE_FAILED
        )
        hooks = self.hooks
        for hook_id in outcome.matched:
            tally = hooks.get(hook_id)
            if tally is None:
                tally = hooks[hook_id] = Tally()
            tally.seen += 1
            if not plain:
                _count(tally, now, hook_id, changed, hook_id in failed)
            if would_call and hook_id in would_call:
                tally.would_call += 1
        if tool is not None:
            if not plain:
                _count(tool, now, None, changed, bool(errors))
            tool.would_call += bool(would_call)

    def failed(self, fail_on: Iterable[str]) -> dict[str, int]:
        """The listed kinds of change that happened, with their counts (empty: passed)."""
        return {kind: self.changes[kind] for kind in fail_on if self.changes[kind]}

    # -- renderings ------------------------------------------------------------------------------

    def records(self) -> Iterator[dict[str, Any]]:
        """The report as JSON-ready dicts: events, then hooks, tools and the summary."""
        for outcome in self.reported:
            yield _event_record(outcome)
        for hook_id, tally in self.hooks.items():
            yield {"type": "hook", "hook": hook_id, **asdict(tally)}
        for tool, tally in sorted(self.tools.items()):
            yield {"type": "tool", "tool": tool, **asdict(tally)}
        yield {
            "type": "summary",
            "spans": self.spans,
            "events": self.events,
            "by_event": dict(self.by_event),
            "changes": {kind: self.changes[kind] for kind in sorted(self.changes)},
            "content_not_recorded": self.content_missing,
            "unreadable": self.unreadable.total,
            "unreadable_first": list(self.unreadable),
            **self.sources,
        }

    def json_lines(self) -> Iterator[str]:
        """:meth:`records` as JSON lines (no trailing newlines)."""
        for record in self.records():
            yield json.dumps(record, default=str, ensure_ascii=False)

    def table(self) -> str:
        """The report as text for a terminal or a CI log."""
        lines = [self._header(), ""]
        changed = [o for o in self.reported if o.change is not None]
        lines.append(f"Would change ({len(changed)})")
        lines += [line for o in changed for line in _event_lines(o)] or ["  nothing"]
        missing = [o for o in self.reported if o.content_missing]
        if missing:
            lines += [
                "",
                f"Content not recorded ({len(missing)}): hooks saw names, matcher values and "
                "fingerprints only",
            ]
            for outcome in missing:
                event = outcome.recorded
                lines.append(
                    f"  {event.event} {event.subject}  trace {event.trace_id} "
                    f"span {event.span_id}  matched {', '.join(outcome.matched)}"
                )
        permissive = [o for o in self.reported if _permissive(o)]
        if permissive:
            lines += ["", f"Permissive, not enforced ({len(permissive)})"]
            for outcome in permissive:
                event = outcome.recorded
                lines.append(f"  {event.event} {event.subject}  trace {event.trace_id}")
                lines += [f"    permissive: {entry}" for entry in _permissive(outcome)]
        waiting = [o for o in self.reported if o.would_call]
        if waiting:
            calls = Counter(hook for o in waiting for hook in o.would_call)
            lines += ["", "Would call (control webhooks, not called without --live-webhooks)"]
            lines += [f"  {hook}: {count} event(s)" for hook, count in calls.items()]
        if self.unreadable.total:
            lines += ["", f"Could not be read ({self.unreadable.total}): not replayed"]
            lines += [f"  {problem}" for problem in self.unreadable]
            if self.unreadable.total > len(self.unreadable):
                lines.append(f"  ... and {self.unreadable.total - len(self.unreadable)} more")
        lines += ["", "Per hook", *_tally_table("hook", "seen", self.hooks)]
        lines += ["", "Per tool", *_tally_table("tool", "calls", dict(sorted(self.tools.items())))]
        return "\n".join(lines)

    def _header(self) -> str:
        kinds = ", ".join(f"{n} {e}" for e, n in sorted(self.by_event.items()))
        changes = ", ".join(f"{n} {k}" for k, n in sorted(self.changes.items())) or "none"
        head = (
            f"otelhooks replay: {self.spans} spans, {self.events} events replayed"
            + (f" ({kinds})" if kinds else "")
            + f"; changes: {changes}"
        )
        if self.content_missing:
            head += f"; {self.content_missing} decided without recorded content"
        if self.unreadable.total:
            head += f"; {self.unreadable.total} could not be read"
        return head


def _count(tally: Tally, now: Decision, hook_id: str | None, changed: bool, failed: bool) -> None:
    mine = hook_id is None or hook_id in now.by
    if mine and now.action == "deny":
        tally.deny += 1
    elif mine and now.action == "mock":
        tally.mock += 1
    elif mine and now.action == "rewrite":
        tally.rewrite += 1
    if changed and (mine or now.action == "allow"):
        tally.changed += 1
    tally.errors += failed


def _decision(decision: Decision) -> dict[str, Any]:
    return {"decision": decision.action, "by": list(decision.by), "reason": decision.reason}


def _event_record(outcome: ReplayOutcome) -> dict[str, Any]:
    event = outcome.recorded
    return {
        "type": "event",
        "trace_id": event.trace_id,
        "span_id": event.span_id,
        "agent": event.agent,
        "event": event.event,
        "subject": event.subject,
        "change": outcome.change,
        "recorded": _decision(event.recorded),
        "now": _decision(outcome.now),
        "diff": outcome.diff,
        "errors": outcome.errors,
        "would_call": outcome.would_call,
        "matched": outcome.matched,
        "content_recorded": event.content_recorded,
        "permissive": _permissive(outcome),
    }


def _permissive(outcome: ReplayOutcome) -> list[str]:
    """What the hooks in ``mode: permissive`` would have done (allowing aside), never done."""
    return [
        f"{step.hook_id} would {step.permissive}"
        for step in outcome.steps
        if step.permissive not in (None, "allow")
    ]


def _event_lines(outcome: ReplayOutcome) -> list[str]:
    event = outcome.recorded
    lines = [
        f"  {event.event} {event.subject}  agent {event.agent or '-'}",
        f"    trace {event.trace_id} span {event.span_id}",
        f"    then: {event.recorded}",
        f"    now:  {outcome.now}",
    ]
    for change in outcome.diff:
        old = json.dumps(change.get("from"), default=str, ensure_ascii=False)
        new = json.dumps(change.get("to"), default=str, ensure_ascii=False)
        if change["op"] == "add":
            lines.append(f"    diff: + {change['path']} = {new}")
        elif change["op"] == "remove":
            lines.append(f"    diff: - {change['path']} (was {old})")
        else:
            lines.append(f"    diff: {change['path']}: {old} -> {new}")
    lines += [f"    error: {error}" for error in outcome.errors]
    if outcome.content_missing:
        lines.append("    content not recorded: decided on names and fingerprints only")
    return lines


def _tally_table(label: str, seen: str, tallies: dict[str, Tally]) -> list[str]:
    if not tallies:
        return ["  none"]
    width = max(len(label), *(len(name) for name in tallies))
    heads = (seen, "deny", "mock", "rewrite", "errors", "would call", "changed")
    widths = [max(7, len(h)) for h in heads]

    def row(name: str, cells: Sequence[object]) -> str:
        padded = (f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        return f"  {name:<{width}}  " + "  ".join(padded)

    rows = [row(label, heads)]
    for name, t in tallies.items():
        rows.append(
            row(name, (t.seen, t.deny, t.mock, t.rewrite, t.errors, t.would_call, t.changed))
        )
    return rows
