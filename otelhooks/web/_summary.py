"""What the web view says about a span and a trace: the hook decision on a span
(:func:`decision_of`) and one row of the runs list (:class:`TraceSummary`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from otelhooks import _semconv as sc

__all__ = ["TraceSummary", "decision_of"]

# A model call's price: otelhooks' own (genai-prices) first, then what other producers write.
# Only per-call names: a step's or an operation's total would count its calls twice.
_COST = (
    sc.LLM_COST_USD,
    "gen_ai.usage.cost",
    "otelhooks.usage.cost",
    "cost_usd",
    "claude_code.cost.usage",
)


def decision_of(
    attrs: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """What the hooks decided on one span, for the page: ``{"kind", "by", "why"}`` or ``{}``.

    ``kind`` is ``denied``, ``blocked`` (the tool ran, a ``tool_result_persist`` hook withheld
    its result from the model), ``mocked``, ``rewritten``, ``asked`` (a person was asked: an
    approval, or Claude Code's ``ask``), ``permissive`` (a hook in ``mode: permissive`` would
    have decided: recorded, not enforced) or ``failed`` (a hook failed and its ``on_error:
    continue`` let the call through). A call a person denied is ``asked`` with ``"blocked":
    True`` (one mark per approval; the runs list still counts it a denial, as a blocked result).

    Example:
        >>> decision_of({"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "g"})
        {'kind': 'denied', 'by': 'g', 'why': ''}
    """
    outcome = attrs.get(sc.TOOL_OUTCOME)
    by = str(attrs.get(sc.HOOK_DECIDED_BY) or "")
    why = str(attrs.get(sc.HOOK_DECISION_REASON) or "")
    denied = (
        outcome == "denied"
        or attrs.get(sc.HOOK_DECISION) == "deny"
        or (
            by
            and (
                attrs.get(sc.MESSAGE_BLOCKED)
                or attrs.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_EXECUTE_TOOL
            )
        )
    )
    asked = [e for e in events if e.get("n") in (sc.EVENT_APPROVE, sc.EVENT_REJECT)]
    last = asked[-1].get("a", {}) if asked else {}
    hook = str(last.get(sc.APPROVAL_HOOK_ID, ""))
    # a person's deny is one mark, 'asked' (who answered, what), still counted as a denial
    if asked and (not denied or not by or by == hook):
        action = str(asked[-1]["n"]).removeprefix(sc.EVENT_PREFIX)
        answer = f"{action} by {last.get(sc.APPROVAL_ANSWERED_BY, '?')}"
        reason = str(last.get(sc.APPROVAL_REASON) or "")
        mark = {"kind": "asked", "by": hook, "why": f"{answer}: {reason}" if reason else answer}
        return {**mark, "blocked": True} if denied else mark
    if denied:
        return {"kind": "denied", "by": by, "why": why}
    if outcome == "blocked":
        return _blocked(by, why, events)
    if outcome == "mocked" or attrs.get(sc.HOOK_MOCKED) is True:
        return {"kind": "mocked", "by": str(attrs.get(sc.HOOK_MOCKED_BY) or ""), "why": ""}
    rewritten = attrs.get(sc.HOOK_REWRITTEN_BY)
    if rewritten:
        return {"kind": "rewritten", "by": ", ".join(map(str, rewritten)), "why": ""}
    # "hook-id: what it would have done" for each hook in mode: permissive
    would = list(map(str, attrs.get(sc.HOOK_PERMISSIVE) or ()))
    if would:
        hooks = ", ".join(dict.fromkeys(w.split(":")[0] for w in would))
        return {"kind": "permissive", "by": hooks, "why": "; ".join(would)}
    if attrs.get(sc.HOOK_ERRORS):
        errors = list(map(str, attrs[sc.HOOK_ERRORS]))
        return {"kind": "failed", "by": errors[0].split(":")[0], "why": "; ".join(errors)}
    return {}


def _blocked(by: str, why: str, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A blocked result's mark: who blocked it and why, from its ``tool_result_persist`` event
    (recorded there by otelhooks' instrumentation and the MCP gateway), else the span's."""
    for event in reversed(events):
        a = event.get("a") or {}
        if event.get("n") == sc.EVENT_TOOL_RESULT_PERSIST and a.get(sc.MESSAGE_BLOCKED):
            by = str(a.get(sc.HOOK_DECIDED_BY) or by)
            why = str(a.get(sc.HOOK_DECISION_REASON) or why)
            break
    return {"kind": "blocked", "by": by, "why": why or "result withheld from the model"}


@dataclass
class TraceSummary:
    """One row of the operations list (a trace), updated as its spans arrive."""

    trace_id: str
    seq: int
    agent: str = ""
    service: str = ""
    session: str = ""
    root: str = ""
    start_us: int = 0
    end_us: int = 0
    spans: int = 0
    tool_calls: int = 0
    errors: int = 0
    denials: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    run_cost: float | None = None
    call_cost: float | None = None
    tools: set[str] = field(default_factory=set)
    decisions: set[str] = field(default_factory=set)
    updated: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "agent": self.agent,
            "service": self.service,
            "session": self.session,
            "root": self.root,
            "start_us": self.start_us,
            "duration_us": max(0, self.end_us - self.start_us),
            "spans": self.spans,
            "tool_calls": self.tool_calls,
            "errors": self.errors,
            "denials": self.denials,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost": self.cost,
            "tools": sorted(self.tools),
            "decisions": sorted(self.decisions),
            "updated": self.updated,
        }

    def state(self) -> dict[str, Any]:
        """Every field as JSON values (sets as sorted lists): what a shared index stores, so
        that another instance goes on adding spans to the same row (:meth:`from_state`)."""
        return {
            f.name: sorted(value) if isinstance(value, set) else value
            for f in fields(self)
            for value in (getattr(self, f.name),)
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> TraceSummary:
        """The summary :meth:`state` gave."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {
            name: set(value) if known[name].default_factory is set else value
            for name, value in state.items()
            if name in known
        }
        return cls(**values)

    def add(self, span: dict[str, Any], service: str) -> None:
        attrs = span["a"]
        op = attrs.get(sc.GEN_AI_OPERATION_NAME)
        self.spans += 1
        self.start_us = min(self.start_us, span["t0"]) if self.start_us else span["t0"]
        self.end_us = max(self.end_us, span["t1"])
        if not self.service or span["p"] is None:
            self.service = service
        agent = attrs.get(sc.GEN_AI_AGENT_NAME)
        if agent and (not self.agent or (op == sc.OP_INVOKE_AGENT and span["p"] is None)):
            self.agent = str(agent)
        session = attrs.get(sc.GEN_AI_CONVERSATION_ID) or attrs.get(sc.SESSION_ID)
        if session and not self.session:
            self.session = str(session)
        if span["p"] is None or not self.root:
            self.root = span["n"]
        if op == sc.OP_EXECUTE_TOOL:
            self.tool_calls += 1
            tool = attrs.get(sc.TOOL_MATCHER_VALUE) or attrs.get(sc.GEN_AI_TOOL_NAME)
            if tool:
                self.tools.add(str(tool))
        if span["st"] == 2:
            self.errors += 1
        kind = span["d"].get("kind")
        if kind:
            self.decisions.add(kind)
            if kind == "blocked":
                self.denials += 1  # a hook stopped what the model reads, as a deny does
            elif kind == "denied" or span["d"].get("blocked"):
                self.decisions.add("denied")
                self.denials += 1
        # tokens: counted on model calls only (an invoke_agent span sums its own calls)
        if op == sc.OP_CHAT or (op != sc.OP_INVOKE_AGENT and sc.GEN_AI_USAGE_INPUT_TOKENS in attrs):
            self.tokens_in += _int(attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS))
            self.tokens_out += _int(attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS))
        # dollars: each otelhooks operation's own total (its calls, an instrumented SDK's
        # included; a sub-agent's run is its own operation), else the calls' prices
        run_cost = attrs.get(sc.OPERATION_COST_USD) if op == sc.OP_INVOKE_AGENT else None
        if isinstance(run_cost, (int, float)) and not isinstance(run_cost, bool):
            self.run_cost = (self.run_cost or 0.0) + float(run_cost)
        else:
            for key in _COST:
                value = attrs.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.call_cost = (self.call_cost or 0.0) + float(value)
                    break
        self.cost = self.run_cost if self.run_cost is not None else self.call_cost


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
