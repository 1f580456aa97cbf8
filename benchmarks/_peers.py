"""Peers doing the same work as one otelhooks tool call: a tool-call span with its input and
output, through each library's own pipeline, exported in batches to a no-op exporter.

The peers live in ``benchmarks/.venv-peers`` (``python benchmarks/run.py --setup-peers``), a venv
with the system site-packages visible, so one process there runs the floor, otelhooks and every
peer side by side. A peer that does not import is left out (``available_peers`` says why).

* OpenAI Agents SDK: a ``function_span`` (input and output) inside a ``trace``, through
  ``BatchTraceProcessor`` with a no-op ``TracingExporter``. Not OpenTelemetry.
* Logfire: ``logfire.span`` with the tool span's attributes, sending switched off
  (``send_to_logfire=False``, no console), spans to a batch processor with a no-op exporter.
* OpenInference (Arize Phoenix's tracing helpers): an ``OITracer`` span of kind ``tool`` with
  ``set_tool`` and ``set_output``, on an SDK provider with a batch processor.
* Langfuse: an observation ``as_type="tool"`` with input and output, on its own provider with its
  span processor (a batch processor) given a no-op exporter; nothing leaves the machine.
"""

from __future__ import annotations

import os
from typing import Any

from _cases import (
    ARGS,
    ARGS_JSON,
    QUEUE,
    RESULT,
    Bench,
    Case,
    NoopExporter,
    _batch,
    tool_span_shape,
)
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

__all__ = ["PEER_CASES", "available_peers"]


class _OtelParent(Bench):
    """A peer on an SDK provider: a parent span per round, like the floor's step span."""

    provider: TracerProvider

    def _open_parent(self, tracer: trace.Tracer) -> None:
        self._parent = tracer.start_span("step 0")
        self._token = otel_context.attach(trace.set_span_in_context(self._parent))

    def _close_parent(self) -> None:
        otel_context.detach(self._token)
        self._parent.end()
        self.provider.force_flush()

    def close(self) -> None:
        self.provider.shutdown()


class OpenAIAgents(Bench):
    def __init__(self) -> None:
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-used")
        from agents.tracing import function_span, set_trace_processors
        from agents.tracing import trace as agents_trace
        from agents.tracing.processor_interface import TracingExporter
        from agents.tracing.processors import BatchTraceProcessor

        class Noop(TracingExporter):
            def export(self, items: list[Any]) -> None:
                return None

        self._processor = BatchTraceProcessor(Noop(), max_queue_size=QUEUE)
        set_trace_processors([self._processor])  # replaces the default OpenAI backend exporter
        self._trace_factory = agents_trace
        self._trace: Any = None

        def unit() -> None:
            with function_span("readFile", input=ARGS_JSON) as span:
                span.span_data.output = RESULT

        self.unit = unit

    def round_start(self) -> None:
        self._trace = self._trace_factory("bench")
        self._trace.start(mark_as_current=True)

    def round_end(self) -> None:
        self._trace.finish(reset_current=True)
        self._processor.force_flush()

    def close(self) -> None:
        self._processor.shutdown()


class Logfire(_OtelParent):
    def __init__(self) -> None:
        import logfire

        name, start, end = tool_span_shape()
        self._logfire = logfire.configure(
            send_to_logfire=False,
            console=False,
            metrics=False,
            inspect_arguments=False,
            additional_span_processors=[_batch()],
            service_name="bench",
        )
        self.provider = self._logfire.config.get_tracer_provider()  # type: ignore[assignment]
        self._tracer = self.provider.get_tracer("bench")
        span_fn = self._logfire.span
        attrs = dict(start)

        def unit() -> None:
            with span_fn(name, _span_name=name, **attrs) as span:
                span.set_attributes(end)

        self.unit = unit

    def round_start(self) -> None:
        self._open_parent(self._tracer)

    def round_end(self) -> None:
        self._close_parent()

    def close(self) -> None:
        self._logfire.force_flush()


class OpenInference(_OtelParent):
    def __init__(self) -> None:
        from openinference.instrumentation import OITracer, TraceConfig

        self.provider = TracerProvider()
        self.provider.add_span_processor(_batch())
        tracer = OITracer(self.provider.get_tracer("bench"), config=TraceConfig())
        self._tracer = tracer

        def unit() -> None:
            with tracer.start_as_current_span("readFile", openinference_span_kind="tool") as span:
                span.set_tool(name="readFile", parameters=ARGS)
                span.set_input(ARGS_JSON)
                span.set_output(RESULT)

        self.unit = unit

    def round_start(self) -> None:
        self._open_parent(self._tracer)

    def round_end(self) -> None:
        self._close_parent()


class Langfuse(_OtelParent):
    def __init__(self) -> None:
        from langfuse import Langfuse as Client

        self.provider = TracerProvider()
        self._client = Client(
            public_key="pk-lf-bench",
            secret_key="sk-lf-bench",
            base_url="http://127.0.0.1:9",  # never contacted: the exporter below is a no-op
            tracer_provider=self.provider,
            span_exporter=NoopExporter(),
            flush_at=512,
        )
        client = self._client

        def unit() -> None:
            with client.start_as_current_observation(
                name="readFile", as_type="tool", input=ARGS
            ) as obs:
                obs.update(output=RESULT)

        self.unit = unit

    def round_start(self) -> None:
        self._open_parent(self.provider.get_tracer("bench"))

    def round_end(self) -> None:
        self._close_parent()

    def close(self) -> None:
        self._client.shutdown()


PEER_CASES: list[Case] = [
    Case("peer_openai_agents", "OpenAI Agents SDK function_span", "tool", OpenAIAgents, peer=True),
    Case("peer_logfire", "Logfire span (sending off)", "tool", Logfire, peer=True),
    Case("peer_openinference", "OpenInference tool span", "tool", OpenInference, peer=True),
    Case("peer_langfuse", "Langfuse tool observation", "tool", Langfuse, peer=True),
]

_MODULES = {
    "peer_openai_agents": "agents",
    "peer_logfire": "logfire",
    "peer_openinference": "openinference.instrumentation",
    "peer_langfuse": "langfuse",
}


def available_peers() -> tuple[list[Case], dict[str, str]]:
    """The peer cases whose library imports here, and why the others are missing."""
    import importlib

    found, missing = [], {}
    for case in PEER_CASES:
        try:
            importlib.import_module(_MODULES[case.key])
        except Exception as exc:  # any import failure means "not installed here"
            missing[case.key] = f"{type(exc).__name__}: {exc}"
        else:
            found.append(case)
    return found, missing
