"""Which hooks match an event: one scope's hooks, indexed so matching is not a scan.

Matching is resolved once per set of matcher values, for every event at once, into a *plan*
(event -> matching hooks, in registration order and without repeats). Most values match nothing
but the match-everything hooks: no hook names them, and none of them starts with the anchored
literal prefix of a regex hook (``^db/``, ``/^shell\\/.*$/``). Telling so takes a set lookup and a
dictionary read per value, whatever the number of hooks, and such values share one precomputed
plan that is never cached, so a stream of new tool names neither scans the hooks nor churns a
cache. Other values get a plan of their own, cached until the registrations change (cleared when
full), which fills an event on first use from that event's hooks matching everything, the hooks
naming one of the values, and, unless no prefix could match, a scan of its regex hooks. The
latest (values, plan) pair is kept too, so the several events one tool call asks about with the
same values tuple cost one identity check each, and a plan of its own is looked up before any
name or prefix is tested: tools that take turns cost one dictionary read a call. A plan also
keeps, per intercept event, what that event's chain reads (:class:`Intercepts`), so a chain's
set-up is one lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from otelhooks._hooks import Hook, HookFacts
from otelhooks._matchers import MatchKind

__all__ = [
    "EMPTY_INDEX",
    "NO_EVENTS",
    "NO_INTERCEPTS",
    "Entries",
    "Hooked",
    "Index",
    "Intercepts",
    "ordered",
]

_CACHE_LIMIT = 4096
_IDS_LIMIT = 64  # per plan: one entry per events tuple a caller asks about (program constants)


@dataclass(slots=True)
class _Bucket:
    all: list[tuple[int, Hook]] = field(default_factory=list)
    names: dict[str, list[tuple[int, Hook]]] = field(default_factory=dict)
    regex: list[tuple[int, Hook]] = field(default_factory=list)

    def add(self, seq: int, hook: Hook) -> None:
        m = hook.compiled_matcher
        if m.kind is MatchKind.ALL:
            self.all.append((seq, hook))
        elif m.kind is MatchKind.NAMES:
            for name in m.names:
                self.names.setdefault(name, []).append((seq, hook))
        else:
            self.regex.append((seq, hook))

    def match(self, values: tuple[str, ...], regex: bool) -> list[tuple[int, Hook]]:
        """The entries matching ``values``; ``regex=False`` skips the regex hooks (the caller's
        prefilter has ruled every one of them out)."""
        found = list(self.all)
        for v in values:
            found.extend(self.names.get(v, ()))
        if regex:
            found.extend(e for e in self.regex if e[1].compiled_matcher.matches(values))
        return found


Entries = tuple[tuple[int, Hook], ...]
_NONE: Entries = ()


def ordered(entries: Sequence[tuple[int, Hook]]) -> Entries:
    """Entries in registration order, each hook once (a name list can index one hook under
    several names, and one ``Hook`` object can be registered globally and for an operation)."""
    if len(entries) < 2:
        return tuple(entries)  # the common case: nothing to sort or dedupe
    seen: set[int] = set()
    out = []
    for entry in sorted(entries, key=_seq_of):
        if id(entry[1]) not in seen:
            seen.add(id(entry[1]))
            out.append(entry)
    return tuple(out)


def _seq_of(entry: tuple[int, Hook]) -> int:
    return entry[0]


class Hooked(dict[str, list[Hook]]):
    """The events of an action that have hooks, each with its hooks in registration order: an
    answer shared by every caller with the same values, so it cannot be changed. ``ids`` lists
    the ids of all those hooks, each once: the first event's, then each later event's not
    listed yet (what :meth:`HookRegistry.matched_ids` gives)."""

    __slots__ = ("ids",)

    def __init__(self, hooks: dict[str, list[Hook]] | None = None) -> None:
        super().__init__(hooks or {})
        ids: list[str] = []
        for event_hooks in self.values():
            ids.extend(h.id for h in event_hooks if h.id not in ids)
        self.ids = ids

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a registry answer is shared: copy it to change it")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only


class Intercepts:
    """What an intercept chain of one event reads of the hooks matching one set of values,
    worked out once and shared (read it, never change it).

    ``hooks``: every matching hook, in registration order; ``facts``: those that decide, as
    :class:`~otelhooks._hooks.HookFacts` (notifications observe, off the path); ``matched``:
    what each chain's verdict copies as its ``matched``: their ids, or when none decides the
    ids of the notifications; ``watched``: whether an enforcing (not permissive) hook that is
    handed the payload object decides (a Python function: ``HookFacts.hands_payload``), so a
    chain must tell its in-place changes: a chain of commands, webhooks, approvals and budgets
    copies and compares nothing.
    """

    __slots__ = ("facts", "hooks", "matched", "watched")

    def __init__(self, hooks: list[Hook]) -> None:
        self.hooks = hooks
        self.facts: tuple[HookFacts, ...] = tuple(f for h in hooks if not (f := h.facts).notifies)
        self.matched = tuple(f.id for f in self.facts) if self.facts else tuple(h.id for h in hooks)
        self.watched = any(f.hands_payload and not f.permissive for f in self.facts)


NO_INTERCEPTS: Final = Intercepts([])


class _Plan(dict[str, Entries]):
    """What one set of matcher values matches, for every event of one index: ``plan[event]``
    is the matching entries, ordered and unique (a plain dictionary read when known).

    A plan with ``index`` set fills an event on first use (concurrent fills compute the same
    value, so they need no lock); one without is complete: an event it lacks matches nothing.
    ``on`` maps a tuple of events to those of them that have a matching hook, with their
    hooks; ``chains`` an intercept event to its :class:`Intercepts`.
    """

    __slots__ = ("chains", "index", "on", "regex", "subject")

    def __init__(
        self,
        known: Mapping[str, Entries],
        index: Index | None = None,
        values: tuple[str, ...] = (),
        regex: bool = False,
    ) -> None:
        super().__init__(known)
        self.on: dict[tuple[str, ...], Hooked] = {}
        self.chains: dict[str, Intercepts] = {}  # events the dispatcher names: a few
        self.index = index
        self.subject = values  # not "values": a dict's method
        self.regex = regex

    def __missing__(self, event: str) -> Entries:
        index = self.index
        bucket = index.buckets.get(event) if index is not None else None
        if bucket is None:
            return _NONE  # not stored: callers may ask about any string
        hit = ordered(bucket.match(self.subject, self.regex))
        self[event] = hit
        return hit

    def hooked(self, events: tuple[str, ...]) -> Hooked:
        hit = self.on.get(events)
        if hit is None:
            found = {e: [h for _, h in self[e]] for e in events}
            hit = Hooked({e: hooks for e, hooks in found.items() if hooks})
            if len(self.on) >= _IDS_LIMIT:
                self.on.clear()
            self.on[events] = hit
        return hit

    def intercepts(self, event: str) -> Intercepts:
        hit = self.chains.get(event)
        if hit is None:
            # Concurrent fills compute the same value, as for the entries themselves.
            hit = self.chains[event] = Intercepts([h for _, h in self[event]])
        return hit


class Index:
    """An immutable snapshot of a set of hooks, indexed by event, with a cache of plans.

    Most lookups are of values no hook names (a cold tool name included), so the index first
    asks, across all events at once, whether anything but the match-everything hooks could
    match: is a value one of the names any hook lists, or does it start with the anchored
    literal prefix of a regex hook (``^db/``; a regex without one always counts as a maybe)?
    No: the answer is ``base``, one complete plan shared by all such values and never cached,
    so a cold lookup costs a set lookup and a dictionary read per value, whatever the number
    of hooks. Yes: a plan of its own, scanning only the buckets of the events asked about, kept
    in ``plans`` (cleared when full). ``last`` holds the latest (values, plan) pair, for the
    several events one tool call asks about with the same values tuple.
    """

    __slots__ = ("base", "buckets", "hooks", "last", "names", "open_regex", "plans", "prefixes")

    def __init__(self, hooks: Entries) -> None:
        self.hooks = hooks
        self.buckets: dict[str, _Bucket] = {}
        for seq, hook in hooks:
            self.buckets.setdefault(hook.event, _Bucket()).add(seq, hook)
        names: set[str] = set()
        prefixes: list[str] = []
        open_regex = False
        for bucket in self.buckets.values():
            names.update(bucket.names)
            for _, hook in bucket.regex:
                found = hook.compiled_matcher.index_prefixes  # a tool's other name too
                if found is None:
                    open_regex = True
                else:
                    prefixes.extend(found)
        self.names = frozenset(names)
        # Prefixes by first character: one dictionary read rules most values out, instead of a
        # ``startswith`` per prefix.
        by_first: dict[str, list[str]] = {}
        for prefix in dict.fromkeys(prefixes):
            by_first.setdefault(prefix[0], []).append(prefix)
        self.prefixes = {first: tuple(group) for first, group in by_first.items()}
        self.open_regex = open_regex
        # Every event with hooks is listed, so a read of ``base`` never calls __missing__.
        self.base = _Plan({e: ordered(b.all) for e, b in self.buckets.items()})
        self.plans: dict[tuple[str, ...], _Plan] = {}
        self.last: tuple[tuple[str, ...] | None, _Plan] = (None, self.base)

    def plan(self, values: tuple[str, ...]) -> _Plan:
        last = self.last  # one read: another thread may replace the pair, never half of it
        if last[0] is values or last[0] == values:
            # Equal counts too: each call of the same tool asks with a tuple of its own.
            return last[1]
        # Values with a plan of their own were asked about before: one dictionary read, before
        # any name or prefix is tested (tools taking turns miss ``last`` at every call).
        plan = self.plans.get(values)
        if plan is None:
            plan = self.base
            if self.open_regex:
                plan = self._plan(values)
            else:
                # Inline, not a helper per value: this loop is all a cold lookup costs.
                names, prefixes = self.names, self.prefixes
                for v in values:
                    if v in names:
                        plan = self._plan(values)
                        break
                    if prefixes and v:  # v[0], not v[:1]: indexing is the cheaper of the two
                        group = prefixes.get(v[0])
                        if group is not None and v.startswith(group):
                            plan = self._plan(values)
                            break
        self.last = (values, plan)
        return plan

    @staticmethod
    def _prefixed(value: str, prefixes: dict[str, tuple[str, ...]]) -> bool:
        """Whether ``value`` starts with the anchored prefix of a regex hook (no prefix is
        empty, so neither does an empty value)."""
        group = prefixes.get(value[:1])
        return group is not None and value.startswith(group)

    def _plan(self, values: tuple[str, ...]) -> _Plan:
        plan = self.plans.get(values)
        if plan is None:
            prefixes = self.prefixes
            regex = self.open_regex or any(self._prefixed(v, prefixes) for v in values)
            plan = _Plan({}, self, values, regex)
            if len(self.plans) >= _CACHE_LIMIT:
                self.plans.clear()
            self.plans[values] = plan
        return plan

    def match(self, event: str, values: tuple[str, ...]) -> Entries:
        if event not in self.buckets:
            return _NONE
        return self.plan(values)[event]


EMPTY_INDEX = Index(())
NO_EVENTS: Final = Hooked()  # the answer when no hook is registered
