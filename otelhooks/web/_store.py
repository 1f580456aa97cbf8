"""``TraceIndex``: what the web view shows, kept in memory and bounded.

``otelhooks serve`` keeps no spans of its own: received spans run through the hook processor
(observers, event logs) and leave. The web view needs the recent ones, so this span processor
(fed the received spans, and as an exporter the spans serve writes for Claude Code's hooks)
keeps the newest ``max_traces`` traces, at most ``max_spans`` spans and ``max_bytes`` of their
JSON in all: past any bound the trace seen longest ago goes, whole. A trace holds at most
``max_trace_spans`` spans and ``max_bytes``; more are counted (``dropped``) and not kept.

One approval is one record: serve writes a stand-in span for each answered approval (for a
caller whose spans never reach serve), and the runtime that waited writes the same approval as an
``approve`` / ``reject`` event on the call's own span. Whichever arrives second, the index keeps
the call's span: a stand-in of an approval already seen on a span is not kept, and a span that
brings the event of a kept stand-in replaces it (matched by ``otelhooks.approval.id``).

Each span is kept as the JSON object the page reads (short keys, times in microseconds), and
each trace as one summary row (agent, service, start, duration, tool calls, errors, decisions,
tokens, cost), updated as its spans arrive. Content attributes (prompts, completions, tool
arguments and results) are kept only when ``capture_content`` is on.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks import _semconv as sc
from otelhooks._eventlog._signal import AppendSignal
from otelhooks.web._summary import TraceSummary, decision_of

__all__ = [
    "CONTENT_ATTRIBUTES",
    "OUTLINE",
    "TraceIndex",
    "approval_ids",
    "outline_after",
    "outline_of",
]

CONTENT_ATTRIBUTES = frozenset(
    {
        sc.GEN_AI_INPUT_MESSAGES,
        sc.GEN_AI_OUTPUT_MESSAGES,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS,
        sc.GEN_AI_TOOL_CALL_RESULT,
        "gen_ai.system_instructions",
        "gen_ai.prompt",
        "gen_ai.completion",
    }
)
# What one span may hold in the index (the page is not an archive): a text's characters (name,
# status, service, event name, value), an array's items, a span's attributes, events and links.
# They keep a page readable; memory is bounded by ``max_bytes``: a span of ten thousand values
# under these cuts is still megabytes.
_MAX_VALUE_CHARS = 4096
_MAX_ITEMS = 128
#: The keys of a span the waterfall draws (``view=outline``).
OUTLINE = ("s", "p", "n", "t0", "t1", "st", "o", "d")
# What a row of the waterfall shows of a text (the name, the operation, who decided and why):
# the span's detail has it whole. Each kept whole, 20,000 spans named with 4,000 characters made
# an 83 MB outline, read again at every change of the open trace (3 s to its first rows here).
_OUTLINE_CHARS = 256
# The agents and the tools the runs list offers as filters, at most (the first by name).
_CHOICES = 500


def _short(text: Any) -> Any:
    return (
        text[:_OUTLINE_CHARS] + "…"
        if isinstance(text, str) and len(text) > _OUTLINE_CHARS
        else text
    )


def outline_of(row: dict[str, Any]) -> dict[str, Any]:
    """What the waterfall draws of the kept span ``row``: the :data:`OUTLINE` keys, each text
    cut at 256 characters."""
    shown = {k: row[k] for k in OUTLINE}
    shown["n"], shown["o"] = _short(shown["n"]), _short(shown["o"])
    if shown["d"]:
        shown["d"] = {k: _short(v) for k, v in shown["d"].items()}
    return shown


def outline_after(
    spans: list[dict[str, Any]], known: int, last: str
) -> tuple[int, list[dict[str, Any]]]:
    """The outline of ``spans`` a page holding their first ``known`` (the last of them
    ``last``'s) lacks: ``(known, the outline of the rest)``, or ``(0, the whole outline)`` when
    the page's copy is not their start (a stand-in replaced since, another trace). An open run
    of 50,000 spans was 7 MiB read again, and drawn again, at each span its agent added."""
    if not 0 < known <= len(spans) or spans[known - 1]["s"] != last:
        known = 0
    return known, [outline_of(row) for row in spans[known:]]


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return value[:_MAX_VALUE_CHARS]
    if isinstance(value, (tuple, list)):
        return [_value(v) for v in value[:_MAX_ITEMS]]
    return value


def _attrs(attributes: Mapping[str, Any] | None, capture: bool) -> dict[str, Any]:
    if not attributes:
        return {}
    kept: dict[str, Any] = {}
    for key, value in attributes.items():
        if len(kept) >= _MAX_ITEMS:
            break
        if capture or key not in CONTENT_ATTRIBUTES:
            kept[key[:256]] = _value(value)
    return kept


def _size(row: dict[str, Any]) -> int:
    """The length of ``row``'s JSON, as the page reads it: what the index counts against
    ``max_bytes``."""
    return len(json.dumps(row, separators=(",", ":"), default=str))


def approval_ids(row: dict[str, Any]) -> list[str]:
    """The ``otelhooks.approval.id`` of each approve/reject event of a span's row."""
    return [
        str(e["a"][sc.APPROVAL_ID])
        for e in row["e"]
        if e["n"] in (sc.EVENT_APPROVE, sc.EVENT_REJECT) and e["a"].get(sc.APPROVAL_ID)
    ]


@dataclass
class _Trace:
    summary: TraceSummary
    spans: list[dict[str, Any]] = field(default_factory=list)
    services: list[str] = field(default_factory=list)  # each kept span's, to rebuild the summary
    sizes: list[int] = field(default_factory=list)  # each kept span's JSON length
    bytes: int = 0
    approvals: list[str] = field(default_factory=list)  # the approval ids its spans brought
    dropped: int = 0

    def keep(self, row: dict[str, Any], service: str, size: int) -> None:
        self.spans.append(row)
        self.services.append(service)
        self.sizes.append(size)
        self.bytes += size
        self.summary.add(row, service)

    def remove(self, row: dict[str, Any]) -> int:
        """Drop ``row`` and count the summary again without it (rare: a replaced stand-in);
        its size."""
        at = next(i for i, kept in enumerate(self.spans) if kept is row)
        size = self.sizes[at]
        del self.spans[at], self.services[at], self.sizes[at]
        self.bytes -= size
        summary = TraceSummary(self.summary.trace_id, self.summary.seq)
        for kept, service in zip(self.spans, self.services, strict=True):
            summary.add(kept, service)
        self.summary = summary
        return size


class TraceIndex(SpanProcessor, SpanExporter):
    """The newest traces and their spans, bounded (see the module docstring).

    A span processor (``on_end``) for received spans and a span exporter (``export``) for spans
    written in the server; both are thread-safe. :attr:`signal` wakes long-polls when
    :attr:`version` moves.

    Args:
        max_traces: traces kept.
        max_spans: spans kept in all.
        max_trace_spans: spans kept of one trace.
        max_bytes: the spans' JSON kept in all (what the page reads), which bounds memory
            whatever a sender puts in a span.
        capture_content: keep prompts, completions and tool arguments and results.

    Example:
        >>> index = TraceIndex(max_traces=100)
        >>> index.operations(limit=10)["operations"]
        []
    """

    #: Whether the reads wait for a database (then the web view reads on a worker thread).
    blocking = False

    def __init__(
        self,
        *,
        max_traces: int = 10_000,
        max_spans: int = 200_000,
        max_trace_spans: int = 50_000,
        max_bytes: int = 256 * 1024 * 1024,
        capture_content: bool = False,
    ) -> None:
        if min(max_traces, max_spans, max_trace_spans, max_bytes) <= 0:
            raise ValueError("the bounds of the trace index must be positive")
        self.max_traces = max_traces
        self.max_spans = max_spans
        self.max_trace_spans = max_trace_spans
        self.max_bytes = max_bytes
        self.capture_content = capture_content
        self.signal = AppendSignal()
        self.version = 0
        self.evicted = 0
        self._spans = 0
        self._bytes = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, _Trace] = OrderedDict()
        # approval id -> (its trace, serve's stand-in row or None once a call's span brought it)
        self._approvals: dict[str, tuple[str, dict[str, Any] | None]] = {}

    # -- SpanProcessor / SpanExporter ---------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.add([span])

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.add(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- writing ------------------------------------------------------------------------------

    def add(self, spans: Iterable[ReadableSpan]) -> None:
        """Index ``spans`` (whatever their trace), evicting the oldest traces past the bounds."""
        rows = [(*row, _size(row[2])) for row in map(self._row, spans) if row is not None]
        if not rows:
            return
        with self._lock:
            for trace_id, service, row, size in rows:
                ids = approval_ids(row)
                stand_in = bool(ids) and row["a"].get(sc.APPROVAL_STAND_IN) is True
                if stand_in and any(i in self._approvals for i in ids):
                    continue  # the call's span already holds this approval
                trace = self._traces.get(trace_id)
                if trace is None:
                    self._seq += 1
                    trace = self._traces[trace_id] = _Trace(TraceSummary(trace_id, self._seq))
                if len(trace.spans) >= self.max_trace_spans or trace.bytes + size > self.max_bytes:
                    trace.dropped += 1
                    continue
                for approval in ids:
                    self._hold(approval, trace_id, row if stand_in else None)
                trace.approvals.extend(ids)
                trace.keep(row, service, size)
                self.version += 1
                trace.summary.updated = self.version
                self._spans += 1
                self._bytes += size
            self._evict()
        self.signal.notify()

    def _hold(self, approval: str, trace_id: str, stand_in: dict[str, Any] | None) -> None:
        """Record who holds ``approval``; a call's span replaces serve's stand-in, in whatever
        trace serve put it (a caller that gave no trace id has its stand-in in a trace alone)."""
        held = self._approvals.get(approval)
        if held is not None and held[1] is not None:
            old = self._traces.get(held[0])
            if old is not None:
                self._bytes -= old.remove(held[1])
                self._spans -= 1
                self.version += 1
                old.summary.updated = self.version
                if not old.spans and held[0] != trace_id:
                    del self._traces[held[0]]
        self._approvals[approval] = (trace_id, stand_in)

    def _evict(self) -> None:
        while len(self._traces) > self.max_traces or (
            (self._spans > self.max_spans or self._bytes > self.max_bytes) and len(self._traces) > 1
        ):
            trace_id, gone = self._traces.popitem(last=False)
            self._spans -= len(gone.spans)
            self._bytes -= gone.bytes
            self.evicted += 1
            for approval in gone.approvals:
                if self._approvals.get(approval, ("",))[0] == trace_id:
                    del self._approvals[approval]

    def _row(self, span: ReadableSpan) -> tuple[str, str, dict[str, Any]] | None:
        ctx = span.context
        if ctx is None:
            return None
        capture = self.capture_content
        attrs = _attrs(span.attributes, capture)
        events = [
            {"n": _value(e.name), "t": e.timestamp // 1000, "a": _attrs(e.attributes, capture)}
            for e in span.events[:_MAX_ITEMS]
        ]
        links = [
            {
                "t": _hex(link.context.trace_id, 32),
                "s": _hex(link.context.span_id, 16),
                "a": _attrs(link.attributes, capture),
            }
            for link in span.links[:_MAX_ITEMS]
        ]
        start = (span.start_time or 0) // 1000
        service = span.resource.attributes.get("service.name", "") if span.resource else ""
        service = _value(str(service))
        row = {
            "s": _hex(ctx.span_id, 16),
            "p": _hex(span.parent.span_id, 16) if span.parent is not None else None,
            "n": _value(span.name),
            "t0": start,
            "t1": max(start, (span.end_time or span.start_time or 0) // 1000),
            "st": span.status.status_code.value,
            "sm": _value(span.status.description or ""),
            "k": span.kind.name.lower(),
            "o": str(attrs.get(sc.GEN_AI_OPERATION_NAME, "")),
            "a": attrs,
            "e": events,
            "l": links,
        }
        row["d"] = decision_of(attrs, events)
        return _hex(ctx.trace_id, 32), service, row

    # -- reading ------------------------------------------------------------------------------

    def operations(
        self,
        *,
        agent: str = "",
        tool: str = "",
        decision: str = "",
        errors: bool = False,
        before: int = 0,
        limit: int = 100,
    ) -> dict[str, Any]:
        """The traces newest first (by first seen), filtered; ``before`` pages on (a ``seq``)."""
        with self._lock:
            summaries = [t.summary for t in reversed(self._traces.values())]
            version = self.version
        rows: list[dict[str, Any]] = []
        matched = 0
        for s in summaries:
            if agent and s.agent != agent:
                continue
            if tool and tool not in s.tools:
                continue
            if decision and decision not in s.decisions:
                continue
            if errors and not s.errors:
                continue
            matched += 1
            if before and s.seq >= before:
                continue
            if len(rows) < limit:
                row = s.to_json()
                row["seq"] = s.seq
                rows.append(row)
        return {
            "version": version,
            "total": len(summaries),
            "matched": matched,
            "operations": rows,
            "next_before": rows[-1]["seq"] if len(rows) == limit else None,
            # the filters' choices, the first 500 of each (read at every change of the list):
            # 10,000 runs of agents named apart by their sender made every answer megabytes
            "agents": sorted({s.agent for s in summaries if s.agent})[:_CHOICES],
            "tools": sorted({t for s in summaries for t in s.tools})[:_CHOICES],
        }

    def trace(
        self, trace_id: str, *, outline: bool = False, after: tuple[int, str] = (0, "")
    ) -> dict[str, Any] | None:
        """One trace: its summary and spans (oldest first); ``None`` when not kept.

        With ``outline`` each span is what the waterfall draws (no attributes, events or links:
        :meth:`span` gives those), a fraction of a big trace's bytes; ``after`` (the count of
        spans a page holds and the last one's id) leaves out those the page holds, as
        :func:`outline_after` decides; ``from`` says how many were left out.
        """
        with self._lock:
            trace = self._traces.get(trace_id)
            if trace is None:
                return None
            spans = list(trace.spans)
            summary = trace.summary.to_json()
            dropped = trace.dropped
        known = 0
        if outline:
            known, spans = outline_after(spans, *after)
        return {"summary": summary, "spans": spans, "dropped": dropped, "from": known}

    def span(self, trace_id: str, span_id: str, *, nth: int = 0) -> dict[str, Any] | None:
        """One kept span, whole; ``None`` when not kept. A sender may send one span id twice
        (an exporter's retry, or on purpose): ``nth`` picks the ``nth`` of them, in the trace's
        order (the outline's), where the first alone showed one row's detail under another."""
        with self._lock:
            trace = self._traces.get(trace_id)
            spans = list(trace.spans) if trace is not None else []
        same = [row for row in spans if row["s"] == span_id]
        return same[nth] if nth < len(same) else None

    def stats(self) -> dict[str, int]:
        """Traces and spans kept, traces evicted, and the version."""
        with self._lock:
            return {
                "traces": len(self._traces),
                "spans": self._spans,
                "evicted": self.evicted,
                "version": self.version,
            }
