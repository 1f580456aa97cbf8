"""The exported span tree (DESIGN §3): names, parents, links, attributes, errors, content capture.

One scenario exercises every scope; each test checks one property of what it exported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import Recorder, attribute_values, hook
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from otelhooks import Block, CompleteEvent, Operation, args_fingerprint
from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline, pipeline

SECRET = "hunter2-s3cr3t"
READ_ARGS = {"path": "notes.txt", "token": SECRET}
LLM_MESSAGES = [{"role": "user", "content": f"my password is {SECRET}"}]


def _broken_tool() -> None:
    raise ZeroDivisionError("division by zero")


@dataclass
class Scenario:
    pipe: TestPipeline
    recorder: Recorder
    op: Operation
    child: Operation
    isolated: Operation
    failed_child: Operation

    def span(self, name: str) -> ReadableSpan:
        return self.pipe.span(name)

    def attrs(self, name: str) -> dict[str, Any]:
        return dict(self.span(name).attributes or {})

    def step(self, index: int) -> ReadableSpan:
        """Step ``index`` of the top operation (the in-process child has steps too)."""
        (found,) = [
            s
            for s in self.pipe.spans(f"step {index}")
            if (s.attributes or {}).get(sc.OPERATION_ID) == self.op.operation_id
        ]
        return found

    @property
    def root(self) -> ReadableSpan:
        return self.span("invoke_agent planner")


def run_scenario(pipe: TestPipeline, recorder: Recorder) -> Scenario:
    pipe.register(
        hook("guard", "beforeToolCall", lambda e: Block("no shell"), matcher="^shell/"),
        hook("audit", "afterToolCall", recorder),
        hook("tool-error", "onToolCallError", recorder),
        hook("agent-error", "onCallAgentError", recorder),
        hook("done", "onComplete", recorder),
    )
    with pipe.tracer.operation(
        "planner",
        agent_id="planner-v1",
        provider="openai",
        session_id="sess-1",
        user_id="user-1",
        input=f"read my notes, password {SECRET}",
    ) as op:
        with op.step() as step:
            with step.llm("gpt-4o", messages=LLM_MESSAGES) as llm:
                llm.record(f"I will read it {SECRET}", input_tokens=12, output_tokens=3)
            step.run_tool("fs", "readFile", READ_ARGS, lambda path, token: f"contents {SECRET}")
            step.run_tool("shell", "rm", {"path": "/", "token": SECRET}, lambda path, token: None)
            step.run_tool("fs", "broken", {}, _broken_tool)
            with step.approval([{"identifier": "fs", "apiName": "delete"}]) as approval:
                approval.approve("call_ok")
            with step.approval([{"identifier": "fs", "apiName": "delete"}]) as approval:
                approval.reject("too risky", tool_call_id="call_no", stop=False)
        with op.step() as step:
            with step.compact(message_count=40, token_count=9000) as compaction:
                compaction.done(messages_after=5, tokens_after=1000, summary="summary")
            with (
                step.call_agent("researcher", "find sources") as call,
                call.operation() as child,
                child.step() as child_step,
            ):
                child_step.run_tool("web", "search", {"q": "x"}, lambda q: "results")
            with (
                step.call_agent("sandbox", "run code", isolated=True) as call,
                call.operation() as isolated,
            ):
                pass
            with step.call_agent("flaky", "try") as call:
                try:
                    with call.operation() as failed_child:
                        raise ValueError("child failed")
                except ValueError:
                    pass
    pipe.flush()
    return Scenario(pipe, recorder, op, child, isolated, failed_child)


@pytest.fixture
def scenario(pipe: TestPipeline, recorder: Recorder) -> Scenario:
    return run_scenario(pipe, recorder)


@pytest.fixture
def capturing() -> Iterator[TestPipeline]:
    with pipeline(capture_content=True) as fresh:
        yield fresh


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


# -- the operation span ------------------------------------------------------------------------


def test_root_span_is_invoke_agent_with_no_parent(scenario: Scenario) -> None:
    assert scenario.root.parent is None


def test_root_span_carries_the_gen_ai_agent_attributes(scenario: Scenario) -> None:
    attrs = scenario.attrs("invoke_agent planner")
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs[sc.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[sc.GEN_AI_AGENT_NAME] == "planner"
    assert attrs[sc.GEN_AI_AGENT_ID] == "planner-v1"
    assert attrs[sc.GEN_AI_CONVERSATION_ID] == "sess-1"


def test_root_span_carries_the_operation_id(scenario: Scenario) -> None:
    assert scenario.attrs("invoke_agent planner")[sc.OPERATION_ID] == scenario.op.operation_id


def test_root_span_carries_the_complete_reason(scenario: Scenario) -> None:
    assert scenario.attrs("invoke_agent planner")[sc.COMPLETE_REASON] == "done"


def test_root_span_sums_the_token_usage_of_its_llm_calls(scenario: Scenario) -> None:
    attrs = scenario.attrs("invoke_agent planner")
    assert (attrs[sc.GEN_AI_USAGE_INPUT_TOKENS], attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS]) == (12, 3)


def test_every_span_of_an_in_process_run_shares_the_root_trace(scenario: Scenario) -> None:
    isolated = span_id(scenario.span("invoke_agent sandbox"))
    others = [s for s in scenario.pipe.spans() if span_id(s) != isolated]
    assert {trace_id(s) for s in others} == {trace_id(scenario.root)}


# -- steps and LLM calls ----------------------------------------------------------------------


def test_steps_are_children_of_the_root(scenario: Scenario) -> None:
    for index in (0, 1):
        assert parent_id(scenario.step(index)) == span_id(scenario.root)


def test_step_span_carries_its_index(scenario: Scenario) -> None:
    assert (scenario.step(1).attributes or {})[sc.STEP_INDEX] == 1


def test_chat_span_is_a_client_child_of_the_step(scenario: Scenario) -> None:
    chat = scenario.span("chat gpt-4o")
    assert parent_id(chat) == span_id(scenario.step(0))
    assert chat.kind is SpanKind.CLIENT


def test_chat_span_carries_model_and_token_usage(scenario: Scenario) -> None:
    attrs = scenario.attrs("chat gpt-4o")
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[sc.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert (attrs[sc.GEN_AI_USAGE_INPUT_TOKENS], attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS]) == (12, 3)


def test_chat_records_the_token_usage_metric(scenario: Scenario) -> None:
    pipe = scenario.pipe
    base = {sc.GEN_AI_REQUEST_MODEL: "gpt-4o", sc.GEN_AI_OPERATION_NAME: "chat"}
    input_points = pipe.metric_points(
        sc.METRIC_TOKEN_USAGE, {**base, sc.GEN_AI_TOKEN_TYPE: "input"}
    )
    output_points = pipe.metric_points(
        sc.METRIC_TOKEN_USAGE, {**base, sc.GEN_AI_TOKEN_TYPE: "output"}
    )
    assert [p.sum for p in input_points] == [12]  # type: ignore[union-attr]
    assert [p.sum for p in output_points] == [3]  # type: ignore[union-attr]


# -- tool calls --------------------------------------------------------------------------------


def test_tool_span_is_a_child_of_the_step(scenario: Scenario) -> None:
    assert parent_id(scenario.span("execute_tool readFile")) == span_id(scenario.step(0))


def test_tool_span_carries_the_gen_ai_tool_attributes(scenario: Scenario) -> None:
    attrs = scenario.attrs("execute_tool readFile")
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert attrs[sc.GEN_AI_TOOL_NAME] == "readFile"
    assert str(attrs[sc.GEN_AI_TOOL_CALL_ID]).startswith("call_")
    assert attrs[sc.GEN_AI_TOOL_TYPE] == "function"


def test_tool_span_carries_the_matcher_value(scenario: Scenario) -> None:
    assert scenario.attrs("execute_tool readFile")[sc.TOOL_MATCHER_VALUE] == "fs/readFile"


def test_tool_span_lists_the_hooks_that_matched(scenario: Scenario) -> None:
    # Interceptors and the observers that may still fire for the call (after, error).
    readfile = scenario.attrs("execute_tool readFile")[sc.HOOK_MATCHED]
    assert set(readfile) == {"audit", "tool-error"}
    assert set(scenario.attrs("execute_tool rm")[sc.HOOK_MATCHED]) == {
        "guard",
        "audit",
        "tool-error",
    }


def test_tool_span_carries_the_arguments_fingerprint(scenario: Scenario) -> None:
    assert scenario.attrs("execute_tool readFile")[sc.TOOL_ARGS_FINGERPRINT] == args_fingerprint(
        READ_ARGS
    )


def test_allowed_tool_span_records_decision_allow(pipe: TestPipeline) -> None:
    pipe.register(hook("allow", "beforeToolCall", lambda e: None))
    with pipe.tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, lambda: "x")
    attrs = pipe.span("execute_tool readFile").attributes or {}
    assert (attrs[sc.HOOK_DECISION], attrs[sc.HOOK_MOCKED]) == ("allow", False)
    assert sc.HOOK_CLASSIFICATION not in attrs


def test_tool_span_without_interceptors_records_no_decision(scenario: Scenario) -> None:
    assert sc.HOOK_DECISION not in scenario.attrs("execute_tool readFile")


def test_denied_tool_span_records_decision_reason_and_classification(scenario: Scenario) -> None:
    attrs = scenario.attrs("execute_tool rm")
    assert attrs[sc.HOOK_DECISION] == "deny"
    assert attrs[sc.HOOK_DECISION_REASON] == "no shell"
    assert attrs[sc.HOOK_DECIDED_BY] == "guard"
    assert attrs[sc.HOOK_CLASSIFICATION] == "hook_denied"
    assert attrs[sc.TOOL_OUTCOME] == "denied"


def test_tool_calls_are_counted_by_outcome(scenario: Scenario) -> None:
    pipe = scenario.pipe
    outcomes = {
        outcome: pipe.metric_total(sc.METRIC_TOOL_CALLS, {sc.ATTR_OUTCOME: outcome})
        for outcome in ("success", "denied", "error")
    }
    assert outcomes == {"success": 2, "denied": 1, "error": 1}


def test_tool_exception_sets_error_status_event_and_type(scenario: Scenario) -> None:
    span = scenario.span("execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]
    assert (span.attributes or {})[sc.ERROR_TYPE] == "ZeroDivisionError"


def test_tool_exception_fires_on_tool_call_error(scenario: Scenario) -> None:
    errors = scenario.recorder.fields("apiName", "errorType", event="on_tool_call_error")
    assert errors == [("broken", "ZeroDivisionError")]


def test_tool_exception_becomes_a_failed_result(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("a") as op, op.step() as step:
        result = step.run_tool("fs", "broken", {}, _broken_tool)
    assert (result.success, result.content) == (False, "ZeroDivisionError: division by zero")


# -- human approval --------------------------------------------------------------------------


def test_approval_spans_are_children_of_the_step(scenario: Scenario) -> None:
    approvals = scenario.pipe.spans("request_human_approve")
    assert len(approvals) == 2
    assert {parent_id(s) for s in approvals} == {span_id(scenario.step(0))}


def test_approval_spans_carry_approve_and_reject_events(scenario: Scenario) -> None:
    events = [[e.name for e in s.events] for s in scenario.pipe.spans("request_human_approve")]
    assert events == [["otelhooks.approve"], ["otelhooks.reject"]]


def test_reject_event_carries_the_action_and_reason(scenario: Scenario) -> None:
    reject = scenario.pipe.spans("request_human_approve")[1].events[0]
    attrs = dict(reject.attributes or {})
    assert attrs[sc.APPROVAL_ACTION] == "rejectAndContinue"
    assert attrs[sc.APPROVAL_REJECTION_REASON] == "too risky"
    assert attrs[sc.APPROVAL_TOOL_CALL_ID] == "call_no"


# -- compaction ----------------------------------------------------------------------------------


def test_compaction_span_is_a_child_of_the_step(scenario: Scenario) -> None:
    assert parent_id(scenario.span("compress_context")) == span_id(scenario.step(1))


def test_compaction_span_links_to_the_operation_span(scenario: Scenario) -> None:
    (link,) = scenario.span("compress_context").links
    assert link.context.span_id == span_id(scenario.root)
    assert link.context.trace_id == trace_id(scenario.root)
    assert (link.attributes or {})[sc.LINK_RELATION] == sc.LINK_PARENT_OPERATION


def test_compaction_span_records_what_was_saved(scenario: Scenario) -> None:
    attrs = scenario.attrs("compress_context")
    assert (attrs[sc.COMPACT_MESSAGES_BEFORE], attrs[sc.COMPACT_MESSAGES_AFTER]) == (40, 5)
    assert attrs[sc.COMPACT_TOKENS_SAVED] == 8000


# -- sub-agents --------------------------------------------------------------------------------


def test_in_process_sub_agent_is_in_the_same_trace(scenario: Scenario) -> None:
    assert trace_id(scenario.span("invoke_agent researcher")) == trace_id(scenario.root)


def test_in_process_sub_agent_is_parented_under_the_call_span(scenario: Scenario) -> None:
    call = scenario.span("call_agent researcher")
    assert parent_id(call) == span_id(scenario.step(1))
    assert parent_id(scenario.span("invoke_agent researcher")) == span_id(call)


def test_in_process_sub_agent_links_to_the_parent_operation(scenario: Scenario) -> None:
    (link,) = scenario.span("invoke_agent researcher").links
    assert link.context.span_id == span_id(scenario.root)
    assert (link.attributes or {})[sc.LINK_RELATION] == sc.LINK_PARENT_OPERATION


def test_sub_agent_span_names_its_parent_operation(scenario: Scenario) -> None:
    attrs = scenario.attrs("invoke_agent researcher")
    assert attrs[sc.PARENT_OPERATION_ID] == scenario.op.operation_id
    assert attrs[sc.GEN_AI_CONVERSATION_ID] == "sess-1"


def test_isolated_sub_agent_has_its_own_trace(scenario: Scenario) -> None:
    span = scenario.span("invoke_agent sandbox")
    assert trace_id(span) != trace_id(scenario.root)
    assert span.parent is None


def test_isolated_sub_agent_links_to_the_parent_operation(scenario: Scenario) -> None:
    (link,) = scenario.span("invoke_agent sandbox").links
    assert (link.context.trace_id, link.context.span_id) == (
        trace_id(scenario.root),
        span_id(scenario.root),
    )


def test_isolated_sub_agent_records_its_thread(scenario: Scenario) -> None:
    thread = scenario.isolated.thread_id
    assert thread
    assert scenario.attrs("invoke_agent sandbox")[sc.SUBAGENT_THREAD_ID] == thread
    assert scenario.attrs("call_agent sandbox")[sc.SUBAGENT_THREAD_ID] == thread


def test_failing_sub_agent_operation_has_error_status_event_and_type(scenario: Scenario) -> None:
    span = scenario.span("invoke_agent flaky")
    assert span.status.status_code is StatusCode.ERROR
    assert "exception" in [e.name for e in span.events]
    assert (span.attributes or {})[sc.ERROR_TYPE] == "ValueError"


def test_failing_sub_agent_marks_the_call_span_error(scenario: Scenario) -> None:
    call = scenario.span("call_agent flaky")
    assert call.status.status_code is StatusCode.ERROR
    assert (call.attributes or {})[sc.ERROR_TYPE] == "ValueError"


def test_failing_sub_agent_fires_on_call_agent_error(scenario: Scenario) -> None:
    errors = scenario.recorder.fields("agentId", "error", event="on_call_agent_error")
    assert errors == [("flaky", "child failed")]


def test_failing_sub_agent_leaves_the_parent_operation_done(scenario: Scenario) -> None:
    assert scenario.op.reason == "done"
    assert scenario.root.status.status_code is not StatusCode.ERROR


# -- operation errors --------------------------------------------------------------------------


def _failing_run(pipe: TestPipeline) -> None:
    with pytest.raises(KeyError), pipe.tracer.operation("worker"):
        raise KeyError("missing")
    pipe.flush()


def test_operation_error_sets_error_status_and_exception_event(pipe: TestPipeline) -> None:
    _failing_run(pipe)
    span = pipe.span("invoke_agent worker")
    assert span.status.status_code is StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]
    assert (span.attributes or {})[sc.ERROR_TYPE] == "KeyError"


def test_operation_error_completes_with_reason_error(pipe: TestPipeline) -> None:
    _failing_run(pipe)
    assert pipe.span("invoke_agent worker").attributes[sc.COMPLETE_REASON] == "error"  # type: ignore[index]


def test_operation_error_fires_on_error(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("err", "onError", recorder))
    _failing_run(pipe)
    assert recorder.fields("errorType", "agentId") == [("KeyError", "worker")]


def test_operation_error_increments_the_error_metric(pipe: TestPipeline) -> None:
    _failing_run(pipe)
    attrs = {sc.GEN_AI_AGENT_NAME: "worker", sc.ERROR_TYPE: "KeyError"}
    assert pipe.metric_total(sc.METRIC_ERRORS, attrs) == 1


def test_operation_is_counted_by_outcome(pipe: TestPipeline) -> None:
    _failing_run(pipe)
    with pipe.tracer.operation("worker"):
        pass
    for outcome in ("error", "done"):
        attrs = {sc.GEN_AI_AGENT_NAME: "worker", sc.ATTR_OUTCOME: outcome}
        assert pipe.metric_total(sc.METRIC_OPERATIONS, attrs) == 1


# -- content capture -----------------------------------------------------------------------------


def test_tool_arguments_are_not_captured_by_default(scenario: Scenario) -> None:
    for span in scenario.pipe.spans():
        assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in (span.attributes or {})
        assert sc.GEN_AI_TOOL_CALL_RESULT not in (span.attributes or {})
        assert sc.GEN_AI_INPUT_MESSAGES not in (span.attributes or {})


def test_no_content_appears_in_any_attribute_by_default(scenario: Scenario) -> None:
    values = attribute_values(scenario.pipe.spans())
    assert [v for v in values if SECRET in v] == []


def test_tool_arguments_are_captured_when_enabled(capturing: TestPipeline) -> None:
    with capturing.tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "readFile", READ_ARGS, lambda path, token: "contents")
    attrs = capturing.span("execute_tool readFile").attributes or {}
    assert json.loads(str(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])) == READ_ARGS
    assert attrs[sc.GEN_AI_TOOL_CALL_RESULT] == "contents"


def test_llm_messages_are_captured_when_enabled(capturing: TestPipeline) -> None:
    with (
        capturing.tracer.operation("a") as op,
        op.step() as step,
        step.llm("m", messages=LLM_MESSAGES) as llm,
    ):
        llm.record("answer")
    attrs = capturing.span("chat m").attributes or {}
    assert json.loads(str(attrs[sc.GEN_AI_INPUT_MESSAGES])) == LLM_MESSAGES
    assert "answer" in str(attrs[sc.GEN_AI_OUTPUT_MESSAGES])


def test_capture_content_env_switch_turns_capture_on(
    pipe: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otelhooks import AgentTracer

    monkeypatch.setenv(sc.ENV_CAPTURE_CONTENT, "true")
    tracer = AgentTracer(
        tracer_provider=pipe.oh.tracer_provider, hooks=pipe.oh.hooks, metrics=pipe.oh.metrics
    )
    with tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "readFile", {"path": "x"}, lambda path: "y")
    assert sc.GEN_AI_TOOL_CALL_ARGUMENTS in (pipe.span("execute_tool readFile").attributes or {})


# -- on_complete reasons -------------------------------------------------------------------------


def _complete_reasons(recorder: Recorder) -> list[str]:
    return [e.reason for e in recorder.events if isinstance(e, CompleteEvent)]


def test_on_complete_reason_done(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("done", "onComplete", recorder))
    with pipe.tracer.operation("a"):
        pass
    pipe.flush()
    assert _complete_reasons(recorder) == ["done"]
    assert pipe.span("invoke_agent a").attributes[sc.COMPLETE_REASON] == "done"  # type: ignore[index]


def test_on_complete_reason_interrupted_by_a_rejected_approval(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(
        hook("done", "onComplete", recorder),
        hook("stop", "onStopByHumanIntervention", recorder),
    )
    with (
        pipe.tracer.operation("a") as op,
        op.step() as step,
        step.approval([{"identifier": "fs", "apiName": "rm"}]) as approval,
    ):
        approval.reject("no", tool_call_id="call_1")
    pipe.flush()
    assert recorder.names() == ["on_stop_by_human_intervention", "on_complete"]
    assert _complete_reasons(recorder) == ["interrupted"]
    assert pipe.span("invoke_agent a").attributes[sc.COMPLETE_REASON] == "interrupted"  # type: ignore[index]


def test_on_complete_reason_max_steps(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("done", "onComplete", recorder))
    with pipe.tracer.operation("a") as op:
        op.complete("max_steps")
    pipe.flush()
    assert _complete_reasons(recorder) == ["max_steps"]
    assert pipe.span("invoke_agent a").attributes[sc.COMPLETE_REASON] == "max_steps"  # type: ignore[index]


def test_on_complete_reports_success_only_when_done(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("done", "onComplete", recorder))
    with pipe.tracer.operation("a"):
        pass
    with pipe.tracer.operation("b") as op:
        op.complete("cost_limit")
    pipe.flush()
    assert recorder.fields("success") == [(True,), (False,)]


# -- payloads point back to their spans --------------------------------------------------------


def test_event_payload_carries_the_trace_and_span_of_its_span(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("after", "afterToolCall", recorder))
    with pipe.tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, lambda: "x")
    pipe.flush()
    span = pipe.span("execute_tool readFile")
    (event,) = recorder.events
    assert event.traceId == format(trace_id(span), "032x")
    assert event.spanId == format(span_id(span), "016x")
