"""The budget guard in every dialect of hook files, and otelhooks' own model calls priced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks import AgentTracer, BudgetExceeded, ConfigError, load_config
from otelhooks.testing import Recorder, TestPipeline
from tests.conftest import hook

GPT_4O_COST = 1000 * 2.5e-6 + 500 * 10e-6  # genai-prices: $2.50 / $10 per million tokens

FILES = {
    "hooks.yaml": "hooks:\n  - {id: cap, type: beforeToolCall, budget: {operation_usd: 0.01}}\n",
    "settings.json": json.dumps(
        {"hooks": {"PreToolUse": [{"hooks": [{"type": "budget", "operation_usd": 0.01}]}]}}
    ),
    "cap.hook.json": json.dumps(
        {"name": "cap", "hooks": {"PreToolUse": [{"type": "budget", "operation_usd": 0.01}]}}
    ),
    "budget.yaml": "kind: budget\noperation_usd: 0.01\n",
    "app.json": json.dumps(
        {
            "name": "caps",
            "version": "0.1.0",
            "capabilities": {"hooks": {"subscribes": [], "intercepts": ["before_tool_call"]}},
            "hooks": [{"id": "cap", "type": "before_tool_call", "budget": {"operation_usd": 0.01}}],
        }
    ),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_one_line_guard_in_every_format_stops_model_and_tool_calls(
    pipe: TestPipeline, tracer: AgentTracer, tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_text(FILES[name])
    loaded = load_config([path])
    assert len(loaded.hooks) == 1
    pipe.register(*loaded.hooks)  # type: ignore[arg-type]
    with tracer.operation("spender") as op, op.step() as step:
        for _ in range(2):
            with step.llm("gpt-4o", provider="openai") as call:
                call.record("ok", input_tokens=1000, output_tokens=500)
        denied = step.run_tool("fs", "write", {"path": "a"}, lambda path: "written")
        refused_call = pytest.raises(BudgetExceeded, match=r"operation cost \$0.0150")
        with refused_call, step.llm("gpt-4o", provider="openai"):
            pytest.fail("a refused model call's body must not run")
    assert denied.success is False
    assert "budget: operation cost $0.0150, past its limit of $0.0100" in (denied.error or "")
    refused = pipe.spans("chat gpt-4o")[-1]
    assert refused.status.status_code.name == "ERROR"
    assert (refused.attributes or {})["otelhooks.budget.scope"] == "operation"


def test_a_guard_with_no_limit_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text("hooks:\n  - {id: cap, type: beforeToolCall, budget: {}}\n")
    with pytest.raises(ConfigError, match="a budget needs a limit"):
        load_config([path])


def test_a_guard_on_another_event_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text("hooks:\n  - {id: cap, type: afterStep, budget: {operation_usd: 1}}\n")
    with pytest.raises(ConfigError, match="a budget guard is a beforeToolCall hook"):
        load_config([path])


def test_a_permissive_guard_records_but_never_stops(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    pipe.register(
        {
            "id": "cap",
            "type": "beforeToolCall",
            "mode": "permissive",
            "budget": {"operation_usd": 0.001},
        }
    )
    with tracer.operation("spender") as op, op.step() as step:
        for _ in range(2):
            with step.llm("gpt-4o", provider="openai") as call:
                call.record("ok", input_tokens=1000, output_tokens=500)
        result = step.run_tool("fs", "write", {"path": "a"}, lambda path: "written")
    assert result.content == "written"
    attrs = pipe.span("execute_tool write").attributes or {}
    assert any("cap: deny: budget" in p for p in attrs["otelhooks.hook.permissive"])  # type: ignore[union-attr]


def test_own_model_calls_carry_their_cost_and_the_run_its_total(
    pipe: TestPipeline, tracer: AgentTracer, recorder: Recorder
) -> None:
    pipe.register(hook("done", "on_complete", recorder), hook("out", "llm_output", recorder))
    with (
        tracer.operation("helper", session_id="s") as op,
        op.step() as step,
        step.llm("gpt-4o", provider="openai") as call,
    ):
        call.record("ok", input_tokens=1000, output_tokens=500)
    pipe.flush()
    assert (pipe.span("chat gpt-4o").attributes or {})["otelhooks.llm.cost_usd"] == pytest.approx(
        GPT_4O_COST
    )
    [out] = recorder.of("llm_output")
    assert out.costUsd == pytest.approx(GPT_4O_COST)  # type: ignore[attr-defined]
    [done] = recorder.of("on_complete")
    assert done.cost == pytest.approx(GPT_4O_COST)  # type: ignore[attr-defined]
    assert done.spend.session.costUsd == pytest.approx(GPT_4O_COST)  # type: ignore[attr-defined]


def test_an_unknown_model_is_never_priced_and_the_run_has_no_cost(
    pipe: TestPipeline, tracer: AgentTracer, recorder: Recorder
) -> None:
    pipe.register(hook("done", "on_complete", recorder))
    with tracer.operation("helper") as op, op.step() as step:
        with step.llm("gpt-4o", provider="openai") as call:
            call.record("ok", input_tokens=1000, output_tokens=500)
        with step.llm("scripted-model") as call:
            call.record("ok", input_tokens=1000, output_tokens=500)
    pipe.flush()
    assert "otelhooks.llm.cost_usd" not in (pipe.span("chat scripted-model").attributes or {})
    [done] = recorder.of("on_complete")
    assert done.cost is None  # type: ignore[attr-defined]
    run = pipe.span("invoke_agent helper").attributes or {}
    assert run["otelhooks.operation.cost_usd"] == pytest.approx(GPT_4O_COST)
    assert run["otelhooks.llm.unpriced_calls"] == 1


def test_hooks_see_the_running_spend_of_operation_and_session(
    pipe: TestPipeline, tracer: AgentTracer, recorder: Recorder
) -> None:
    pipe.register(hook("see", "beforeToolCall", recorder))
    for _ in range(2):
        with tracer.operation("helper", session_id="conv") as op, op.step() as step:
            with step.llm("gpt-4o", provider="openai") as call:
                call.record("ok", input_tokens=1000, output_tokens=500)
            step.run_tool("calc", "add", {"a": 1}, lambda a: a)
    first, second = recorder.of("before_tool_call")
    assert first.spend.operation.costUsd == pytest.approx(GPT_4O_COST)  # type: ignore[attr-defined]
    assert second.spend.operation.costUsd == pytest.approx(GPT_4O_COST)  # type: ignore[attr-defined]
    assert second.spend.session.costUsd == pytest.approx(2 * GPT_4O_COST)  # type: ignore[attr-defined]
    assert second.spend.session.inputTokens == 2000  # type: ignore[attr-defined]


def test_a_runtime_that_reports_no_spend_is_told_once_that_nothing_is_limited() -> None:
    from structlog.testing import capture_logs

    from otelhooks import HooksEngine
    from otelhooks.events import ToolCallEvent

    engine = HooksEngine([{"id": "cap", "type": "beforeToolCall", "budget": {"session_usd": 1}}])
    with capture_logs() as logs:
        for _ in range(3):
            event = ToolCallEvent(identifier="fs", apiName="rm", toolCallId="c")
            assert not engine.dispatch("before_tool_call", event).blocked
    told = [e for e in logs if "budget guard sees no spend" in e["event"]]
    assert len(told) == 1
    assert told[0]["hook_id"] == "cap"
    engine.shutdown()
