"""What the web view lists, in PostgreSQL: the runs and spans any instance received.

The rules are :class:`~otelhooks.web.TraceIndex`'s (one summary row per trace, updated as its
spans arrive; the newest ``max_traces`` traces and at most ``max_spans`` spans kept, the trace
first seen longest ago evicted whole; at most ``max_trace_spans`` spans of one trace, the rest
counted; serve's approval stand-in replaced by the call's own span), applied to rows of the
database instead of this process's memory, so every instance lists the same runs.

A received span is turned into the page's row on the receiving thread (as in memory) and handed
to a bounded worker (a full queue drops and counts, as the event log's does); the worker writes
each batch in one transaction that first locks ``otelhooks_web_head``. That lock orders the
writers of all instances, numbers the traces (``seq``, the list's order) and the changes
(``version``, what the page's long-poll waits on, the same on every instance), and keeps the
fleet-wide span and trace counts the bounds are checked against. The commit notifies
``otelhooks_web`` with the new version; every instance's listener moves its :attr:`version` and
wakes its long-polls.

Reads are one statement each: a page of summaries (filtered in SQL), one trace's spans as one
JSON array (``string_agg`` of the stored rows), one span. A batch whose transaction fails is
not retried (the page is a view, not a record: the event log answers the client 503 for what it
could not store); its spans are counted in :attr:`lost`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import structlog
from opentelemetry.sdk.trace import ReadableSpan

from otelhooks import _semconv as sc
from otelhooks._store._errors import StoreError, StoreUnavailable
from otelhooks._store._pg_eventlog import without_nul
from otelhooks._store._pg_listen import WEB_CHANNEL
from otelhooks._worker import BoundedWorker
from otelhooks.web._store import TraceIndex, approval_ids, outline_after
from otelhooks.web._summary import TraceSummary

if TYPE_CHECKING:
    from otelhooks._store._pg_connections import PgConnections

__all__ = ["SharedTraceIndex"]

_log = structlog.get_logger("otelhooks")

_Row = tuple[str, str, dict[str, Any]]  # trace id, service, the page's row of one span


def _nul_free(item: _Row) -> _Row:
    trace_id, service, row = json.loads(without_nul(json.dumps(item, default=str)))
    return trace_id, service, row


_HEAD: Final = (
    b"SELECT version, seq, n, traces, spans, evicted FROM otelhooks_web_head WHERE id = 1 "
    b"FOR UPDATE"
)
_TRACES: Final = (
    b"SELECT trace_id, spans, dropped, summary FROM otelhooks_web_traces WHERE trace_id = ANY(%s)"
)
_APPROVALS: Final = (
    b"SELECT approval_id, trace_id, stand_in FROM otelhooks_web_approvals "
    b"WHERE approval_id = ANY(%s)"
)
_UPSERT_TRACE: Final = (
    b"INSERT INTO otelhooks_web_traces (trace_id, seq, agent, tools, decisions, errors, spans, "
    b"dropped, summary) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (trace_id) DO "
    b"UPDATE SET agent = excluded.agent, tools = excluded.tools, decisions = excluded.decisions, "
    b"errors = excluded.errors, spans = excluded.spans, dropped = excluded.dropped, "
    b"summary = excluded.summary"
)
_UPSERT_APPROVAL: Final = (
    b"INSERT INTO otelhooks_web_approvals (approval_id, trace_id, stand_in) VALUES (%s, %s, %s) "
    b"ON CONFLICT (approval_id) DO UPDATE SET trace_id = excluded.trace_id, "
    b"stand_in = excluded.stand_in"
)
_OLDEST: Final = b"SELECT trace_id, spans FROM otelhooks_web_traces ORDER BY seq LIMIT %s"
_HEAD_SET: Final = (
    b"UPDATE otelhooks_web_head SET version = %s, seq = %s, n = %s, traces = %s, spans = %s, "
    b"evicted = %s WHERE id = 1"
)
_FILTER: Final = (
    "(%(agent)s = '' OR agent = %(agent)s) AND (%(tool)s = '' OR %(tool)s = ANY(tools)) "
    "AND (%(decision)s = '' OR %(decision)s = ANY(decisions)) AND (NOT %(errors)s OR errors > 0)"
)
_LIST: Final = (
    "SELECT h.version, h.traces, "
    f"(SELECT count(*) FROM otelhooks_web_traces WHERE {_FILTER}), "
    "(SELECT '[' || coalesce(string_agg(p.summary, ',' ORDER BY p.seq DESC), '') || ']' FROM "
    f"(SELECT seq, summary FROM otelhooks_web_traces WHERE {_FILTER} "
    "AND (%(before)s = 0 OR seq < %(before)s) ORDER BY seq DESC LIMIT %(limit)s) p), "
    "(SELECT coalesce(array_agg(a ORDER BY a), '{}') FROM (SELECT DISTINCT agent AS a "
    "FROM otelhooks_web_traces WHERE agent <> '' ORDER BY 1 LIMIT 500) y), "
    "(SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM (SELECT DISTINCT unnest(tools) AS t "
    "FROM otelhooks_web_traces ORDER BY 1 LIMIT 500) x) "
    "FROM otelhooks_web_head h"
).encode()
_TRACE: Final = (
    b"SELECT t.summary, t.dropped, (SELECT '[' || coalesce(string_agg(s.body, ',' ORDER BY s.n), "
    b"'') || ']' FROM otelhooks_web_spans s WHERE s.trace_id = t.trace_id) "
    b"FROM otelhooks_web_traces t WHERE t.trace_id = %s"
)
_SPAN: Final = (
    b"SELECT body FROM otelhooks_web_spans WHERE trace_id = %s AND span_id = %s"
    b" ORDER BY n OFFSET %s LIMIT 1"
)
_STATS: Final = b"SELECT traces, spans, evicted, version FROM otelhooks_web_head WHERE id = 1"
_RECOUNT: Final = b"SELECT service, body FROM otelhooks_web_spans WHERE trace_id = %s ORDER BY n"


@dataclass
class _Held:
    """A trace a batch touches: its summary as stored, and its counts."""

    summary: TraceSummary
    spans: int
    dropped: int


class SharedTraceIndex(TraceIndex):
    """A :class:`~otelhooks.web.TraceIndex` kept in PostgreSQL (see the module docstring).

    Args:
        store: the store (its pool, its listener).
        max_traces, max_spans, max_trace_spans, capture_content: as for ``TraceIndex``; the
            bounds hold for the whole fleet.
        max_queue_size: spans waiting for the writer at most (more are dropped and counted).

    Raises:
        StoreError: the store cannot be read.
    """

    blocking = True

    def __init__(
        self,
        store: PgConnections,
        *,
        max_traces: int = 10_000,
        max_spans: int = 200_000,
        max_trace_spans: int = 50_000,
        capture_content: bool = False,
        max_queue_size: int = 65_536,
    ) -> None:
        super().__init__(
            max_traces=max_traces,
            max_spans=max_spans,
            max_trace_spans=max_trace_spans,
            capture_content=capture_content,
        )
        self.store = store
        self._failed = 0
        self._moved = threading.Lock()
        self._worker: BoundedWorker[_Row] = BoundedWorker(
            "otelhooks-web-index",
            self._write,
            max_queue_size=max_queue_size,
            max_batch_size=1024,
            schedule_delay_s=0.005,
        )
        store.listener().follow(WEB_CHANNEL, self._woken)
        self._moved_to(int(self.stats()["version"]))

    @property
    def lost(self) -> int:
        """Spans never written: the queue was full, or their transaction failed."""
        return self._worker.dropped + self._failed

    # -- writing ------------------------------------------------------------------------------

    def add(self, spans: Iterable[ReadableSpan]) -> None:
        """Queue ``spans`` for the writer (O(1) each; dropped and counted when it is full)."""
        for row in map(self._row, spans):
            if row is not None:
                self._worker.submit(row)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._worker.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        """Write what is queued (within 10 s); idempotent."""
        self._worker.shutdown(10.0)

    def _write(self, batch: list[_Row]) -> None:
        try:
            try:
                version = self._commit(batch)
            except StoreUnavailable:
                raise
            except StoreError:
                # a value PostgreSQL text cannot hold (a NUL byte a client sent) failed every
                # span of the batch: again with each NUL as U+FFFD, as the event log stores it
                version = self._commit([_nul_free(item) for item in batch])
        except StoreError as exc:
            self._failed += len(batch)
            _log.error("web view index commit failed", spans=len(batch), error=str(exc))
            return
        self._moved_to(version)

    def _commit(self, batch: list[_Row]) -> int:
        trace_ids = sorted({trace_id for trace_id, _, _ in batch})
        ids = sorted({i for _, _, row in batch for i in approval_ids(row)})
        with self.store.transaction() as connection:
            conn: Any = connection  # rows of any types: the statements here say which
            head = conn.execute(_HEAD).fetchone()
            assert head is not None
            version, seq, n, traces, spans, evicted = (int(x) for x in head)
            held: dict[str, _Held] = {
                str(t): _Held(TraceSummary.from_state(json.loads(body)), int(count), int(drop))
                for t, count, drop, body in conn.execute(_TRACES, (trace_ids,)).fetchall()
            }
            approvals: dict[str, tuple[str, int | None]] = {
                str(a): (str(t), None if s is None else int(s))
                for a, t, s in conn.execute(_APPROVALS, (ids,)).fetchall()
            }
            fresh: dict[tuple[str, int], tuple[str, str, str]] = {}
            replaced: list[tuple[str, int, str]] = []  # a stand-in's trace and n, its successor
            changed_approvals: set[str] = set()
            for trace_id, service, row in batch:
                found = approval_ids(row)
                stand_in = bool(found) and row["a"].get(sc.APPROVAL_STAND_IN) is True
                if stand_in and any(i in approvals for i in found):
                    continue  # the call's span already holds this approval
                trace = held.get(trace_id)
                if trace is None:
                    seq += 1
                    traces += 1
                    trace = held[trace_id] = _Held(TraceSummary(trace_id, seq), 0, 0)
                if trace.spans >= self.max_trace_spans:
                    trace.dropped += 1
                    continue
                n += 1
                for approval in found:
                    before = approvals.get(approval)
                    if before is not None and before[1] is not None:
                        replaced.append((before[0], before[1], trace_id))  # the stand-in goes
                    approvals[approval] = (trace_id, n if stand_in else None)
                    changed_approvals.add(approval)
                trace.summary.add(row, service)
                trace.spans += 1
                spans += 1
                version += 1
                trace.summary.updated = version
                fresh[(trace_id, n)] = (row["s"], service, json.dumps(row, default=str))
            gone_now = {(t, number) for t, number, _ in replaced}
            if fresh:
                with conn.cursor().copy(
                    "COPY otelhooks_web_spans (trace_id, n, span_id, service, body) FROM STDIN"
                ) as copy:
                    for (trace_id, number), (span_id, service, body) in fresh.items():
                        if (trace_id, number) not in gone_now:
                            copy.write_row((trace_id, number, span_id, service, body))
            for trace_id, number, successor in replaced:
                unwritten = (trace_id, number) in fresh
                version, spans, traces = self._replace(
                    conn, held, (trace_id, number, successor, unwritten), (version, spans, traces)
                )
            # in sorted order (no two writers wait on each other's rows) and pipelined: one
            # round trip for the batch's traces, not one each
            if held:
                conn.cursor().executemany(
                    _UPSERT_TRACE,
                    [
                        (
                            trace_id, s.seq, s.agent, sorted(s.tools), sorted(s.decisions),
                            s.errors, trace.spans, trace.dropped, json.dumps(s.state()),
                        )
                        for trace_id, trace in sorted(held.items())
                        for s in (trace.summary,)
                    ],
                )  # fmt: skip
            if changed_approvals:
                conn.cursor().executemany(
                    _UPSERT_APPROVAL,
                    [(a, *approvals[a]) for a in sorted(changed_approvals)],
                )
            while traces > self.max_traces or (spans > self.max_spans and traces > 1):
                gone: list[str] = []
                for trace_id, count in conn.execute(_OLDEST, (min(traces, 256),)).fetchall():
                    if traces <= self.max_traces and (spans <= self.max_spans or traces <= 1):
                        break
                    gone.append(str(trace_id))
                    traces -= 1
                    spans -= int(count)
                    evicted += 1
                if not gone:
                    break  # the counts and the rows disagree: never loop on it
                conn.execute(b"DELETE FROM otelhooks_web_spans WHERE trace_id = ANY(%s)", (gone,))
                conn.execute(
                    b"DELETE FROM otelhooks_web_approvals WHERE trace_id = ANY(%s)", (gone,)
                )
                conn.execute(b"DELETE FROM otelhooks_web_traces WHERE trace_id = ANY(%s)", (gone,))
            conn.execute(_HEAD_SET, (version, seq, n, traces, spans, evicted))
            conn.execute(b"SELECT pg_notify(%s, %s)", (WEB_CHANNEL, str(version)))
        return version

    def _replace(
        self,
        conn: Any,
        held: dict[str, _Held],
        stand_in: tuple[str, int, str, bool],
        counts: tuple[int, int, int],
    ) -> tuple[int, int, int]:
        """Delete serve's stand-in span (its trace, its ``n``, the trace of the span that
        replaces it, whether this batch brought it) and count that trace's summary again from
        the spans it keeps (rare: bounded by the trace's spans)."""
        trace_id, number, successor, unwritten = stand_in
        version, spans, traces = counts
        deleted = unwritten or bool(
            conn.execute(
                b"DELETE FROM otelhooks_web_spans WHERE trace_id = %s AND n = %s RETURNING n",
                (trace_id, number),
            ).fetchall()
        )
        trace = held.get(trace_id)
        if trace is None:
            (found,) = conn.execute(_TRACES, ([trace_id],)).fetchall() or [(None,) * 4]
            if found[0] is None:
                return counts
            trace = held[trace_id] = _Held(
                TraceSummary.from_state(json.loads(found[3])), int(found[1]), int(found[2])
            )
        if deleted:
            trace.spans -= 1
            spans -= 1
        summary = TraceSummary(trace_id, trace.summary.seq)
        for service, body in conn.execute(_RECOUNT, (trace_id,)).fetchall():
            summary.add(json.loads(body), str(service))
        version += 1
        summary.updated = version
        trace.summary = summary
        if trace.spans <= 0 and trace_id != successor:
            # a caller that gave no trace id had its stand-in in a trace alone
            conn.execute(b"DELETE FROM otelhooks_web_traces WHERE trace_id = %s", (trace_id,))
            del held[trace_id]
            traces -= 1
        return version, spans, traces

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
        """As :meth:`TraceIndex.operations`, over every instance's traces."""
        params = {
            "agent": agent,
            "tool": tool,
            "decision": decision,
            "errors": errors,
            "before": before,
            "limit": limit,
        }
        ((version, total, matched, page, agents, tools),) = self.store.statement(_LIST, params)
        rows: list[dict[str, Any]] = []
        for state in json.loads(page):
            summary = TraceSummary.from_state(state)
            row = summary.to_json()
            row["seq"] = summary.seq
            rows.append(row)
        return {
            "version": int(version),
            "total": int(total),
            "matched": int(matched),
            "operations": rows,
            "next_before": rows[-1]["seq"] if len(rows) == limit else None,
            "agents": sorted(agents),
            "tools": list(tools),
        }

    def trace(
        self, trace_id: str, *, outline: bool = False, after: tuple[int, str] = (0, "")
    ) -> dict[str, Any] | None:
        """As :meth:`TraceIndex.trace`, whichever instance received the spans."""
        found = self.store.statement(_TRACE, (trace_id,))
        if not found:
            return None
        summary, dropped, body = found[0]
        spans: list[dict[str, Any]] = json.loads(body)
        known = 0
        if outline:
            known, spans = outline_after(spans, *after)
        return {
            "summary": TraceSummary.from_state(json.loads(summary)).to_json(),
            "spans": spans,
            "dropped": int(dropped),
            "from": known,
        }

    def span(self, trace_id: str, span_id: str, *, nth: int = 0) -> dict[str, Any] | None:
        """As :meth:`TraceIndex.span`."""
        found = self.store.statement(_SPAN, (trace_id, span_id, nth))
        return json.loads(found[0][0]) if found else None

    def stats(self) -> dict[str, int]:
        """Traces and spans kept and traces evicted in the fleet, and the version."""
        ((traces, spans, evicted, version),) = self.store.statement(_STATS)
        return {
            "traces": int(traces),
            "spans": int(spans),
            "evicted": int(evicted),
            "version": int(version),
        }

    # -- inside -------------------------------------------------------------------------------

    def _woken(self, payload: str | None) -> None:
        try:
            version = int(payload) if payload else int(self.stats()["version"])
        except (ValueError, StoreError) as exc:
            _log.warning("web view index version not read", error=str(exc))
            return
        self._moved_to(version)

    def _moved_to(self, version: int) -> None:
        with self._moved:
            if version <= self.version:
                return
            self.version = version
        self.signal.notify()
