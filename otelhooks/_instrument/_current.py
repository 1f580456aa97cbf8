"""The operation and step a piece of code runs in, read from the OpenTelemetry context.

An :class:`~otelhooks.Operation` and a :class:`~otelhooks.Step` put themselves in the context
they make current (beside their span), so code that is not handed a ``step`` finds it: the
:func:`otelhooks.tool` decorator, and the span processor when another instrumentation starts a
model call's span under the step (its ``on_start`` is given that context). The OTel context is a
``contextvars`` variable, so the answer follows threads started with a copied context and
asyncio tasks, exactly as the span does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import context as otel_context

if TYPE_CHECKING:
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._step import Step

__all__ = ["OPERATION_KEY", "STEP_KEY", "current_operation", "current_step"]

OPERATION_KEY = otel_context.create_key("otelhooks.operation")
STEP_KEY = otel_context.create_key("otelhooks.step")


def current_step(context: otel_context.Context | None = None) -> Step | None:
    """The step running in ``context`` (the current one when omitted), or None."""
    step = otel_context.get_value(STEP_KEY, context)
    return step  # type: ignore[return-value]


def current_operation(context: otel_context.Context | None = None) -> Operation | None:
    """The operation running in ``context`` (the current one when omitted), or None."""
    op = otel_context.get_value(OPERATION_KEY, context)
    return op  # type: ignore[return-value]
