"""The replay report: every event that would change, and a summary per hook and per tool.

Two renderings of one :class:`ReplayReport`: :meth:`~ReplayReport.table` for people and
:meth:`~ReplayReport.json_lines` for tools (one JSON object per line, ``type`` first: ``event``,
``hook``, ``tool``, then one ``summary``).

The events listed are written, as their JSON lines, to a spooled temporary file as they are
added (in memory up to a MiB, then on disk), so a report of any length holds only its
counts; both renderings read them back from there (see docs/replay.md, "Memory").
"""

from __future__ import annotations

import json
import tempfile
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from otelhooks.replay._events import Decision
from otelhooks.replay._run import ReplayOutcome

__all__ = ["Problems", "ReplayReport", "Tally"]

# Bytes of listed events a report keeps in memory before it spools them to a temporary file.
_SPOOLED = 1 << 20

_FAILED_STEPS = ("error", "timeout")
_NONE_FAILED: frozenset[str] = frozenset()
_NOT_PERMISSIVE: list[str] = []  # never changed: shared by every event no hook would act on

# The report's JSON: text as it is (not escaped to ASCII), str() of what JSON cannot hold. One
# encoder, as json.dumps with these options would make one for every value it encodes.
_to_json = json.JSONEncoder(default=str, ensure_ascii=False).encode


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
        would_call: control webhooks not called (no ``--live-webhooks``) and approvals (a
            person is never asked).
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
    """Collects :class:`ReplayOutcome` s; lists only the events worth reporting.

    An event is listed when its decision changed, a hook failed on it, a control webhook was
    not called for it, the recording cannot judge it by one of the hooks (``not_evaluable``:
    arguments cut short, tool kinds not recorded), a hook in ``mode: permissive`` would have
    acted on it (``permissive``, never part of the decision), or hooks decided it without its
    content
    (``content not recorded``). What is kept of it is its JSON record (:meth:`listed`), written
    to a spooled temporary file as it is added: nothing of the outcome itself.

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
        # Spans read again and skipped: the same trace id and span id as one replayed (a
        # retried export, or recordings that overlap); each span is replayed once.
        self.duplicates = 0
        self.events = 0
        self.by_event: Counter[str] = Counter()
        self.changes: Counter[str] = Counter()
        self.content_missing = 0
        # Events a hook of the policy did not decide: a control webhook or a person not asked.
        self.not_evaluated = 0
        self.hooks: dict[str, Tally] = {hook_id: Tally() for hook_id in hook_ids}
        self.tools: dict[str, Tally] = {}
        # Lines, frames and events that could not be read (``otelhooks replay`` exits 2).
        self.unreadable = Problems()
        # The listed events' JSON lines, UTF-8 (surrogates pass: a str may hold them). The
        # report owns the file while it lives.
        self._listed = tempfile.SpooledTemporaryFile(_SPOOLED)  # noqa: SIM115
        weakref.finalize(self, self._listed.close)
        self._listed_end = 0
        self._permissive = 0  # events listed for a permissive hook
        self._would_call: Counter[str] = Counter()  # hook -> events listed for its webhook
        self._unjudged = 0  # events listed with hooks the recording cannot judge them by

    def add(self, outcome: ReplayOutcome) -> None:
        """Count ``outcome`` (and list it when it is worth reporting)."""
        event = outcome.recorded
        self.events += 1
        self.by_event[event.event] += 1
        tool = None
        if event.event == "before_tool_call":
            tool = self.tools.get(event.subject)
            if tool is None:
                tool = self.tools[event.subject] = Tally()
            tool.seen += 1
        unjudged = outcome.not_evaluable
        if not outcome.matched and not outcome.changed and not unjudged:
            return  # nothing matched, nothing changed: counted
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
        permissive = _NOT_PERMISSIVE
        for step in outcome.steps:
            if step.permissive not in (None, "allow"):
                permissive = _permissive(outcome)
                self._permissive += 1
                break
        if change is not None or missing or would_call or permissive or unjudged:
            if would_call or unjudged:
                self.not_evaluated += 1
                self._would_call.update(would_call)
                self._unjudged += bool(unjudged)
            record = _event_record(outcome, change, permissive)
            line = _to_json(record)
            data = line.encode("utf-8", "surrogatepass") + b"\n"
            self._listed.seek(self._listed_end)
            self._listed.write(data)
            self._listed_end += len(data)
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

    def listed(self) -> Iterator[dict[str, Any]]:
        """The events listed, in the order they were added, as their JSON records (``type``
        ``event``: what :meth:`json_lines` prints for each)."""
        for line in self._lines():
            yield json.loads(line)

    def _by_record(self, key: str, prefix: str) -> Iterator[str]:
        """The text report's lines for each listed event with entries under ``key``."""
        for record in self.listed():
            if record[key]:
                yield f"  {record['event']} {record['subject']}  trace {record['trace_id']}"
                for entry in record[key]:
                    yield f"    {prefix}{entry}"

    def _lines(self) -> Iterator[str]:
        # Each reader keeps its own place: renderings may interleave.
        listed, at = self._listed, 0
        while at < self._listed_end:
            listed.seek(at)
            line = listed.readline()
            at += len(line)
            yield line[:-1].decode("utf-8", "surrogatepass")

    # -- renderings ------------------------------------------------------------------------------

    def records(self) -> Iterator[dict[str, Any]]:
        """The report as JSON-ready dicts: events, then hooks, tools and the summary."""
        yield from self.listed()
        yield from self._totals()

    def _totals(self) -> Iterator[dict[str, Any]]:
        for hook_id, tally in self.hooks.items():
            yield {"type": "hook", "hook": hook_id, **asdict(tally)}
        for tool, tally in sorted(self.tools.items()):
            yield {"type": "tool", "tool": tool, **asdict(tally)}
        yield {
            "type": "summary",
            "spans": self.spans,
            "duplicate_spans": self.duplicates,
            "events": self.events,
            "by_event": dict(self.by_event),
            "changes": {kind: self.changes[kind] for kind in sorted(self.changes)},
            "content_not_recorded": self.content_missing,
            "not_evaluated": self.not_evaluated,
            "unreadable": self.unreadable.total,
            "unreadable_first": list(self.unreadable),
            **self.sources,
        }

    def json_lines(self) -> Iterator[str]:
        """:meth:`records` as JSON lines (no trailing newlines)."""
        yield from self._lines()
        for record in self._totals():
            yield _to_json(record)

    def table(self) -> str:
        """The report as text for a terminal or a CI log (:meth:`table_lines` joined)."""
        return "\n".join(self.table_lines())

    def table_lines(self) -> Iterator[str]:
        """The lines of :meth:`table` (no trailing newlines), one at a time: the events listed
        are read back for each section, never all held."""
        yield from (self._header(), "")
        yield f"Would change ({self.changes.total()})"
        listed = False
        for record in self.listed():
            if record["change"] is not None:
                listed = True
                yield from _event_lines(record)
        if not listed:
            yield "  nothing"
        if self.content_missing:
            yield ""
            yield (
                f"Content not recorded ({self.content_missing}): hooks saw names, matcher values "
                "and fingerprints only"
            )
            for record in self.listed():
                if _content_missing(record):
                    yield (
                        f"  {record['event']} {record['subject']}  trace {record['trace_id']} "
                        f"span {record['span_id']}  matched {', '.join(record['matched'])}"
                    )
        if self._permissive:
            yield from ("", f"Permissive, not enforced ({self._permissive})")
            yield from self._by_record("permissive", "permissive: ")
        if self._would_call:
            yield from (
                "",
                "Would call (control webhooks, not called without --live-webhooks; approvals, "
                "never asked): not evaluated",
            )
            for hook, count in self._would_call.items():
                yield f"  {hook}: {count} event(s)"
        if self._unjudged:
            yield from ("", f"Not evaluable from the recording ({self._unjudged}): not evaluated")
            yield from self._by_record("not_evaluable", "")
        if self.unreadable.total:
            yield from ("", f"Could not be read ({self.unreadable.total}): not replayed")
            for problem in self.unreadable:
                yield f"  {problem}"
            if self.unreadable.total > len(self.unreadable):
                yield f"  ... and {self.unreadable.total - len(self.unreadable)} more"
        yield from ("", "Per hook", *_tally_table("hook", "seen", self.hooks))
        yield from (
            "",
            "Per tool",
            *_tally_table("tool", "calls", dict(sorted(self.tools.items()))),
        )

    def _header(self) -> str:
        kinds = ", ".join(f"{n} {e}" for e, n in sorted(self.by_event.items()))
        changes = ", ".join(f"{n} {k}" for k, n in sorted(self.changes.items())) or "none"
        head = (
            f"otelhooks replay: {self.spans} spans, {self.events} events replayed"
            + (f" ({kinds})" if kinds else "")
            + f"; changes: {changes}"
        )
        if self.not_evaluated:
            why = "would call, or not evaluable" if self._unjudged else "would call"
            head += f"; {self.not_evaluated} not evaluated ({why})"
        if self.content_missing:
            head += f"; {self.content_missing} decided without recorded content"
        if self.unreadable.total:
            head += f"; {self.unreadable.total} could not be read"
        if self.duplicates:
            head += f"; {self.duplicates} duplicate spans skipped"
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


