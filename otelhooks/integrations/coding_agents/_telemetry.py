"""The coding agents' own telemetry joined with the hook sessions of the same server.

**The join (decided here):** one trace per session. The hook route and the command bridge give
a session the trace id :func:`session_trace_id` of its ``session_id``; each CLI names that
session on its own spans (:mod:`._joins` says how: Claude Code's ``session.id``, Gemini CLI's
``gen_ai.conversation.id``, Codex's ``conversation.id`` on a few spans of each trace), so:

- **spans** (``/v1/traces``) of Claude Code (beta ``claude_code.interaction`` / ``llm_request`` /
  ``tool`` ...), Gemini CLI (``llm_call``, ``tool_call`` ...) and Codex (``codex.exec``,
  ``exec_command`` ...) are moved into the session's trace: same span ids and parents, the
  trace id replaced (the original kept as ``claude_code.trace_id``, ``gemini_cli.trace_id``,
  ``codex.trace_id``). A tool span carrying the hook's tool use id (Claude Code's
  ``tool_use_id``, Codex's ``call_id``) the hooks saw gets a **span link** to the hook's
  ``execute_tool`` span and the attribute ``otelhooks.hook.span_id``: in Jaeger both trees are
  in one trace and the tool span points at the decision.
- **log events** (``/v1/logs``, Claude Code's): ``claude_code.api_request`` becomes an
  ``llm_output`` observer event (model, input/output tokens, ``costUsd``) in the session's
  trace; its input count is Anthropic's ``input_tokens`` plus the cache's read and creation
  tokens (as the GenAI conventions count input), each also given (``cacheReadTokens``,
  ``cacheCreationTokens``); ``tool_result`` and ``tool_decision`` records are kept per
  ``(session, tool_use_id)``
  (:meth:`ClaudeTelemetry.tool`) next to the hook's own ``after_tool_call``.
- **metrics** (``/v1/metrics``) are counted per metric (:attr:`ClaudeTelemetry.metrics`).

Bounds (a client chooses metric names, session ids and record sizes): at most ``max_metrics``
metric names are summed (points of a new name past it are dropped), and the kept log records
are bounded by count (``remember`` tool uses) and bytes (``max_log_bytes``, oldest tool use
forgotten first; one record larger than a tenth of that is not kept). Each drop is counted by
``otelhooks.dropped`` (source ``claude_code_telemetry``, reason ``too_many_metrics``,
``evicted_oldest`` or ``record_too_large``); the points and records not taken are the answer's
OTLP ``partialSuccess``. An ``api_request`` whose cost or token counts no model call has
(negative, NaN, infinite, past :data:`MAX_CALL_USD` or :data:`MAX_CALL_TOKENS`, not a number),
or that has neither a time nor Claude Code's ``event.timestamp`` or ``event.sequence`` (its
retry could not be told from a second call), is refused the same way (reason ``not_a_call``),
and so are the ``api_request`` records of one request past :data:`MAX_CALLS_PER_REQUEST`
(reason ``too_many_calls``: each is a store write, and the route has four threads).

Observer hooks and event logs see each fact once: the facts the hook route already reported
(its tool uses through ``after_tool_call``, its turns through ``on_complete``) and the LLM
requests the logs report are not sent to them a second time from Claude Code's spans, and
Codex's and Gemini's joined spans (whose tool and model calls their hooks report) reach only
the exporters; those spans are still joined and exported.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._eventlog._otlp_signals import ReceivedLog, ReceivedPoint
from otelhooks._events import LlmOutputEvent, TokenUsage
from otelhooks._instrument._spend import running
from otelhooks._store._errors import StoreError
from otelhooks.integrations.coding_agents._common import AGENT
from otelhooks.integrations.coding_agents._export_once import ExportOnce
from otelhooks.integrations.coding_agents._joins import TraceSessions, agent_of, moved
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._spans import BRIDGE_SCOPE, session_trace_id
from otelhooks.integrations.coding_agents._tool_links import AgentToolSpans, linked_to_agent

__all__ = ["ORIGINAL_TRACE_ID", "ClaudeTelemetry"]

ORIGINAL_TRACE_ID = "claude_code.trace_id"
SESSION_ID = "session.id"

_log = structlog.get_logger("otelhooks")
# past any model's list price for its whole context, and a session's sums stay in PostgreSQL's
# bigint: a record claiming more is no model call's (one past the bigint made every later call
# of its session fail to add, its spend stuck below a budget)
MAX_CALL_USD: Final = 1_000.0
MAX_CALL_TOKENS: Final = 100_000_000
# Model calls one /v1/logs request adds at most: each is a store write (milliseconds on
# PostgreSQL), and 16 MiB of them held one of the route's threads for minutes, so four such
# requests kept a real run's cost records out. The OpenTelemetry SDKs' default export batch
# (512 records, most of them not model calls) is never past it.
MAX_CALLS_PER_REQUEST: Final = 512
_REPORTED_BY_LOGS = frozenset({"llm_request"})  # span.type values the log events already report


def _scope_of(span: ReadableSpan) -> str:
    return span.instrumentation_scope.name if span.instrumentation_scope else ""


def _bridge_tool(span: ReadableSpan) -> tuple[str, str] | None:
    """``(session, tool use id)`` of a bridge's ``execute_tool`` span, else ``None``."""
    attrs = span.attributes or {}
    if _scope_of(span) != BRIDGE_SCOPE or attrs.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_EXECUTE_TOOL:
        return None
    session = attrs.get(sc.GEN_AI_CONVERSATION_ID)
    use_id = attrs.get(sc.GEN_AI_TOOL_CALL_ID)
    if isinstance(session, str) and isinstance(use_id, str) and span.context is not None:
        return session, use_id
    return None


