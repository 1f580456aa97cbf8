"""Model-call spans of any other instrumentation, hostile ones included: accounted to the step
they start under, never failing the caller, never holding memory without bound."""

from __future__ import annotations

import threading

import pytest

from otelhooks import AgentTracer
from otelhooks._model_spans import _MAX_OPEN
from otelhooks.testing import Recorder, TestPipeline
from tests.conftest import hook


def test_a_chat_span_of_another_tracer_is_accounted_to_the_step(
    pipe: TestPipeline, tracer: AgentTracer, recorder: Recorder
) -> None:
    pipe.register(hook("out", "llm_output", recorder))
    other = pipe.oh.tracer_provider.get_tracer("some.instrumentation")
    with (
        tracer.operation("helper") as op,
        op.step(),
        other.start_as_current_span(
            "chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}
        ) as span,
    ):
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        span.set_attribute("gen_ai.system", "openai")
        span.set_attribute("gen_ai.usage.input_tokens", 1000)
        span.set_attribute("gen_ai.usage.output_tokens", 500)
    pipe.flush()
    [out] = recorder.of("llm_output")
    assert out.costUsd == pytest.approx(0.0075)  # type: ignore[attr-defined]
    assert out.provider == "openai"  # type: ignore[attr-defined]
    assert op.spend.calls == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": "many"},
        {"gen_ai.usage.input_tokens": 10**18, "gen_ai.usage.output_tokens": 1},
        {"gen_ai.usage.input_tokens": True},
        {},
    ],
)
def test_hostile_usage_attributes_never_fail_the_call_nor_make_a_cost_up(
    pipe: TestPipeline, tracer: AgentTracer, usage: dict[str, object]
) -> None:
    other = pipe.oh.tracer_provider.get_tracer("hostile")
    with tracer.operation("helper") as op, op.step():
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "x" * 10_000, **usage}
        with other.start_as_current_span("chat", attributes=attrs):  # type: ignore[arg-type]
            pass
    assert op.spend.cost_usd == 0
    assert op.spend.input_tokens >= 0
    assert op.spend.output_tokens >= 0


def test_spans_that_never_end_are_forgotten_past_the_bound(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    other = pipe.oh.tracer_provider.get_tracer("leaky")
    with tracer.operation("helper") as op, op.step():
        for _ in range(_MAX_OPEN + 50):
            other.start_span("chat", attributes={"gen_ai.operation.name": "chat"})
    calls = pipe.oh.hooks._model_calls  # the processor's own bookkeeping, read-only here
    assert len(calls._open) <= _MAX_OPEN


def test_a_span_ended_on_another_thread_is_still_the_steps(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    other = pipe.oh.tracer_provider.get_tracer("streaming")
    with tracer.operation("helper") as op, op.step():
        span = other.start_span(
            "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
        )
    span.set_attribute("gen_ai.usage.input_tokens", 1000)
    span.set_attribute("gen_ai.usage.output_tokens", 500)
    thread = threading.Thread(target=span.end)  # a stream read to its end elsewhere, later
    thread.start()
    thread.join()
    assert op.spend.calls == 1
    assert op.spend.cost_usd == pytest.approx(0.0075)


def test_without_foreign_observers_a_model_call_under_a_step_is_still_accounted() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from otelhooks import HookSpanProcessor

    recorder = Recorder()
    hooks = HookSpanProcessor(observe_foreign_spans=False)
    hooks.register([hook("out", "llm_output", recorder)])
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(hooks)
    tracer = AgentTracer(tracer_provider=provider, engine=hooks.engine)
    other = provider.get_tracer("some.instrumentation")
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 500,
    }
    with tracer.operation("helper") as op, op.step():
        other.start_span("chat gpt-4o", attributes=attrs).end()
    assert hooks.force_flush()
    assert recorder.of("llm_output") == []
    assert op.spend.cost_usd == pytest.approx(0.0075)
    provider.shutdown()
