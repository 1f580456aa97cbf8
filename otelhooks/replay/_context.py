"""What a recorded span inherits from its ancestors, kept small enough to stream a recording."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from otelhooks import _semconv as sc

__all__ = ["SpanContext"]


class SpanContext:
    """Facts a span inherits from its ancestors: agent, operation, session, user.

    Only what that needs is kept of each span added (its parent and those few attributes), so
    a recording can be streamed without being held: each span is added as it is read, and its
    events are replayed once :meth:`complete` says its ancestry is known. A span id added twice
    keeps what it was first added with (a retried export writes the same span again), so an
    answer once given never changes.

    Example:
        >>> context = SpanContext()
        >>> context.add({"traceId": "t", "spanId": "a", "attributes": {"gen_ai.agent.name": "x"}})
        >>> context.of({"traceId": "t", "spanId": "b", "parentSpanId": "a"})
        {'agent': 'x'}
    """

    _KEYS = (
        (sc.GEN_AI_AGENT_NAME, "agent"),
        (sc.GEN_AI_AGENT_ID, "agentId"),
        (sc.OPERATION_ID, "operationId"),
        (sc.PARENT_OPERATION_ID, "parentOperationId"),
        (sc.GEN_AI_CONVERSATION_ID, "sessionKey"),
        (sc.SESSION_ID, "sessionKey"),
        (sc.USER_ID, "userId"),
    )
    _NO_FACTS: dict[str, str] = {}
    wanted = frozenset(attr for attr, _ in _KEYS)
    """The attributes :meth:`add` reads (what a first pass needs to keep of a span)."""

    def __init__(self) -> None:
        # (trace id, span id) -> (parent span id, the span's own facts)
        self._spans: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
        self._memo: dict[tuple[str, str], dict[str, str]] = {}
        self._complete: set[tuple[str, str]] = set()  # spans whose ancestors are all known

    def add(self, span: Mapping[str, Any]) -> None:
        """Remember ``span``'s parent and its own facts."""
        self._add(span)

    def _add(self, span: Mapping[str, Any]) -> tuple[str, str]:
        # add, returning the span's (trace id, span id): the stream keys its spans once
        attrs = span.get("attributes") or {}
        own = self._NO_FACTS
        if not self.wanted.isdisjoint(attrs):  # most spans (tool calls) carry none of them
            for attr, field in self._KEYS:
                value = attrs.get(attr)
                if isinstance(value, str) and value:
                    if own is self._NO_FACTS:
                        own = {}
                    own[field] = value
        trace = sys.intern(str(span.get("traceId", "")))
        key = (trace, str(span.get("spanId", "")))
        if key not in self._spans:
            parent = span.get("parentSpanId")
            self._spans[key] = (parent if isinstance(parent, str) else "", own)
        return key

    def complete(self, span: Mapping[str, Any]) -> bool:
        """Whether every ancestor of ``span`` has been added, up to one without a parent: what
        :meth:`of` says for it cannot change with spans added later.

        Example:
            >>> context = SpanContext()
            >>> child = {"traceId": "t", "spanId": "b", "parentSpanId": "a"}
            >>> context.add(child)
            >>> context.complete(child)
            False
            >>> context.add({"traceId": "t", "spanId": "a"})
            >>> context.complete(child)
            True
        """
        return self.waiting_for(span) is None

    def waiting_for(self, span: Mapping[str, Any]) -> tuple[str, str] | None:
        """The nearest ancestor of ``span`` not added yet, as (trace id, span id); None when
        :meth:`complete`.

        Example:
            >>> context = SpanContext()
            >>> context.add({"traceId": "t", "spanId": "b", "parentSpanId": "a"})
            >>> context.waiting_for({"traceId": "t", "spanId": "b"})
            ('t', 'a')
        """
        return self._waiting_for_key((str(span.get("traceId", "")), str(span.get("spanId", ""))))

    def _waiting_for_key(self, node: tuple[str, str]) -> tuple[str, str] | None:
        # waiting_for by the span's (trace id, span id), as _add returns it
        walked: list[tuple[str, str]] = []
        while node not in self._complete:
            known = self._spans.get(node)
            if known is None:
                return node
            walked.append(node)
            parent = known[0]
            if not parent or len(walked) > 10_000:  # a root, or a cycle in a malformed file
                break
            node = (node[0], parent)
        self._complete.update(walked)
        return None

    def of(self, span: Mapping[str, Any]) -> dict[str, str]:
        """What ``span`` inherits (its own facts win over its ancestors')."""
        key = (str(span.get("traceId", "")), str(span.get("spanId", "")))
        found = self._memo.get(key)
        if found is not None:
            return found
        known = self._spans.get(key)
        if known is not None and known[0] and not known[1]:
            # No facts of its own (a tool call): its parent's, remembered for the parent only
            # (a span that is no one's parent is asked about once).
            found = self._memo.get((key[0], known[0]))
            if found is not None:
                return found
        # Iterative walk up to the first ancestor already known (deep trees, no recursion).
        chain: list[tuple[tuple[str, str], dict[str, str]]] = []
        inherited: dict[str, str] = {}
        node: tuple[str, str] | None = key
        while node is not None:
            if node in self._memo:
                inherited = self._memo[node]
                break
            known = self._spans.get(node)
            if known is None and node == key:  # not added: read the span itself
                parent_id = span.get("parentSpanId")
                known = (parent_id if isinstance(parent_id, str) else "", self._own(span))
            if known is None:
                break
            parent, own = known
            chain.append((node, own))
            node = (node[0], parent) if parent else None
            if len(chain) > 10_000:  # a cycle in a malformed file
                break
        for node_key, own in reversed(chain):
            if own:
                inherited = {**inherited, **own}
            self._memo[node_key] = inherited
        return inherited

    def _own(self, span: Mapping[str, Any]) -> dict[str, str]:
        attrs = span.get("attributes") or {}
        own: dict[str, str] = {}
        for attr, field in self._KEYS:
            value = attrs.get(attr)
            if isinstance(value, str) and value:
                own[field] = value
        return own
