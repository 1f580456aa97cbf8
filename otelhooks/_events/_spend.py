"""What hooks see of the running cost: the ``spend`` field of model-call, tool-call, step and
completion payloads."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["CostTotals", "RunningSpend"]


class CostTotals(BaseModel):
    """Running cost and tokens of an operation or a session.

    ``costUsd`` sums the model calls that could be priced (``genai-prices``); ``unpricedCalls``
    counts those that could not (a model the price library does not know), whose dollars are
    not in ``costUsd``: a total with unpriced calls is a lower bound.
    """

    model_config = ConfigDict(defer_build=True)

    costUsd: float = 0.0
    inputTokens: int = 0
    outputTokens: int = 0
    llmCalls: int = 0
    unpricedCalls: int = 0


class RunningSpend(BaseModel):
    """The totals of the event's operation and, when it has one, of its session, as the event
    happened (``spend.operation.costUsd``, ``spend.session.costUsd``)."""

    model_config = ConfigDict(defer_build=True)

    operation: CostTotals | None = None
    session: CostTotals | None = None
    # why the session's totals could not be read (``serve``'s store failed): a budget guard
    # then fails, and its ``on_error`` decides, rather than judging a total it does not know
    error: str | None = None
