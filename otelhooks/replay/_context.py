"""What a recorded span inherits from its ancestors, kept small enough to stream a recording."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from otelhooks import _semconv as sc

__all__ = ["SpanContext", "reached_limit"]

_NO_FACTS: dict[str, str] = {}
# otelhooks' fingerprint of a call's arguments (otelhooks.tool.args_fp): always 16 hex digits
_FINGERPRINT_DIGITS = 16
# The names a span's own name repeats (span names are not cut): operation -> attribute
_NAMED = {sc.OP_EXECUTE_TOOL: sc.GEN_AI_TOOL_NAME, sc.OP_INVOKE_AGENT: sc.GEN_AI_AGENT_NAME}


def cut(text: Any, size: Any, encoding: str | None) -> TypeGuard[str]:
    """Whether a recorded ``text`` is shorter than the ``size`` recorded beside it (bytes in
    ``encoding``, else characters): the exporter's attribute length limit cut it."""
    if not isinstance(text, str) or not isinstance(size, int) or len(text) >= size:
        return False  # as long as the size, in characters: in bytes too
    return encoding is None or len(text.encode(encoding, "surrogatepass")) < size


def _recorded_limit(name: str, attrs: Mapping[str, Any]) -> int | None:
    """The attribute length limit (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``) a span shows it was
    recorded under: the length of a value of it that is shorter than a whole copy says (its
    span name, its recorded size, the fingerprint's 16 digits); None when none is."""
    limit = None
    op, _, whole = name.partition(" ")
    named = attrs.get(_NAMED.get(op, ""))
    if isinstance(named, str) and named != whole and whole.startswith(named):
        limit = len(named)
    fingerprint = attrs.get(sc.TOOL_ARGS_FINGERPRINT)
    if isinstance(fingerprint, str) and len(fingerprint) < _FINGERPRINT_DIGITS:
        limit = min(limit or _FINGERPRINT_DIGITS, len(fingerprint))
    args = attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
    if cut(args, attrs.get(sc.TOOL_ARGS_SIZE), "utf-8"):
        limit = min(limit or len(args), len(args))
    result = attrs.get(sc.GEN_AI_TOOL_CALL_RESULT)
    if cut(result, attrs.get(sc.TOOL_RESULT_SIZE), None):
        limit = min(limit or len(result), len(result))
    return limit


def reached_limit(
    span: Mapping[str, Any], attrs: Mapping[str, Any], checked: Iterable[str]
) -> str | None:
    """The first attribute of ``checked`` (as ``key 'value'``) whose value may have been cut
    by the attribute length limit: as long as the limit the recording's resource says
    (``otelhooks.attribute_value_length_limit``: every provider otelhooks makes writes it),
    else the one ``span`` (its name, its ``attrs``) shows it was recorded under. A span of a
    recording that says no limit and that shows no cut value cannot show that its others were
    not: None.

    Example:
        >>> reached_limit({"name": "invoke_agent research-assistant"}, {
        ...     "gen_ai.agent.name": "research-ass", "gen_ai.conversation.id": "session-0123"},
        ...     ["gen_ai.conversation.id"])
        "gen_ai.conversation.id 'session-0123'"
        >>> reached_limit({"resource": {"otelhooks.attribute_value_length_limit": 12}},
        ...     {"gen_ai.conversation.id": "session-0123"}, ["gen_ai.conversation.id"])
        "gen_ai.conversation.id 'session-0123'"
    """
    resource = span.get("resource")
    limit = resource.get(sc.ATTRIBUTE_VALUE_LENGTH_LIMIT) if isinstance(resource, dict) else None
    if type(limit) is not int or limit < 0:  # the recording does not say it
        limit = _recorded_limit(str(span.get("name", "")), attrs)
        if limit is None:
            return None
    for attr in checked:
        value = attrs.get(attr)
        if isinstance(value, str) and len(value) >= limit:
            return f"{attr} {value!r}"
    return None


# A span (or an ancestry) walked further than this has a cycle: a malformed file.
_DEEPEST = 10_000


class _Node:
    """A span added, or named as a parent and not added yet (``known`` false). A span with no
    facts of its own whose parent was added or named first is not given a node: it inherits
    exactly what its parent does, so its id stands for its parent's node (and says it was
    given out: see :meth:`SpanContext._add`)."""

    __slots__ = ("complete", "given", "inherited", "key", "known", "own", "parent")

    def __init__(self, key: tuple[str, str]) -> None:
        self.key = key
        self.parent: _Node | None = None
        self.own = _NO_FACTS
        self.known = False
        self.given = False  # the span was given out to be replayed (not only its ancestry read)
        self.complete = False  # it and every ancestor added
        self.inherited: dict[str, str] | None = None  # what of() answered


