"""Which received spans are a coding agent's own telemetry, which session each belongs to, and
the span moved into that session's trace.

Each CLI exports its own OpenTelemetry differently (checked against the real CLIs):

- **Claude Code** (scope ``com.anthropic.claude_code...``, ``service.name`` ``claude-code``) puts
  ``session.id`` on every span.
- **Gemini CLI** (``service.name`` ``gemini-cli``) puts ``gen_ai.conversation.id`` on every span
  (and ``session.id`` on its resource).
- **Codex CLI** (``service.name`` ``codex_exec``, ``codex_tui`` ...) names the session
  (``conversation.id``, ``thread_id``, or a string ``thread.id``) on a few spans of a trace only
  (7 of ~450 in one run): a trace is its session's once **any** span of it says so, so the
  request's spans are read first (:meth:`TraceSessions.learn`) and each trace remembered
  (bounded) for the spans a later export sends.

A joined span keeps its span id and parent; only its trace id becomes the session's
(:func:`~otelhooks.integrations.coding_agents._spans.session_trace_id`, the trace of the hook
spans), the original kept as ``{agent}.trace_id`` (``claude_code.trace_id`` ...).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext, TraceFlags

from otelhooks import _semconv as sc
from otelhooks._span_copy import altered
from otelhooks.integrations.coding_agents._spans import BRIDGE_SCOPE, session_trace_id

__all__ = [
    "AGENT_TELEMETRY",
    "MAX_SESSION_ID",
    "AgentTelemetry",
    "TraceSessions",
    "agent_of",
    "moved",
]


def _service(span: ReadableSpan) -> str:
    value = span.resource.attributes.get("service.name") if span.resource else None
    return value if isinstance(value, str) else ""


def _scope(span: ReadableSpan) -> str:
    return span.instrumentation_scope.name if span.instrumentation_scope else ""


def _text(attrs: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class AgentTelemetry:
    """How one CLI's spans are told apart and which session a span names.

    Attributes:
        agent: the CLI (``claude-code``, ``codex``, ``gemini-cli``).
        original: the attribute that keeps a joined span's own trace id.
        owns: whether a received span is this CLI's.
        session: the session a span itself names (``None``: it names none).
        per_trace: a session named by one span holds for its whole trace (Codex).
        tool_use: the attribute naming the hook's tool use id on a tool span, if any.
    """

    agent: str
    original: str
    owns: Callable[[ReadableSpan], bool]
    session: Callable[[ReadableSpan], str | None]
    per_trace: bool = False
    tool_use: tuple[str, ...] = ()


def _claude_session(span: ReadableSpan) -> str | None:
    return _text(span.attributes or {}, "session.id")


def _gemini_session(span: ReadableSpan) -> str | None:
    own = _text(span.attributes or {}, sc.GEN_AI_CONVERSATION_ID)
    resource = span.resource.attributes if span.resource else {}
    return own or _text(resource, "session.id")


def _codex_session(span: ReadableSpan) -> str | None:
    return _text(span.attributes or {}, "conversation.id", "thread_id", "thread.id")


AGENT_TELEMETRY: tuple[AgentTelemetry, ...] = (
    AgentTelemetry(
        "claude-code",
        "claude_code.trace_id",
        lambda s: _scope(s).startswith("com.anthropic.claude_code") or _service(s) == "claude-code",
        _claude_session,
        tool_use=("tool_use_id", sc.GEN_AI_TOOL_CALL_ID),
    ),
    AgentTelemetry("gemini-cli", "gemini_cli.trace_id", lambda s: _service(s) == "gemini-cli",
                   _gemini_session),
    AgentTelemetry(
        "codex",
        "codex.trace_id",
        lambda s: _service(s).startswith("codex"),
        _codex_session,
        per_trace=True,
        tool_use=("call_id",),
    ),
)  # fmt: skip


def agent_of(span: ReadableSpan) -> AgentTelemetry | None:
    """The CLI whose telemetry ``span`` is, if any (the bridge's spans, whose ``service.name``
    is the CLI's, ``codex`` ..., are nobody's)."""
    if _scope(span) == BRIDGE_SCOPE:
        return None
    return next((a for a in AGENT_TELEMETRY if a.owns(span)), None)


# a session id longer than this is not remembered for a trace (the CLIs' ids are UUIDs): the
# memory stays within remember x this many characters whatever a client sends
MAX_SESSION_ID: Final = 1024


class TraceSessions:
    """The session of each Codex trace seen, most recent last, at most ``remember`` traces
    (oldest forgotten; ``on_forget`` counts each), of session ids up to
    :data:`MAX_SESSION_ID` characters."""

    def __init__(self, remember: int = 65_536, on_forget: Callable[[], None] | None = None):
        self.remember = remember
        self.on_forget = on_forget
        self._traces: OrderedDict[int, str] = OrderedDict()
        self._lock = threading.Lock()

    def learn(self, spans: Sequence[ReadableSpan]) -> None:
        """Read which session each per-trace CLI's trace in ``spans`` belongs to."""
        found: dict[int, str] = {}
        for span in spans:
            agent = agent_of(span)
            if agent is None or not agent.per_trace or span.context is None:
                continue
            session = agent.session(span)
            if session is not None and len(session) <= MAX_SESSION_ID:
                found.setdefault(span.context.trace_id, session)
        if not found:
            return
        forgot = 0
        with self._lock:
            for trace_id, session in found.items():
                self._traces[trace_id] = session
                self._traces.move_to_end(trace_id)
            while len(self._traces) > self.remember:
                self._traces.popitem(last=False)
                forgot += 1
        for _ in range(forgot if self.on_forget is not None else 0):
            assert self.on_forget is not None
            self.on_forget()

    def session(self, agent: AgentTelemetry, span: ReadableSpan) -> str | None:
        """The session ``span`` belongs to: its own, or its trace's (per-trace CLIs)."""
        own = agent.session(span)
        if own is not None or not agent.per_trace or span.context is None:
            return own
        with self._lock:
            return self._traces.get(span.context.trace_id)


def moved(
    span: ReadableSpan, agent: AgentTelemetry, session: str, hook_span: int | None
) -> ReadableSpan:
    """``span`` in ``session``'s trace (its own trace id kept as ``agent.original``), linked to
    the hook's ``execute_tool`` span ``hook_span`` when there is one."""
    ctx = span.context
    assert ctx is not None
    trace_id = session_trace_id(session)
    attrs = dict(span.attributes or {})
    attrs[agent.original] = format(ctx.trace_id, "032x")
    links = list(span.links)
    if hook_span is not None:
        attrs[sc.HOOK_SPAN_ID] = format(hook_span, "016x")
        linked = SpanContext(trace_id, hook_span, False, TraceFlags(TraceFlags.SAMPLED))
        links.append(Link(linked, {sc.LINK_RELATION: sc.LINK_HOOK_DECISION}))
    context = SpanContext(trace_id, ctx.span_id, ctx.is_remote, ctx.trace_flags, ctx.trace_state)
    parent = span.parent
    if parent is not None:
        parent = SpanContext(trace_id, parent.span_id, True, parent.trace_flags)
    return altered(span, context=context, parent=parent, attributes=attrs, links=links)
