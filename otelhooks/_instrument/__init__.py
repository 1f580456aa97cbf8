"""The runtime-facing instrumentation API."""

from otelhooks._instrument._base import AgentTracer, SpanScope
from otelhooks._instrument._operation import CompleteReason, Operation, emit_event
from otelhooks._instrument._scopes import AgentCall, Approval, Compaction
from otelhooks._instrument._step import LlmCall, Step
from otelhooks._instrument._tool import ToolCall

__all__ = [
    "AgentCall",
    "AgentTracer",
    "Approval",
    "Compaction",
    "CompleteReason",
    "LlmCall",
    "Operation",
    "SpanScope",
    "Step",
    "ToolCall",
    "emit_event",
]