class SpanContext:
    """Facts a span inherits from its ancestors: agent, operation, session, user; and
    ``cut``, the first of them that the attribute length limit may have cut (``key 'value'``).

    Only what that needs is kept of each span added (its parent and those few attributes), so
    a recording can be streamed without being held: each span is added as it is read, and its
    events are replayed once :meth:`complete` says its ancestry is known. A span id added twice
    keeps what it was first added with (a retried export writes the same span again), so the
    answer for a complete span never changes.

    A span that carries none of the facts (a tool call) and whose parent was added or named
    before it costs one entry: its id, standing for its parent's.

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
    facts = tuple(attr for attr, _ in _KEYS)
    """The attributes of the facts, in the order they are looked at."""
    wanted = frozenset(facts)
    """The attributes :meth:`add` reads (what a first pass needs to keep of a span)."""

    def __init__(self) -> None:
        # trace id -> span id -> node: a span id is kept once, in no tuple of its own
        self._traces: dict[str, dict[str, _Node]] = {}

    def add(self, span: Mapping[str, Any]) -> None:
        """Remember ``span``'s parent and its own facts."""
        self._add(span)

    def _add(
        self, span: Mapping[str, Any], ancestry_only: bool = False
    ) -> tuple[tuple[str, str], bool]:
        # Add, returning the span's (trace id, span id), which the stream keys its spans by,
        # and whether it is new: not given out before (the same trace id and span id read
        # again is the same span: a retried export wrote it twice, or two files hold it).
        # ``ancestry_only``: added by a first pass that reads the ancestry, not given out
        # (Spans past its bound); such a span gets a node of its own, which the stream then
        # marks given, instead of standing for its parent's.
        trace, span_id = str(span.get("traceId", "")), str(span.get("spanId", ""))
        key = (trace, span_id)
        nodes = self._traces.get(trace)
        if nodes is None:
            nodes = self._traces[trace] = {}
        node = nodes.get(span_id)
        if node is not None:
            if node.key[1] != span_id:
                return key, False  # standing for its parent's node: added and given out before
            if node.known:
                if node.given or ancestry_only:
                    return key, False
                node.given = True  # its ancestry was read first: given out now, once
                return key, True
        attrs = span.get("attributes") or _NO_FACTS
        # most spans (tool calls) carry none of the facts
        own = _NO_FACTS if self.wanted.isdisjoint(attrs) else self._own(span)
        parent_id = span.get("parentSpanId")
        parent = None
        # (its own parent: a root, as a walk would end there)
        if isinstance(parent_id, str) and parent_id and parent_id != span_id:
            parent = nodes.get(parent_id)
            if parent is None:
                parent = nodes[parent_id] = _Node((trace, parent_id))
        if node is None:
            if parent is not None and own is _NO_FACTS and not ancestry_only:
                nodes[span_id] = parent
                return key, True
            node = nodes[span_id] = _Node(key)
        node.parent, node.own, node.known = parent, own, True
        node.given = not ancestry_only
        return key, True

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

    def _waiting_for_key(self, key: tuple[str, str]) -> tuple[str, str] | None:
        # waiting_for by the span's (trace id, span id), as _add returns it
        node = self._node(*key)
        if node is None:
            return key
        walked: list[_Node] = []
        while not node.complete:
            if not node.known:
                return node.key
            walked.append(node)
            if node.parent is None or len(walked) > _DEEPEST:  # a root, or a cycle
                break
            node = node.parent
        for done in walked:
            done.complete = True
        return None

    def of(self, span: Mapping[str, Any]) -> dict[str, str]:
        """What ``span`` inherits (its own facts win over its ancestors')."""
        trace, span_id = str(span.get("traceId", "")), str(span.get("spanId", ""))
        node = self._node(trace, span_id)
        if node is not None and (node.known or node.key[1] != span_id):
            return self._inherited(node)
        # not added: read the span itself
        parent_id = span.get("parentSpanId")
        parent = self._node(trace, parent_id) if isinstance(parent_id, str) else None
        inherited = _NO_FACTS if parent is None else self._inherited(parent)
        own = self._own(span)
        return {**inherited, **own} if own else inherited

    def _node(self, trace: str, span_id: str) -> _Node | None:
        nodes = self._traces.get(trace)
        return None if nodes is None else nodes.get(span_id)

    def _inherited(self, node: _Node) -> dict[str, str]:
        # Iterative walk up to the first ancestor already answered for (deep trees, no
        # recursion); what is found is remembered on every node walked.
        chain: list[_Node] = []
        inherited = _NO_FACTS
        walk: _Node | None = node
        while walk is not None and walk.known:
            if walk.inherited is not None:
                inherited = walk.inherited
                break
            chain.append(walk)
            if len(chain) > _DEEPEST:  # a cycle in a malformed file
                break
            walk = walk.parent
        for step in reversed(chain):
            if step.own:
                inherited = {**inherited, **step.own}
            step.inherited = inherited
        return inherited

    def _own(self, span: Mapping[str, Any]) -> dict[str, str]:
        attrs = span.get("attributes") or {}
        if self.wanted.isdisjoint(attrs):  # most spans (tool calls) carry none of them
            return _NO_FACTS
        own: dict[str, str] = {}
        for attr, field in self._KEYS:
            value = attrs.get(attr)
            if isinstance(value, str) and value:
                own[field] = value
        # A fact the attribute length limit may have cut is inherited as "cut": what it is
        # (judged on the attributes a first pass keeps, so that both passes answer alike).
        kept = {attr: attrs[attr] for attr in self.facts if attr in attrs}
        cut_fact = reached_limit(span, kept, kept)
        if cut_fact is not None:
            own["cut"] = cut_fact
        return own or _NO_FACTS