def _record_size(attrs: dict[str, Any]) -> int:
    """Bytes a record's attributes take, estimated as their text (what a client can inflate)."""
    return sum(len(str(key)) + len(str(value)) for key, value in attrs.items())


def _amount(value: Any, limit: float) -> float | None:
    """A model call's cost or token count as its record gives it; None when it is missing.

    Raises:
        ValueError: no call has it (not a number, negative, NaN, infinite, past ``limit``).
    """
    if value is None:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        amount = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"not a number: {str(value)[:40]!r}") from None
    if not 0 <= amount <= limit:  # NaN too
        raise ValueError(f"{amount!r} is outside [0, {limit:g}]")
    return amount


def _call_key(session: str, record: ReceivedLog) -> bytes | None:
    """What tells one model call from another: a digest of its record (its time, Claude Code's
    ``event.sequence``, ``request_id``... all in the attributes), the same in a client's retry
    of the request. None for a record with neither a time nor Claude Code's ``event.timestamp``
    or ``event.sequence``: two such records may be two calls, or one and its retry."""
    attrs = record.attributes
    if not (record.time_unix_nano or attrs.get("event.timestamp") or "event.sequence" in attrs):
        return None
    text = json.dumps(
        [session, record.time_unix_nano, record.attributes], sort_keys=True, default=repr
    )
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ClaudeTelemetry(SpanProcessor):
    """Joins what Claude Code exports to ``serve`` with the hook sessions (module doc).

    As a span processor it sits in front of ``downstream`` (the server's hook processor and
    event logs) and ``export`` (where joined spans go, e.g. OTLP to Jaeger); the log and metric
    routes call :meth:`on_logs` / :meth:`on_metrics`.

    Args:
        sessions: the hook route's session store (``tool_use_id`` to span id).
        engine: where ``llm_output`` events from log records are observed.
        downstream: processors of received spans (observer hooks, event logs).
        export: processors that export the joined spans (each span once: :class:`ExportOnce`).
        forward: the processors of ``export`` the bridge's received spans go to (those that
            are not among ``downstream`` already, as serve's web index is); all of ``export``
            when ``None``.
        remember: tool uses whose log records, CLI tool spans and hook spans are kept, and
            traces whose session is kept (oldest forgotten).
        max_log_bytes: bytes of kept log records at most (oldest tool use forgotten).
        max_metrics: metric names summed at most (new names past it dropped).

    Example:
        >>> telemetry = ClaudeTelemetry(ServerSessions(), engine=HooksEngine())
        >>> telemetry.on_logs([])
        0
    """

    def __init__(
        self,
        sessions: ServerSessions,
        *,
        engine: HooksEngine,
        downstream: Sequence[SpanProcessor] = (),
        export: Sequence[SpanProcessor] = (),
        forward: Sequence[SpanProcessor] | None = None,
        remember: int = 65_536,
        max_log_bytes: int = 64 * 1024 * 1024,
        max_metrics: int = 1_024,
    ) -> None:
        self.sessions = sessions
        self.engine = engine
        self.downstream = tuple(downstream)
        self.export = tuple(export)
        self.metrics: dict[str, float] = {}
        self.max_metrics = max_metrics
        self.max_log_bytes = max_log_bytes
        self._tools: OrderedDict[tuple[str, str], dict[str, dict[str, Any]]] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self._log_bytes = 0
        self._remember = remember
        self._lock = threading.Lock()
        self._count_drop = engine.metrics.drop_counter("claude_code_telemetry")
        self.traces = TraceSessions(remember, lambda: self._count_drop(1, "join_forgotten"))
        # the CLI's tool spans that came before the bridge's span of the same tool use
        self.agent_tools = AgentToolSpans(remember, on_drop=self._count_drop)
        # the one road to the exporters: the joined spans, the bridge's, the hook route's
        self.exporting = ExportOnce(self.export, remember=remember, on_repeat=self._count_drop)
        self._forwarding = self.exporting.to(self.export if forward is None else forward)

    @property
    def log_bytes(self) -> int:
        """Bytes of the log records kept (an estimate: keys and values as text)."""
        with self._lock:
            return self._log_bytes

    # -- spans -----------------------------------------------------------------------------------

    def prepare(self, spans: Sequence[ReadableSpan]) -> None:
        """Read one request's spans before :meth:`on_end` is called on each: the sessions of
        the per-trace CLIs' traces (Codex names its session on a few spans only), and the
        command bridge's ``execute_tool`` spans (sent here as OTLP), for the tool links (a CLI
        tool span of the same request then links to the bridge's, whatever their order)."""
        self.traces.learn(spans)
        for span in spans:
            tool = _bridge_tool(span)
            if tool is not None:
                assert span.context is not None
                self.sessions.remember_tool(*tool, span.context.span_id)

    def join(self, span: ReadableSpan) -> ReadableSpan | None:
        """The span moved into its session's trace and linked to the hook's tool span; ``None``
        when it is not a coding agent's span naming (or in a trace naming) a session. A tool
        span whose hook span is not known yet is remembered: the bridge's span links to it
        when it comes (:mod:`._tool_links`)."""
        agent = agent_of(span)
        if agent is None or span.context is None:
            return None
        session = self.traces.session(agent, span)
        if session is None:
            return None
        attrs = span.attributes or {}
        use_id = next((attrs[k] for k in agent.tool_use if isinstance(attrs.get(k), str)), None)
        hook_span = self.sessions.tool_span(session, use_id) if isinstance(use_id, str) else None
        if isinstance(use_id, str) and hook_span is None:
            self.agent_tools.remember(session, use_id, span.context.span_id)
        return moved(span, agent, session, hook_span)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        tool = _bridge_tool(span)
        if _scope_of(span) == BRIDGE_SCOPE:
            # the bridge's own spans (the session's trace already): exported with the joined
            # ones, a tool span linked to the CLI's tool spans that came before it
            agent_spans = self.agent_tools.take(*tool) if tool is not None else ()
            span = linked_to_agent(span, agent_spans) if agent_spans else span
            self._forwarding.on_end(span)
            for processor in self.downstream:
                self._run(processor, span)
            return
        joined = self.join(span)
        observed = span if joined is None else joined
        reported = False
        if joined is not None:
            attrs = joined.attributes or {}
            kind = attrs.get("span.type")
            reported = (
                ORIGINAL_TRACE_ID not in attrs  # Codex's, Gemini's: their hooks report them
                or sc.HOOK_SPAN_ID in attrs
                or kind in _REPORTED_BY_LOGS
                # the turn's on_complete came from the Stop hook already
                or (kind == "interaction" and self.sessions.saw(str(attrs.get(SESSION_ID))))
            )
            self.exporting.on_end(joined)
        if not reported:
            for processor in self.downstream:
                self._run(processor, observed)

    @staticmethod
    def _run(processor: SpanProcessor, span: ReadableSpan) -> None:
        try:
            processor.on_end(span)
        except Exception:
            _log.exception("span processor failed on a received span", span=span.name)

    def shutdown(self) -> None:
        self.exporting.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporting.force_flush(timeout_millis)

    # -- logs and metrics ------------------------------------------------------------------------

    def tool(self, session_id: str, tool_use_id: str) -> dict[str, dict[str, Any]]:
        """Claude Code's log records about one tool use, by event name (``tool_result``...)."""
        with self._lock:
            return dict(self._tools.get((session_id, tool_use_id), {}))

    def on_logs(self, records: Sequence[ReceivedLog]) -> int:
        """Join received log records (the ``/v1/logs`` sink); how many were not kept (too large,
        a model call's record refused: see :meth:`_llm_output`, or past
        :data:`MAX_CALLS_PER_REQUEST`).

        Raises:
            StoreError: the cost of a model call could not be added to its session: the
                records after it are not tried (each could wait the store's timeout again),
                the client is to send the request again, and a call added already is not
                added twice (nor observed twice).
        """
        too_large = calls = 0
        for record in records:
            attrs = record.attributes
            session = attrs.get(SESSION_ID)
            if not isinstance(session, str):
                continue
            name = record.event_name.removeprefix("claude_code.")
            use_id = attrs.get("tool_use_id")
            if isinstance(use_id, str):
                too_large += not self._keep((session, use_id), name, attrs)
            if name == "api_request":
                calls += 1
                if calls > MAX_CALLS_PER_REQUEST:
                    self._count_drop(1, "too_many_calls")
                    too_large += 1
                    continue
                too_large += not self._llm_output(session, record)
        return too_large

    def _keep(self, key: tuple[str, str], name: str, attrs: dict[str, Any]) -> bool:
        """Keep a tool use's record; False when it is too large to."""
        size = len(key[0]) + len(key[1]) + len(name) + _record_size(attrs)
        if size > self.max_log_bytes // 10:
            self._count_drop(1, "record_too_large")
            return False
        dropped = 0
        with self._lock:
            records = self._tools.setdefault(key, {})
            self._sizes[key] = self._sizes.get(key, 0) + size
            self._log_bytes += size  # a replaced record stays counted: an overestimate at most
            records[name] = attrs
            self._tools.move_to_end(key)
            while len(self._tools) > self._remember or self._log_bytes > self.max_log_bytes:
                old, _ = self._tools.popitem(last=False)
                self._log_bytes -= self._sizes.pop(old)
                dropped += 1
        if dropped:
            self._count_drop(dropped, "evicted_oldest")
        return True

    def _llm_output(self, session: str, record: ReceivedLog) -> bool:
        """Add a model call to its session's spend and observe it; False when its record is
        refused, counted (reason ``not_a_call``): a cost or token count no call has, or nothing
        that tells it from a retry of the same call (added once, or twice)."""
        attrs = record.attributes
        when: dict[str, Any] = {}
        if record.time_unix_nano:
            when["timestamp"] = record.time_unix_nano // 1_000_000
        # each session's running cost, from Claude Code's own cost_usd: kept with the sessions
        key = _call_key(session, record)
        try:
            cost = _amount(attrs.get("cost_usd"), MAX_CALL_USD)
            cache_read, cache_creation, input_tokens, output_tokens = (
                int(_amount(attrs.get(name), MAX_CALL_TOKENS) or 0)
                for name in (
                    "cache_read_tokens",
                    "cache_creation_tokens",
                    "input_tokens",
                    "output_tokens",
                )
            )
        except ValueError:
            key = None
        if key is None:
            self._count_drop(1, "not_a_call")
            return False
        # Anthropic's input_tokens excludes the cache: the GenAI conventions' input count (the
        # Anthropic refinement of spans.yaml) is input + cache read + cache creation, which is
        # what budgets and cost must see.
        usage = TokenUsage(input=input_tokens + cache_read + cache_creation, output=output_tokens)
        try:
            total = self.sessions.add_spend(session, cost, usage.input, usage.output, key)
        except StoreError as exc:
            _log.error(
                "the store cannot add a model call's cost to its claude-code session: the "
                "request is answered 503 (the client sends it again)",
                store=exc.store,
                problem=str(exc),
                cost_usd=cost,
            )
            raise
        if total is None:  # a retried request: this call was added (and observed) already
            return True
        extra: dict[str, Any] = {
            "costUsd": cost,
            # a Claude Code session is the operation otelhooks knows of it: no run of its own
            "spend": running(None, total),
            "requestId": attrs.get("request_id"),
            "promptId": attrs.get("prompt.id"),
            "source": "claude_code.api_request",
            "cacheReadTokens": cache_read,
            "cacheCreationTokens": cache_creation,
        }
        event = LlmOutputEvent(
            **when,
            **extra,
            sessionKey=session,
            traceId=format(session_trace_id(session), "032x"),
            spanId=format(record.span_id, "016x") if record.span_id else None,
            agentId=AGENT,
            model=str(attrs.get("model") or "") or None,
            tokenUsage=usage,
        )
        try:
            self.engine.dispatch("llm_output", event, values=(event.model or "*",))
        except CriticalHookDeliveryError:
            _log.exception("critical hook delivery failed", event="llm_output")
        return True

    def on_metrics(self, points: Sequence[ReceivedPoint]) -> int:
        """Count received metric points per metric (the ``/v1/metrics`` sink); how many were
        dropped (a new name past ``max_metrics``)."""
        dropped = 0
        with self._lock:
            for point in points:
                if point.metric not in self.metrics and len(self.metrics) >= self.max_metrics:
                    dropped += 1
                    continue
                self.metrics[point.metric] = self.metrics.get(point.metric, 0.0) + point.value
        if dropped:
            self._count_drop(dropped, "too_many_metrics")
        return dropped