def _event_record(
    outcome: ReplayOutcome, change: str | None, permissive: list[str]
) -> dict[str, Any]:
    event = outcome.recorded
    return {
        "type": "event",
        "trace_id": event.trace_id,
        "span_id": event.span_id,
        "agent": event.agent,
        "event": event.event,
        "subject": event.subject,
        "change": change,
        "recorded": _decision(event.recorded),
        "now": _decision(outcome.now),
        "diff": outcome.diff,
        "errors": outcome.errors,
        "would_call": outcome.would_call,
        "not_evaluable": outcome.not_evaluable,
        "matched": outcome.matched,
        "content_recorded": event.content_recorded,
        "permissive": permissive,
    }


def _permissive(outcome: ReplayOutcome) -> list[str]:
    """What the hooks in ``mode: permissive`` would have done (allowing aside), never done."""
    return [
        f"{step.hook_id} would {step.permissive}"
        for step in outcome.steps
        if step.permissive not in (None, "allow")
    ]


def _content_missing(record: dict[str, Any]) -> bool:
    return not record["content_recorded"] and bool(record["matched"])


def _said(decision: dict[str, Any]) -> str:
    return str(Decision(decision["decision"], tuple(decision["by"]), decision["reason"]))


def _event_lines(record: dict[str, Any]) -> list[str]:
    lines = [
        f"  {record['event']} {record['subject']}  agent {record['agent'] or '-'}",
        f"    trace {record['trace_id']} span {record['span_id']}",
        f"    then: {_said(record['recorded'])}",
        f"    now:  {_said(record['now'])}",
    ]
    for change in record["diff"]:
        old = _to_json(change.get("from"))
        new = _to_json(change.get("to"))
        if change["op"] == "add":
            lines.append(f"    diff: + {change['path']} = {new}")
        elif change["op"] == "remove":
            lines.append(f"    diff: - {change['path']} (was {old})")
        else:
            lines.append(f"    diff: {change['path']}: {old} -> {new}")
    lines += [f"    error: {error}" for error in record["errors"]]
    if _content_missing(record):
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
