"""The budget guard: ``budget: {operation_usd: 0.50}`` on a ``beforeToolCall`` hook.

A guard compares the running totals of the event's operation and session (the payload's
``spend``, priced with genai-prices) with its limits. On a tool call it is an ordinary
intercept hook: past a limit it blocks, with a reason that says which limit and by how much. On
a model call (an otelhooks ``step.llm()``, or an instrumented OpenAI / Anthropic SDK call) the
instrumentation asks the guards of the operation directly (:func:`budget_denial`), because
``llm_input`` is observed, not intercepted; the call raises :class:`~otelhooks.BudgetExceeded`
before its request is sent. A total equal to the limit has passed it: the limit is what may be
spent, and the next call would spend more.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from otelhooks._errors import ConfigError
from otelhooks._events import HookEvent, RunningSpend
from otelhooks._hooks import Block

__all__ = ["BudgetAction", "BudgetConfig", "Limit"]

_log = structlog.get_logger("otelhooks")


class BudgetConfig(BaseModel):
    """The limits of one budget guard; at least one is set.

    Attributes:
        operation_usd, session_usd: dollars an operation (one agent run) or a session (every
            run with the same ``session_id``) may spend on model calls.
        operation_tokens, session_tokens: the same in tokens (input plus output).
        threshold: the fraction of a limit at which ``on_budget_threshold`` fires, once per
            operation or session and limit.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    operation_usd: float | None = Field(default=None, gt=0, alias="operationUsd")
    session_usd: float | None = Field(default=None, gt=0, alias="sessionUsd")
    operation_tokens: int | None = Field(default=None, gt=0, alias="operationTokens")
    session_tokens: int | None = Field(default=None, gt=0, alias="sessionTokens")
    threshold: float = Field(default=0.8, gt=0, le=1)

    @model_validator(mode="after")
    def _one_limit(self) -> BudgetConfig:
        if not any(self.limits()):
            raise ValueError(
                "a budget needs a limit: operation_usd, session_usd, operation_tokens or "
                "session_tokens"
            )
        return self

    def limits(self) -> list[tuple[str, float]]:
        """``(scope, limit)`` of every limit set."""
        named = (
            ("operation", self.operation_usd),
            ("session", self.session_usd),
            ("operation_tokens", self.operation_tokens),
            ("session_tokens", self.session_tokens),
        )
        return [(scope, float(limit)) for scope, limit in named if limit is not None]


Limit = tuple[str, float, float, str]
"""A passed or approached limit: ``(scope, limit, spent, reason)``."""


def _spent(spend: RunningSpend, scope: str) -> float | None:
    totals = spend.session if scope.startswith("session") else spend.operation
    if totals is None:
        return None
    if scope.endswith("_tokens"):
        return float(totals.inputTokens + totals.outputTokens)
    return totals.costUsd


def _reason(scope: str, limit: float, spent: float) -> str:
    what, _, unit = scope.partition("_")
    if unit == "tokens":
        return f"{what} used {int(spent)} tokens, past its limit of {int(limit)}"
    return f"{what} cost ${spent:.4f}, past its limit of ${limit:.4f}"


class BudgetAction:
    """The action of a ``budget:`` hook (see the module docstring)."""

    kind = "budget"
    is_async = False
    concurrent = False
    hands_payload = False  # otelhooks' own code reads the payload; it never changes it

    def __init__(self, hook_id: str, event: str, config: Any) -> None:
        if event != "before_tool_call":
            raise ConfigError(
                f"a budget guard is a beforeToolCall hook (it also guards model calls), "
                f"not {event}",
                field="type",
            )
        if isinstance(config, BudgetConfig):
            self.config = config
        else:
            try:
                self.config = BudgetConfig.model_validate(config)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first["loc"])
                field = f"budget.{where}" if where else "budget"
                raise ConfigError(first["msg"], field=field) from None
        self.hook_id = hook_id
        self._told = False

    def passed(self, spend: RunningSpend | None) -> Limit | None:
        """The first limit ``spend`` has reached, or None."""
        if spend is None:
            return None
        for scope, limit in self.config.limits():
            spent = _spent(spend, scope)
            if spent is not None and spent >= limit:
                return scope, limit, spent, _reason(scope, limit, spent)
        return None

    def approached(self, spend: RunningSpend) -> Iterable[tuple[str, float, float]]:
        """``(scope, limit, spent)`` of each limit ``spend`` is past the threshold of."""
        for scope, limit in self.config.limits():
            spent = _spent(spend, scope)
            if spent is not None and spent >= limit * self.config.threshold:
                yield scope, limit, spent

    def __call__(self, payload: HookEvent) -> Block | None:
        spend = getattr(payload, "spend", None)
        if spend is None:
            if not self._told:
                # A runtime that reports no spend on its tool calls (the Claude Code bridge,
                # the MCP gateway, replay): said once, since the guard cannot limit anything.
                self._told = True
                _log.warning(
                    "budget guard sees no spend here: nothing is limited",
                    hook_id=self.hook_id,
                    tool=getattr(payload, "matcher_value", None),
                )
            return None
        if spend.error is not None:
            # the guard cannot know what was spent: its hook's on_error says what follows
            raise RuntimeError(f"budget guard cannot read the spend: {spend.error}")
        passed = self.passed(spend)
        return Block(f"budget: {passed[3]}") if passed is not None else None
