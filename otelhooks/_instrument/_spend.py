"""What model calls cost so far: per step, per operation and per session.

A :class:`Spend` is a running total (priced dollars, tokens, calls, calls no price was found
for). Steps and operations hold their own; sessions span operations, so their totals live in a
:class:`SessionSpend` ledger on the tracer, bounded (the least recently used session is forgotten
first). Totals are added under one lock: a foreign instrumentation may end a model call's span
on another thread (a stream read elsewhere).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from otelhooks import _semconv as sc
from otelhooks._events import CostTotals, RunningSpend

__all__ = [
    "CALLS_KEPT",
    "CALL_WINDOW_S",
    "SessionSpend",
    "Spend",
    "add_call",
    "complete_cost",
    "cost_attributes",
    "running",
    "session_key",
]

_LOCK = threading.Lock()
# A model call added to a session's total under a key (its record's digest) is remembered this
# long, so the client's retry of a request the server answered 503 (or whose answer it lost)
# does not add it again: past every exporter's retries. At most CALLS_KEPT keys are kept (oldest
# forgotten), checked on every 256th call of a session: a flood of calls forgets keys sooner.
CALL_WINDOW_S = 600.0
CALLS_KEPT = 100_000


@dataclass(slots=True)
class Spend:
    """A running total of model calls."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    unpriced_calls: int = 0

    # limits whose on_budget_threshold fired for this total: (hook id, limit name)
    warned: set[tuple[str, str]] | None = None

    def view(self) -> CostTotals:
        """The total as hooks see it."""
        return CostTotals(
            costUsd=round(self.cost_usd, 10),
            inputTokens=self.input_tokens,
            outputTokens=self.output_tokens,
            llmCalls=self.calls,
            unpricedCalls=self.unpriced_calls,
        )


def running(operation: Spend | None, session: Spend | None) -> RunningSpend:
    """The ``spend`` field of a payload: the operation's and the session's totals now (no
    operation for a coding agent's session: it has no run of its own)."""
    with _LOCK:
        return RunningSpend(
            operation=operation.view() if operation is not None else None,
            session=session.view() if session is not None else None,
        )


def cost_attributes(spend: Spend, name: str) -> dict[str, float | int]:
    """The span attributes of a total: its priced dollars under ``name`` (when any call was
    priced) and ``otelhooks.llm.unpriced_calls`` (when any was not)."""
    attrs: dict[str, float | int] = {}
    if spend.calls > spend.unpriced_calls:
        attrs[name] = round(spend.cost_usd, 10)
    if spend.unpriced_calls:
        attrs[sc.LLM_UNPRICED_CALLS] = spend.unpriced_calls
    return attrs


def complete_cost(spend: Spend) -> float | None:
    """``on_complete``'s ``cost``: the run's dollars when every model call of it was priced;
    None when it made none or one could not be priced (a partial sum is not the run's cost)."""
    if spend.calls == 0 or spend.unpriced_calls:
        return None
    return round(spend.cost_usd, 10)


def add_call(
    totals: tuple[Spend, ...], cost_usd: float | None, input_tokens: int, output_tokens: int
) -> None:
    """Add one model call to each of ``totals``."""
    with _LOCK:
        for total in totals:
            total.calls += 1
            total.input_tokens += input_tokens
            total.output_tokens += output_tokens
            if cost_usd is None:
                total.unpriced_calls += 1
            else:
                total.cost_usd += cost_usd


def session_key(session_id: str) -> bytes:
    """What a session's total is kept under: a 16-byte digest of its id (the id is any string
    a client sends), so a kept total costs the same whatever the id's length."""
    return hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class SessionSpend:
    """Spend per session id, for at most ``max_sessions`` sessions (least recently used out).

    A session id comes from the agent (Claude Code's ``session_id`` is any string a client
    sends): each is kept as its :func:`session_key`, so the memory is bounded by the count alone.
    """

    def __init__(self, max_sessions: int = 10_000) -> None:
        self._max = max_sessions
        self._sessions: OrderedDict[bytes, Spend] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, session_id: str) -> Spend:
        """The session's total (a new, empty one for a session not seen yet)."""
        key = session_key(session_id)
        with self._lock:
            spend = self._sessions.get(key)
            if spend is None:
                spend = self._sessions[key] = Spend()
                while len(self._sessions) > self._max:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return spend
