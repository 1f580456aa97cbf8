"""A model call's cost, added where it belongs, and the budget guards asked before the next one.

Every model call, otelhooks' own (``step.llm()``) and an instrumented SDK's (a foreign ``chat``
span under a step), goes through :func:`account`: priced with genai-prices, added to its step,
operation and session, counted in ``otelhooks.llm.calls`` and ``otelhooks.llm.cost``, and
checked against the budget guards' thresholds (``on_budget_threshold``, once per limit).
:func:`check_model_call` is asked as a model call starts: past a guard's limit it raises
:class:`~otelhooks.BudgetExceeded`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otelhooks import _semconv as sc
from otelhooks._cost import price_usd
from otelhooks._errors import BudgetExceeded
from otelhooks._events import BudgetThresholdEvent, HookEvent, RunningSpend
from otelhooks._instrument._spend import Spend, add_call, running
from otelhooks._live import LiveEvent

if TYPE_CHECKING:
    from otelhooks._actions._budget import BudgetAction
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._step import Step

__all__ = [
    "account",
    "budget_denial_attributes",
    "check_model_call",
    "guards",
    "spend_of",
]


def spend_of(op: Operation) -> RunningSpend:
    """The ``spend`` field of the operation's payloads, as of now."""
    return running(op.spend, op.session_spend)


def guards(op: Operation) -> list[tuple[str, BudgetAction]]:
    """``(hook id, action)`` of each enforced budget guard that applies to ``op`` (global ones,
    then the operation's own), in registration order; looked up again only when the registry
    changed (every model call asks)."""
    registry = op.tracer.engine.registry
    cached = op.budget_guards
    if cached is not None and cached[0] == registry.version:
        return cached[1]
    found = _lookup(op)
    op.budget_guards = (registry.version, found)
    return found


def _lookup(op: Operation) -> list[tuple[str, BudgetAction]]:
    from otelhooks._actions._budget import BudgetAction

    registry = op.tracer.engine.registry
    found: list[tuple[str, BudgetAction]] = []
    for hook in (*registry.hooks(), *registry.hooks(operation_id=op.operation_id)):
        if hook.budget is None or hook.mode != "enforce" or not hook.bound:
            continue
        action = hook.action
        if isinstance(action, BudgetAction):
            found.append((hook.id, action))
    return found


def check_model_call(op: Operation) -> None:
    """Raise :class:`~otelhooks.BudgetExceeded` when a guard of ``op`` says its operation or
    session has spent its limit (the model call must not start)."""
    found = guards(op)
    if not found:
        return
    spend = spend_of(op)
    for hook_id, action in found:
        passed = action.passed(spend)
        if passed is not None:
            scope, limit, spent, reason = passed
            raise BudgetExceeded(
                f"budget: {reason}", scope=scope, limit=limit, spent=spent, hook_id=hook_id
            )


def budget_denial_attributes(exc: BudgetExceeded) -> dict[str, Any]:
    """What a refused model call's span says: denied, by which guard, and which limit."""
    return {
        sc.HOOK_DECISION: "deny",
        sc.HOOK_DECISION_REASON: exc.reason,
        sc.HOOK_DECIDED_BY: exc.hook_id,
        sc.BUDGET_SCOPE: exc.scope,
        sc.BUDGET_LIMIT: exc.limit,
        sc.BUDGET_SPENT: exc.spent,
    }


def account(
    op: Operation,
    step: Step | None,
    *,
    model: str | None,
    provider: str | None,
    input_tokens: int,
    output_tokens: int,
    cost_usd: float | None = None,
    priced: bool = False,
) -> float | None:
    """Add one finished model call to its totals; returns its price (None: not priced).

    ``priced``: ``cost_usd`` is the call's own price (an agent that reports it), not to be
    looked up again.
    """
    cost = cost_usd if priced else price_usd(model, input_tokens, output_tokens, provider=provider)
    totals: list[Spend] = [op.spend]
    if step is not None:
        totals.append(step.spend)
    if op.session_spend is not None:
        totals.append(op.session_spend)
    add_call(tuple(totals), cost, input_tokens, output_tokens)
    attrs: dict[str, Any] = {sc.GEN_AI_AGENT_NAME: op.agent, sc.GEN_AI_REQUEST_MODEL: model or ""}
    if provider:
        attrs[sc.GEN_AI_PROVIDER_NAME] = provider
    metrics = op.tracer.metrics
    metrics.llm_calls.add(1, attrs)
    if cost is not None:
        metrics.llm_cost.add(cost, attrs)
    _thresholds(op)
    return cost


def _thresholds(op: Operation) -> None:
    """Fire ``on_budget_threshold`` for each guard limit the totals just approached."""
    found = guards(op)
    if not found:
        return
    spend = spend_of(op)
    for hook_id, action in found:
        for scope, limit, spent in action.approached(spend):
            total = op.session_spend if scope.startswith("session") else op.spend
            if total is None:
                continue
            if total.warned is None:
                total.warned = set()
            if (hook_id, scope) in total.warned:
                continue
            total.warned.add((hook_id, scope))
            _fire(op, scope, limit, spent, action.config.threshold, spend)


def _fire(
    op: Operation, scope: str, limit: float, spent: float, threshold: float, spend: RunningSpend
) -> None:
    common = op.common()

    def build() -> HookEvent:
        return BudgetThresholdEvent(
            **common,
            agentId=op.agent_id,
            spent=spent,
            limit=limit,
            threshold=threshold,
            scope=scope,
            spend=spend,
        )

    live = LiveEvent("on_budget_threshold", build, values=op.values, operation_id=op.operation_id)
    span = op.span
    if span.is_recording():
        live.span_context = span.get_span_context()
        span.add_event(
            "on_budget_threshold",
            {
                sc.EVENT_NAME: "on_budget_threshold",
                sc.BUDGET_SCOPE: scope,
                sc.BUDGET_LIMIT: limit,
                sc.BUDGET_SPENT: spent,
            },
        )
    op.tracer.observe(live)
