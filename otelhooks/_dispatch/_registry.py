"""Hook registration: global hooks and per-operation hooks, each scope an immutable
:class:`~otelhooks._dispatch._match_index.Index` swapped whole under a lock, so reads take none.

Ordering rule: hooks run in registration order. Each registration gets a sequence number from one
counter, so a global hook registered before an operation's hooks runs before them, and a global
hook registered later runs after them. How a scope answers which hooks match is
:mod:`otelhooks._dispatch._match_index`'s job.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from otelhooks._actions import build_hook
from otelhooks._dispatch._match_index import (
    EMPTY_INDEX,
    NO_EVENTS,
    NO_INTERCEPTS,
    Entries,
    Hooked,
    Index,
    Intercepts,
    ordered,
)
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook
from otelhooks._redact import register_env_secrets

__all__ = ["NO_EVENTS", "HookRegistry", "Hooked", "Intercepts"]

_seq = itertools.count()


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
        self._global = EMPTY_INDEX
        self._ops: dict[str, Index] = {}
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
            current = self._ops.get(operation_id, EMPTY_INDEX) if operation_id else self._global
            if operation_id and within and current is EMPTY_INDEX:
                own = {hook.id for hook in new}
                outer = self._ops.get(within, EMPTY_INDEX).hooks
                current = Index(tuple(e for e in outer if e[1].id not in own))
            if not new and not current.hooks:
                return new  # nothing to run: an empty scope would only slow every lookup
            seen = {h.id for _, h in current.hooks}
            for hook in new:
                if hook.id in seen:
                    raise ConfigError("duplicate hook id", hook_id=hook.id, field="id")
                seen.add(hook.id)
            # mode: disabled: validated and bound like any hook, never matched (never runs)
            runs = tuple((next(_seq), h) for h in new if h.mode != "disabled")
            index = Index(current.hooks + runs)
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
            self._global = Index(kept)
            self.version += 1
            return True

    def clear(self) -> None:
        with self._lock:
            self._global = EMPTY_INDEX
            self._ops.clear()
            self.version += 1

    def hooks(self, *, operation_id: str | None = None) -> list[Hook]:
        index = self._ops.get(operation_id, EMPTY_INDEX) if operation_id else self._global
        return [h for _, h in index.hooks]

    def has_any(self) -> bool:
        return bool(self._global.hooks) or bool(self._ops)

    def has_own(self, operation_id: str) -> bool:
        """Whether ``operation_id`` has hooks registered for it alone."""
        return operation_id in self._ops

    def operation_ids(self) -> list[str]:
        """The operations that have hooks registered for them alone (open ones: an operation's
        hooks are removed when it ends)."""
        with self._lock:
            return list(self._ops)

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
            return NO_INTERCEPTS
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

    def _entries(self, event: str, values: tuple[str, ...], operation_id: str | None) -> Entries:
        found = self._global.match(event, values)
        if operation_id is not None and self._ops:
            op = self._ops.get(operation_id)
            if op is not None:
                extra = op.match(event, values)
                if extra:
                    return ordered(found + extra) if found else extra
        return found
