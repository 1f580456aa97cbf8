"""Model calls other instrumentations make under an otelhooks step (the OpenAI and Anthropic
SDKs, through ``otelhooks.instrument``).

Their ``chat`` spans start in the current OpenTelemetry context, which holds the otelhooks
operation and step (``_instrument._current``). :class:`ForeignModelCalls` is the span
processor's part for them:

* **As the span starts** (``on_start``, on the caller's thread, before the SDK sends anything)
  it remembers which operation and step the call belongs to and asks the budget guards. A guard
  whose limit was passed refuses the call: the span is marked denied and ended (so exporters
  still get it), and :class:`~otelhooks.BudgetExceeded` is raised out of the SDK call. The SDK's
  ``SpanProcessor`` contract says ``on_start`` should not raise; this is the one place
  otelhooks does, because it is the only moment before the request leaves, and the
  instrumentations start their span before calling the SDK, outside their own error handling
  (the SDK tests hold both to it: the refused call reaches no server).
* **As it ends** it reads the model, provider and token usage from the GenAI attributes, prices
  the call, adds it to the totals and metrics, and returns the ``llm_input`` and ``llm_output``
  events, with the operation, step and cost filled in. ``llm_input`` is observed, not
  intercepted: the request is already sent when the span ends, and rewriting an SDK's request
  is not something its instrumentation lets a processor do.

Only the current step's calls are accounted: a ``chat`` span with no otelhooks operation around
it goes the way of every other foreign GenAI span (``events_from_foreign_span``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import Status, StatusCode

from otelhooks import _semconv as sc
from otelhooks._errors import BudgetExceeded
from otelhooks._events import HookEvent, LlmInputEvent, LlmOutputEvent, TokenUsage
from otelhooks._instrument._budget import (
    account,
    budget_denial_attributes,
    check_model_call,
    spend_of,
)
from otelhooks._instrument._current import current_operation, current_step
from otelhooks._live import LiveEvent

if TYPE_CHECKING:
    from otelhooks._engine import HooksEngine
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._step import Step

__all__ = ["MODEL_OPERATIONS", "ForeignModelCalls", "is_model_call"]

# gen_ai.operation.name values of a model call.
MODEL_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
# Model calls remembered between start and end; a call whose span never ends (an abandoned
# stream) is forgotten once this many others started after it.
_MAX_OPEN: Final = 10_000


def is_model_call(attributes: Mapping[str, Any] | None) -> bool:
    if not attributes:
        return False
    return attributes.get(sc.GEN_AI_OPERATION_NAME) in MODEL_OPERATIONS


def _int(attrs: Mapping[str, Any], key: str) -> int:
    value = attrs.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def _str(attrs: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class ForeignModelCalls:
    """The model calls of other instrumentations under this engine's steps."""

    def __init__(self, engine: HooksEngine) -> None:
        self._engine = engine
        self._open: OrderedDict[int, tuple[Operation, Step | None]] = OrderedDict()
        self._lock = threading.Lock()

    def started(self, span: Span, parent_context: Context | None) -> None:
        """Remember the call's operation and step; refuse it past a budget limit."""
        if not is_model_call(span.attributes):
            return
        step = current_step(parent_context)
        op = step.operation if step is not None else current_operation(parent_context)
        if op is None or op.tracer.engine is not self._engine:
            return
        try:
            check_model_call(op)
        except BudgetExceeded as exc:
            span.set_attributes(budget_denial_attributes(exc))
            span.set_attribute(sc.ERROR_TYPE, type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, exc.reason))
            span.end()
            raise
        with self._lock:
            self._open[span.context.span_id] = (op, step)
            while len(self._open) > _MAX_OPEN:
                self._open.popitem(last=False)

    def ended(self, span: ReadableSpan) -> list[LiveEvent] | None:
        """The call's events, accounted to its step; None when it was not under one of ours."""
        context = span.context
        if context is None:
            return None
        with self._lock:
            found = self._open.pop(context.span_id, None)
        attrs = span.attributes or {}
        if found is None:
            # A call refused as it started ended there: nothing was asked of the model.
            return [] if attrs.get(sc.BUDGET_SCOPE) is not None else None
        op, step = found
        model = _str(attrs, sc.GEN_AI_RESPONSE_MODEL, sc.GEN_AI_REQUEST_MODEL)
        request_model = _str(attrs, sc.GEN_AI_REQUEST_MODEL) or model or ""
        provider = _str(attrs, sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_SYSTEM)
        failed = span.status.status_code is StatusCode.ERROR
        usage = TokenUsage(
            input=_int(attrs, sc.GEN_AI_USAGE_INPUT_TOKENS),
            output=_int(attrs, sc.GEN_AI_USAGE_OUTPUT_TOKENS),
        )
        reported = sc.GEN_AI_USAGE_INPUT_TOKENS in attrs or sc.GEN_AI_USAGE_OUTPUT_TOKENS in attrs
        cost: float | None = None
        if reported and not failed:
            for total in (op.usage, *((step.usage,) if step is not None else ())):
                total.input += usage.input
                total.output += usage.output
            cost = account(
                op,
                step,
                model=model,
                provider=provider,
                input_tokens=usage.input,
                output_tokens=usage.output,
            )
        op.llm_calls += 1
        spend = spend_of(op)
        common: dict[str, Any] = {
            **op.common(),
            "traceId": format(context.trace_id, "032x"),
            "spanId": format(context.span_id, "016x"),
            "agentId": op.agent_id,
            "stepIndex": step.index if step is not None else None,
            "provider": provider,
            "spend": spend,
        }
        if span.end_time:
            common["timestamp"] = span.end_time // 1_000_000

        def build_input() -> HookEvent:
            return LlmInputEvent(**common, model=request_model)

        def build_output() -> HookEvent:
            return LlmOutputEvent(**common, model=model, tokenUsage=usage, costUsd=cost)

        values = (request_model or "*",)
        return [
            LiveEvent("llm_input", build_input, values=values, operation_id=op.operation_id),
            LiveEvent("llm_output", build_output, values=values, operation_id=op.operation_id),
        ]
