"""The link between a CLI's own tool span and the bridge's ``execute_tool`` span, in either order.

The two spans of one tool use reach ``serve`` by different roads: the CLI exports its own
spans at exit or on its batch schedule, the bridge (one process or the fast client's daemon) on
its own. Whichever comes second carries the link:

- **the bridge's span first**: the CLI's tool span is moved into the session's trace with a
  link to it and ``otelhooks.hook.span_id`` (:func:`~._joins.moved`);
- **the CLI's tool span first**: :class:`AgentToolSpans` remembers its span id by session and
  tool use id, and the bridge's span, when it comes, is exported as :func:`linked_to_agent`'s
  copy: a link to each remembered span (``otelhooks.link.relation=agent_tool``) and
  ``otelhooks.agent.span_ids`` naming them.

Codex puts its ``call_id`` on more than one span of a tool use (``exec_command``,
``unified_exec.exec_command``, ``guardian_scoring_observation`` in one shell call), so a tool
use keeps up to :data:`MAX_SPANS_PER_TOOL` of them.

Bounds (a client chooses session ids, tool use ids and how many spans name them): at most
``remember`` tool uses and ``max_bytes`` of their ids, oldest forgotten first (reason
``join_forgotten``); a session or tool use id longer than :data:`~._joins.MAX_SESSION_ID`
characters is not remembered (``id_too_long``); spans of one tool use past
:data:`MAX_SPANS_PER_TOOL` are not remembered (``too_many_spans``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext, TraceFlags

from otelhooks import _semconv as sc
from otelhooks._span_copy import altered
from otelhooks.integrations.coding_agents._joins import MAX_SESSION_ID

__all__ = [
    "MAX_SPANS_PER_TOOL",
    "AgentToolSpans",
    "linked_to_agent",
]

# on the bridge's execute_tool span: the span ids of the CLI's own spans of the same tool use
MAX_SPANS_PER_TOOL: Final = 8
_ENTRY_BYTES: Final = 128  # what an entry costs beyond its ids (tuple, key, dict slot)
_SPAN_BYTES: Final = 32  # one remembered span id


class AgentToolSpans:
    """The CLI's own tool spans not linked yet, by ``(session, tool use id)``, most recent
    last (bounds in the module doc; ``on_drop(count, reason)`` counts each drop).

    Example:
        >>> spans = AgentToolSpans()
        >>> spans.remember("s-1", "call_1", 0xA)
        >>> spans.take("s-1", "call_1")
        (10,)
        >>> spans.take("s-1", "call_1")
        ()
    """

    def __init__(
        self,
        remember: int = 65_536,
        max_bytes: int = 16 * 1024 * 1024,
        on_drop: Callable[[int, str], None] | None = None,
    ) -> None:
        self.remember_at_most = remember
        self.max_bytes = max_bytes
        self.on_drop = on_drop
        self._spans: OrderedDict[tuple[str, str], tuple[int, ...]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> tuple[int, int]:
        """Tool uses remembered and the bytes accounted for them."""
        with self._lock:
            return len(self._spans), self._bytes

    def remember(self, session: str, use_id: str, span_id: int) -> None:
        """Remember that ``span_id`` is a span of this tool use (until :meth:`take`)."""
        if len(session) > MAX_SESSION_ID or len(use_id) > MAX_SESSION_ID:
            self._drop(1, "id_too_long")
            return
        key = (session, use_id)
        forgot = 0
        with self._lock:
            known = self._spans.get(key)
            if known is None:
                self._bytes += _ENTRY_BYTES + len(session) + len(use_id)
                known = ()
            elif span_id in known:
                return
            elif len(known) >= MAX_SPANS_PER_TOOL:
                known = None
            if known is not None:
                self._spans[key] = (*known, span_id)
                self._bytes += _SPAN_BYTES
                self._spans.move_to_end(key)
            while self._spans and (
                len(self._spans) > self.remember_at_most or self._bytes > self.max_bytes
            ):
                old, ids = self._spans.popitem(last=False)
                self._bytes -= _ENTRY_BYTES + len(old[0]) + len(old[1]) + _SPAN_BYTES * len(ids)
                forgot += 1
        if known is None:
            self._drop(1, "too_many_spans")
        if forgot:
            self._drop(forgot, "join_forgotten")

    def take(self, session: str, use_id: str) -> tuple[int, ...]:
        """The remembered spans of this tool use, forgotten now (they are linked once)."""
        with self._lock:
            ids = self._spans.pop((session, use_id), ())
            if ids:
                self._bytes -= _ENTRY_BYTES + len(session) + len(use_id) + _SPAN_BYTES * len(ids)
        return ids

    def _drop(self, count: int, reason: str) -> None:
        if self.on_drop is not None:
            self.on_drop(count, reason)


def linked_to_agent(span: ReadableSpan, agent_spans: Sequence[int]) -> ReadableSpan:
    """A copy of the bridge's ``span`` linked to the CLI's spans ``agent_spans`` of the same
    tool use (in the same trace: the CLI's spans were moved into the session's), named by
    ``otelhooks.agent.span_ids``."""
    ctx = span.context
    assert ctx is not None
    attrs = dict(span.attributes or {})
    attrs[sc.AGENT_SPAN_IDS] = tuple(format(s, "016x") for s in agent_spans)
    flags = TraceFlags(TraceFlags.SAMPLED)
    links = [
        *span.links,
        *(
            Link(SpanContext(ctx.trace_id, s, False, flags), {sc.LINK_RELATION: sc.LINK_AGENT_TOOL})
            for s in agent_spans
        ),
    ]
    return altered(span, attributes=attrs, links=links)
