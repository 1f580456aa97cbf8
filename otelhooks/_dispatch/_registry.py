"""Hook registration: global hooks and per-operation hooks, indexed so matching is not a scan.

Ordering rule: hooks run in registration order. Each registration gets a sequence number from one
counter, so a global hook registered before an operation's hooks runs before them, and a global
hook registered later runs after them.

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

import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from otelhooks._actions import build_hook
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook, HookFacts
from otelhooks._matchers import MatchKind
from otelhooks._redact import register_env_secrets

__all__ = ["NO_EVENTS", "HookRegistry", "Hooked", "Intercepts"]

_seq = itertools.count()
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


_Entries = tuple[tuple[int, Hook], ...]
_NONE: _Entries = ()


def _ordered(entries: Sequence[tuple[int, Hook]]) -> _Entries:
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


_NO_INTERCEPTS: Final = Intercepts([])


class _Plan(dict[str, _Entries]):
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
        known: Mapping[str, _Entries],
        index: _Index | None = None,
        values: tuple[str, ...] = (),
        regex: bool = False,
    ) -> None:
        super().__init__(known)
        self.on: dict[tuple[str, ...], Hooked] = {}
        self.chains: dict[str, Intercepts] = {}  # events the dispatcher names: a few
        self.index = index
        self.subject = values  # not "values": a dict's method
        self.regex = regex

    def __missing__(self, event: str) -> _Entries:
        index = self.index
        bucket = index.buckets.get(event) if index is not None else None
        if bucket is None:
            return _NONE  # not stored: callers may ask about any string
        hit = _ordered(bucket.match(self.subject, self.regex))
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


class _Index:
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

    def __init__(self, hooks: _Entries) -> None:
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
        self.base = _Plan({e: _ordered(b.all) for e, b in self.buckets.items()})
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

    def match(self, event: str, values: tuple[str, ...]) -> _Entries:
        if event not in self.buckets:
            return _NONE
        return self.plan(values)[event]


_EMPTY = _Index(())
NO_EVENTS: Final = Hooked()  # the answer when no hook is registered


class HookRegistry:
    """Global and per-operation hooks. Thread-safe; reads take no lock (snapshots are swapped).

    Example:
        >>> reg = HookRegistry()
        >>> _ = reg.register([{"id": "a", "type": "afterStep", "handler": print}])
        >>> [h.id for h in reg.match("after_step", ("*",))]
        ['a']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._global = _EMPTY
        self._ops: dict[str, _Index] = {}
        # Bumped by every change: a caller holding an answer (a tool call's hooked events) asks
        # again only when this moved, instead of re-matching at every point of the call.
        self.version = 0

    def register(
        self,
        hooks: Iterable[Hook | Mapping[str, Any]],
        *,
        operation_id: str | None = None,
        within: str | None = None,
    ) -> list[Hook]:
        """Validate and add hooks, globally or for one operation. All or nothing.

        ``within`` names the operation a new operation runs inside (a sub-agent's run inside
        the run that called it): the new one starts with that operation's hooks, in their
        order, less those whose id it registers itself. A guard given to a run then also
        guards the sub-agents it starts, which act on its behalf.

        Raises:
            ConfigError: a hook is invalid or its id is already registered in that scope.

        Example:
            >>> reg = HookRegistry()
            >>> _ = reg.register([{"id": "no-rm", "type": "beforeToolCall", "matcher": "rm",
            ...                    "handler": print}], operation_id="op-1")
            >>> _ = reg.register([], operation_id="op-2", within="op-1")
            >>> [h.id for h in reg.match("before_tool_call", ("rm",), operation_id="op-2")]
            ['no-rm']
        """
        new = [build_hook(h) for h in hooks]
        for hook in new:
            # A webhook's allowedEnvVars hold tokens: known secrets from the moment the hook can
            # fire, so an error quoting one (a command printing its environment) is scrubbed.
            register_env_secrets(getattr(hook.action, "secret_env", ()))
        with self._lock:
            current = self._ops.get(operation_id, _EMPTY) if operation_id else self._global
            if operation_id and within and current is _EMPTY:
                own = {hook.id for hook in new}
                outer = self._ops.get(within, _EMPTY).hooks
                current = _Index(tuple(e for e in outer if e[1].id not in own))
            if not new and not current.hooks:
                return new  # nothing to run: an empty scope would only slow every lookup
            seen = {h.id for _, h in current.hooks}
            for hook in new:
                if hook.id in seen:
                    raise ConfigError("duplicate hook id", hook_id=hook.id, field="id")
                seen.add(hook.id)
            # mode: disabled: validated and bound like any hook, never matched (never runs)
            runs = tuple((next(_seq), h) for h in new if h.mode != "disabled")
            index = _Index(current.hooks + runs)
            if operation_id:
                self._ops[operation_id] = index
            else:
                self._global = index
            self.version += 1
        return new

    def unregister(self, operation_id: str) -> None:
        """Remove every hook registered for ``operation_id`` (at completion, error or interrupt)."""
        with self._lock:
            if self._ops.pop(operation_id, None) is not None:
                self.version += 1

    def remove(self, hook_id: str) -> bool:
        """Remove one global hook by id. Returns whether it was there."""
        with self._lock:
            kept = tuple(e for e in self._global.hooks if e[1].id != hook_id)
            if len(kept) == len(self._global.hooks):
                return False
            self._global = _Index(kept)
            self.version += 1
            return True

    def clear(self) -> None:
        with self._lock:
            self._global = _EMPTY
            self._ops.clear()
            self.version += 1

    def hooks(self, *, operation_id: str | None = None) -> list[Hook]:
        index = self._ops.get(operation_id, _EMPTY) if operation_id else self._global
        return [h for _, h in index.hooks]

    def has_any(self) -> bool:
        return bool(self._global.hooks) or bool(self._ops)

    def has_own(self, operation_id: str) -> bool:
        """Whether ``operation_id`` has hooks registered for it alone."""
        return operation_id in self._ops

    def may_match(self, event: str, values: tuple[str, ...] | None = None) -> list[Hook]:
        """Every hook that could match ``event`` in any operation: the global hooks whose
        matcher accepts one of ``values`` (all of the event's, whatever their matcher, when
        ``values`` is ``None``) and every operation's hooks for the event, in no set order.

        For a caller deciding where an event may run before it knows the operation (or the
        values) it will be dispatched with: an empty answer means no hook can run for it.

        Example:
            >>> reg = HookRegistry()
            >>> _ = reg.register([{"id": "g", "type": "PreToolUse", "matcher": "Bash",
            ...                    "handler": print}])
            >>> [h.id for h in reg.may_match("before_tool_call", ("Read",))]
            []
            >>> [h.id for h in reg.may_match("before_tool_call")]
            ['g']
        """
        index = self._global
        if values is None:
            bucket = index.buckets.get(event)
            found = [h for _, h in index.hooks if h.event == event] if bucket is not None else []
        else:
            found = [h for _, h in index.match(event, values)]
        for op in list(self._ops.values()):  # a copy: registrations may change the dict
            if event in op.buckets:
                found.extend(h for _, h in op.hooks if h.event == event)
        return found

    def match(
        self, event: str, values: tuple[str, ...], *, operation_id: str | None = None
    ) -> list[Hook]:
        """Hooks for ``event`` whose matcher accepts one of ``values``, in registration order."""
        return [h for _, h in self._entries(event, values, operation_id)]

    def intercepts(
        self, event: str, values: tuple[str, ...], *, operation_id: str | None = None
    ) -> Intercepts:
        """What :meth:`match` finds, as an intercept chain reads it: cached with the values'
        plan unless an operation has hooks of its own for ``event`` (a shared answer: never
        change it)."""
        if operation_id is not None and self._ops:
            op = self._ops.get(operation_id)
            if op is not None and event in op.buckets:
                return Intercepts(self.match(event, values, operation_id=operation_id))
        index = self._global
        if event not in index.buckets:
            return _NO_INTERCEPTS
        last = index.last
        plan = last[1] if last[0] is values or last[0] == values else index.plan(values)
        return plan.intercepts(event)

    def any_match(
        self, event: str, values: tuple[str, ...], *, operation_id: str | None = None
    ) -> bool:
        """Whether :meth:`match` would find a hook (the cheap question the hot path asks)."""
        index = self._global
        if event in index.buckets:
            # The latest values' plan, read inline: the hot path's question (a bulk caller's
            # events each ask with an equal tuple of their own).
            last = index.last
            if (last[1] if last[0] is values or last[0] == values else index.plan(values))[event]:
                return True
        if operation_id is None or not self._ops:
            return False
        op = self._ops.get(operation_id)
        return op is not None and event in op.buckets and bool(op.plan(values)[event])

    def hooked(
        self, events: tuple[str, ...], values: tuple[str, ...], *, operation_id: str | None = None
    ) -> Hooked:
        """Those of ``events`` for which :meth:`any_match` is true, each with what
        :meth:`match` gives for it (one question for all the events of an action; cached with
        the values' plan, so the answer is shared: never change it)."""
        op = self._ops.get(operation_id) if operation_id is not None and self._ops else None
        if op is None:
            index = self._global
            if not index.buckets:
                return NO_EVENTS  # no hook at all: no plan to look for
            last = index.last
            # The latest plan answers the same or an equal values tuple (each call of a tool
            # asks with a tuple of its own), without index.plan's frame.
            plan = last[1] if last[0] is values or last[0] == values else index.plan(values)
            hit = plan.on.get(events)
            return hit if hit is not None else plan.hooked(events)
        found = {e: self.match(e, values, operation_id=operation_id) for e in events}
        return Hooked({e: hooks for e, hooks in found.items() if hooks})

    def matched_ids(
        self,
        events: tuple[str, ...],
        values: tuple[str, ...],
        *,
        operation_id: str | None = None,
    ) -> tuple[str, ...]:
        """Ids of the hooks matching any of ``events``: those of the first event in registration
        order, then each later event's hooks not listed yet, each once (``hooked(...).ids``)."""
        return tuple(self.hooked(events, values, operation_id=operation_id).ids)

    def _entries(self, event: str, values: tuple[str, ...], operation_id: str | None) -> _Entries:
        found = self._global.match(event, values)
        if operation_id is not None and self._ops:
            op = self._ops.get(operation_id)
            if op is not None:
                extra = op.match(event, values)
                if extra:
                    return _ordered(found + extra) if found else extra
        return found
