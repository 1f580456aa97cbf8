"""Dispatch rules, one behaviour per test, through a real ``AgentTracer`` and ``HookSpanProcessor``.

The rules come from ``otelhooks._dispatch._chain`` (intercept chain), ``_registry`` (ordering and
per-operation registration) and DESIGN §5.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import Recorder, hook
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue
from structlog.testing import capture_logs

from otelhooks import (
    AfterToolCallEvent,
    Block,
    ConfigError,
    Hook,
    HookEvent,
    ToolCallEvent,
    ToolResult,
    UnknownEventError,
)
from otelhooks import semconv as sc
from otelhooks.events import BeforeAgentStartEvent, MessageSendingEvent, ToolResultPersistEvent
from otelhooks.testing import TestPipeline, pipeline

INVOCATIONS = sc.METRIC_HOOK_INVOCATIONS


def _ok(**kwargs: Any) -> str:
    return "ran"


def run_one_tool(
    pipe: TestPipeline,
    identifier: str = "fs",
    api_name: str = "readFile",
    args: dict[str, Any] | None = None,
    fn: Callable[..., Any] = _ok,
    **op_options: Any,
) -> ToolResult:
    """One operation, one step, one tool call; returns what the agent sees."""
    with pipe.tracer.operation("agent", **op_options) as op, op.step() as step:
        return step.run_tool(identifier, api_name, args or {}, fn)


def invocations(pipe: TestPipeline, hook_id: str, outcome: str) -> float:
    return pipe.metric_total(INVOCATIONS, {sc.ATTR_HOOK_ID: hook_id, sc.ATTR_OUTCOME: outcome})


def tool_span_attrs(pipe: TestPipeline, api_name: str = "readFile") -> dict[str, Any]:
    return dict(pipe.span(f"execute_tool {api_name}").attributes or {})


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event blocked handlers wait on; always set at teardown so no thread hangs."""
    event = threading.Event()
    yield event
    event.set()


# -- ordering ----------------------------------------------------------------------------------


def test_interceptors_run_in_registration_order(pipe: TestPipeline) -> None:
    order: list[str] = []
    # Different matcher kinds live in different index buckets; order must still be global.
    pipe.register(
        hook("regex", "beforeToolCall", lambda e: order.append("regex"), matcher="^fs/"),
        hook("all", "beforeToolCall", lambda e: order.append("all")),
        hook("name", "before_tool_call", lambda e: order.append("name"), matcher="readFile"),
    )
    run_one_tool(pipe)
    assert order == ["regex", "all", "name"]


def test_observers_run_in_registration_order(pipe: TestPipeline) -> None:
    order: list[str] = []
    pipe.register(
        hook("c", "afterToolCall", lambda e: order.append("c"), matcher="read"),
        hook("a", "afterToolCall", lambda e: order.append("a")),
        hook("b", "PostToolUse", lambda e: order.append("b"), matcher="readFile"),
    )
    run_one_tool(pipe)
    pipe.flush()
    assert order == ["c", "a", "b"]


def test_global_hook_registered_after_an_operations_hooks_runs_after_them(
    pipe: TestPipeline,
) -> None:
    order: list[str] = []
    pipe.register(hook("early", "beforeToolCall", lambda e: order.append("early")))
    op_hook = hook("op", "beforeToolCall", lambda e: order.append("op"))
    with pipe.tracer.operation("agent", hooks=[op_hook]) as op, op.step() as step:
        pipe.register(hook("late", "beforeToolCall", lambda e: order.append("late")))
        step.run_tool("fs", "readFile", {}, _ok)
    assert order == ["early", "op", "late"]


# -- per-operation and global hooks --------------------------------------------------------------


def test_operation_hooks_fire_for_that_operation_only(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    op_hook = hook("mine", "afterToolCall", recorder)
    with pipe.tracer.operation("a", hooks=[op_hook]) as op_a, op_a.step() as step_a:
        step_a.run_tool("fs", "readFile", {}, _ok)
        with pipe.tracer.operation("b") as op_b, op_b.step() as step_b:
            step_b.run_tool("fs", "readFile", {}, _ok)
    pipe.flush()
    assert [e.operationId for e in recorder.events] == [op_a.operation_id]


@pytest.mark.parametrize("isolated", [False, True], ids=["in_process", "isolated"])
def test_a_sub_agents_run_is_guarded_by_the_run_that_called_it(
    pipe: TestPipeline, isolated: bool
) -> None:
    """A guard given to a run also guards the sub-agents it calls: they act on its behalf, and
    a child run with hooks of its own must not lose its parent's (its own come after)."""
    order: list[str] = []
    ran: list[str] = []

    def guard(event: ToolCallEvent) -> Block:
        order.append("parent")
        return Block("no rm, whoever asks")

    parent_hooks = [hook("no-rm", "beforeToolCall", guard, matcher="^shell/rm$")]
    child_hooks = [hook("child-log", "beforeToolCall", lambda e: order.append("child"))]
    with (
        pipe.tracer.operation("planner", hooks=parent_hooks) as op,
        op.step() as step,
        step.call_agent("coder", "clean up", isolated=isolated) as call,
        call.operation(hooks=child_hooks) as child,
        child.step() as child_step,
    ):
        result = child_step.run_tool("shell", "rm", {"path": "/"}, lambda path: ran.append(path))
        registry = pipe.oh.hooks.registry
        assert [h.id for h in registry.hooks(operation_id=child.operation_id)] == [
            "no-rm",
            "child-log",
        ]
    assert ran == []
    assert (result.state or {})["classification"] == "hook_denied"
    assert order == ["parent"]  # the deny ends the chain before the child's own hook
    assert not pipe.oh.hooks.registry.has_any()  # both scopes removed when their runs ended


def test_a_sub_agents_hook_with_its_parents_id_takes_its_place(pipe: TestPipeline) -> None:
    seen: list[str] = []
    with (
        pipe.tracer.operation("planner", hooks=[hook("log", "beforeToolCall", seen.append)]) as op,
        op.step() as step,
        step.call_agent("coder", "read") as call,
        call.operation(hooks=[hook("log", "beforeToolCall", lambda e: seen.append("child"))]) as c,
        c.step() as child_step,
    ):
        child_step.run_tool("fs", "readFile", {}, _ok)
    assert seen == ["child"]


def test_operation_hooks_are_removed_at_completion(pipe: TestPipeline) -> None:
    op_hook = hook("mine", "afterStep", print)
    with pipe.tracer.operation("a", hooks=[op_hook]) as op:
        assert [h.id for h in pipe.oh.hooks.registry.hooks(operation_id=op.operation_id)] == [
            "mine"
        ]
    assert pipe.oh.hooks.registry.hooks(operation_id=op.operation_id) == []
    assert not pipe.oh.hooks.registry.has_any()


def test_operation_hooks_are_removed_on_error(pipe: TestPipeline) -> None:
    op_hook = hook("mine", "afterStep", print)
    with pytest.raises(RuntimeError), pipe.tracer.operation("a", hooks=[op_hook]) as op:
        raise RuntimeError("agent crashed")
    assert op.reason == "error"
    assert pipe.oh.hooks.registry.hooks(operation_id=op.operation_id) == []


def test_operation_hooks_are_removed_on_interruption(pipe: TestPipeline) -> None:
    op_hook = hook("mine", "afterStep", print)
    with (
        pipe.tracer.operation("a", hooks=[op_hook]) as op,
        op.step() as step,
        step.approval([{"identifier": "fs", "apiName": "rm"}]) as approval,
    ):
        approval.reject("no")
    assert op.reason == "interrupted"
    assert pipe.oh.hooks.registry.hooks(operation_id=op.operation_id) == []


def test_operation_on_complete_hook_fires_although_removed_at_completion(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    with pipe.tracer.operation("a", hooks=[hook("done", "onComplete", recorder)]):
        pass
    pipe.flush()
    assert recorder.names() == ["on_complete"]


def test_removed_operation_hooks_do_not_fire_for_the_next_operation(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    op_hook = hook("h", "afterToolCall", recorder)
    run_one_tool(pipe, hooks=[op_hook], operation_id="op_first")
    run_one_tool(pipe, operation_id="op_second")
    pipe.flush()
    assert [e.operationId for e in recorder.events] == ["op_first"]


def test_global_hooks_apply_to_every_operation(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("all-ops", "onComplete", recorder))
    for name in ("a", "b", "c"):
        with pipe.tracer.operation(name):
            pass
    pipe.flush()
    assert sorted(recorder.fields("agentId")) == [("a",), ("b",), ("c",)]


def test_same_hook_id_may_be_used_by_two_operations(pipe: TestPipeline, recorder: Recorder) -> None:
    op_hook = hook("same", "afterToolCall", recorder)
    with (
        pipe.tracer.operation("a", hooks=[op_hook]) as a,
        pipe.tracer.operation("b", hooks=[op_hook]) as b,
    ):
        with a.step() as step:
            step.run_tool("fs", "readFile", {}, _ok)
        with b.step() as step:
            step.run_tool("fs", "readFile", {}, _ok)
    pipe.flush()
    assert len(recorder.events) == 2


# -- matchers --------------------------------------------------------------------------------


def test_lobehub_matcher_selects_tools_by_identifier_slash_api_name(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("fs-read", "afterToolCall", recorder, matcher="^fs/read"))
    with pipe.tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "readFile", {}, _ok)
        step.run_tool("fs", "writeFile", {}, _ok)
        step.run_tool("web", "readPage", {}, _ok)
    pipe.flush()
    assert recorder.fields("identifier", "apiName") == [("fs", "readFile")]


def test_matcher_on_before_tool_call_leaves_other_tools_alone(pipe: TestPipeline) -> None:
    pipe.register(hook("deny-rm", "beforeToolCall", lambda e: Block(), matcher="^shell/rm$"))
    with pipe.tracer.operation("a") as op, op.step() as step:
        denied = step.run_tool("shell", "rm", {}, _ok)
        allowed = step.run_tool("shell", "ls", {}, _ok)
    assert (denied.success, allowed.content) == (False, "ran")


# -- mock --------------------------------------------------------------------------------------


def test_first_accepted_mock_wins(pipe: TestPipeline) -> None:
    pipe.register(
        hook("first", "beforeToolCall", lambda e: e.mock("first")),
        hook("second", "beforeToolCall", lambda e: e.mock("second")),
    )
    assert run_one_tool(pipe).content == "first"


def test_handlers_after_a_mock_are_skipped(pipe: TestPipeline) -> None:
    later: list[str] = []
    pipe.register(
        hook("mocker", "beforeToolCall", lambda e: e.mock("fake")),
        hook("later", "beforeToolCall", lambda e: later.append("ran")),
    )
    run_one_tool(pipe)
    assert later == []


def test_mocked_tool_does_not_run(pipe: TestPipeline) -> None:
    ran: list[str] = []
    pipe.register(hook("mocker", "beforeToolCall", lambda e: e.mock("fake")))
    run_one_tool(pipe, fn=lambda: ran.append("tool"))
    assert ran == []


def test_mocked_result_is_marked_on_after_tool_call(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(
        hook("mocker", "beforeToolCall", lambda e: e.mock({"content": "[]"})),
        hook("after", "afterToolCall", recorder),
    )
    run_one_tool(pipe)
    pipe.flush()
    (event,) = recorder.events
    assert isinstance(event, AfterToolCallEvent)
    assert (event.mocked, event.content) == (True, "[]")


def test_mocked_result_is_marked_on_the_span(pipe: TestPipeline) -> None:
    pipe.register(hook("mocker", "beforeToolCall", lambda e: e.mock("fake")))
    run_one_tool(pipe)
    attrs = tool_span_attrs(pipe)
    assert attrs[sc.HOOK_MOCKED] is True
    assert attrs[sc.HOOK_MOCKED_BY] == "mocker"
    assert attrs[sc.TOOL_OUTCOME] == "mocked"


def test_mock_returns_the_lobehub_shape_then_none() -> None:
    event = ToolCallEvent(toolCallId="c", identifier="fs", apiName="readFile")
    first = event.mock({"content": "x", "success": True})
    assert first == {"isMocked": True, "result": {"content": "x", "success": True}}
    assert event.mock("y") is None
    assert event.mocked_result == ToolResult(content="x")


def test_mock_from_a_timed_out_hook_is_ignored(
    pipe: TestPipeline, release: threading.Event
) -> None:
    late_mock_done = threading.Event()

    def slow_mocker(event: ToolCallEvent) -> None:
        release.wait(5)
        event.mock("late mock")
        late_mock_done.set()

    def next_hook(event: ToolCallEvent) -> None:
        release.set()  # the abandoned hook wakes up now, while this one runs
        late_mock_done.wait(5)

    pipe.register(
        hook("slow", "beforeToolCall", slow_mocker, timeout=0.2),
        hook("next", "beforeToolCall", next_hook),
    )
    assert run_one_tool(pipe).content == "ran"


# -- intercept chain -----------------------------------------------------------------------------


def test_each_interceptor_sees_the_previous_rewrite(pipe: TestPipeline) -> None:
    seen: list[dict[str, Any]] = []

    def second(event: ToolCallEvent) -> dict[str, Any]:
        seen.append(dict(event.args))
        return {"args": {**event.args, "limit": 10}}

    pipe.register(
        hook("first", "beforeToolCall", lambda e: {"args": {"path": "/safe"}}),
        hook("second", "beforeToolCall", second),
    )
    result = run_one_tool(
        pipe, args={"path": "/etc/passwd"}, fn=lambda path, limit: f"{path}:{limit}"
    )
    assert seen == [{"path": "/safe"}]
    assert result.content == "/safe:10"


def test_args_rewrite_is_recorded_on_the_span(pipe: TestPipeline) -> None:
    pipe.register(hook("rw", "beforeToolCall", lambda e: {"args": {"path": "/safe"}}))
    run_one_tool(pipe, args={"path": "/x"}, fn=lambda path: path)
    assert tool_span_attrs(pipe)[sc.HOOK_REWRITTEN_BY] == ("rw",)


def test_kernel_tool_input_rewrite_changes_the_arguments(pipe: TestPipeline) -> None:
    pipe.register(
        hook("k", "before_tool_call", lambda e: {"toolInput": {"path": "/safe"}}, intercept=True)
    )
    assert run_one_tool(pipe, args={"path": "/x"}, fn=lambda path: path).content == "/safe"


def test_kernel_full_payload_rewrite_of_tool_input_changes_the_arguments(
    pipe: TestPipeline,
) -> None:
    def kernel_style(data: ToolCallEvent) -> dict[str, Any]:
        return {**data.model_dump(by_alias=True), "toolInput": {"path": "/safe"}}

    pipe.register(hook("k", "before_tool_call", kernel_style, intercept=True))
    assert run_one_tool(pipe, args={"path": "/etc/passwd"}, fn=lambda path: path).content == "/safe"


def test_plain_hook_returning_none_changes_nothing(pipe: TestPipeline) -> None:
    pipe.register(hook("noop", "beforeToolCall", lambda e: None))
    result = run_one_tool(pipe, args={"path": "/x"}, fn=lambda path: path)
    assert (result.success, result.content) == (True, "/x")


def test_returning_block_denies_the_tool_call(pipe: TestPipeline) -> None:
    ran: list[str] = []
    pipe.register(hook("guard", "beforeToolCall", lambda e: Block("no rm")))
    result = run_one_tool(pipe, "shell", "rm", fn=lambda: ran.append("x"))
    assert ran == []
    assert (result.success, result.error, result.content) == (False, "no rm", "no rm")


def test_kernel_intercept_hook_returning_none_blocks(pipe: TestPipeline) -> None:
    ran: list[str] = []
    pipe.register(hook("k", "before_tool_call", lambda e: None, intercept=True))
    result = run_one_tool(pipe, fn=lambda: ran.append("x"))
    assert ran == []
    assert result.success is False


def test_kernel_intercept_hook_returning_the_payload_allows(pipe: TestPipeline) -> None:
    pipe.register(hook("k", "before_tool_call", lambda e: e, intercept=True))
    assert run_one_tool(pipe).content == "ran"


def test_first_block_ends_the_chain(pipe: TestPipeline) -> None:
    later: list[str] = []
    pipe.register(
        hook("guard", "beforeToolCall", lambda e: Block("first")),
        hook("later", "beforeToolCall", lambda e: later.append("x")),
    )
    result = run_one_tool(pipe)
    assert later == []
    assert result.error == "first"


def test_denied_tool_call_returns_a_hook_denied_result(pipe: TestPipeline) -> None:
    pipe.register(hook("guard", "beforeToolCall", lambda e: Block("nope")))
    state = run_one_tool(pipe).state or {}
    assert state["classification"] == "hook_denied"
    assert state["type"] == "blocked"
    assert (state["reason"], state["decidedBy"]) == ("nope", "guard")


def test_kernel_none_block_uses_the_default_reason(pipe: TestPipeline) -> None:
    pipe.register(hook("k", "before_tool_call", lambda e: None, intercept=True))
    result = run_one_tool(pipe)
    assert result.error == "Blocked by beforeToolCall hook."
    assert (result.state or {})["classification"] == "hook_denied"


def test_block_without_reason_uses_the_default_reason(pipe: TestPipeline) -> None:
    pipe.register(hook("guard", "beforeToolCall", lambda e: Block()))
    assert run_one_tool(pipe).error == "Blocked by beforeToolCall hook."


def test_run_continues_to_the_next_tool_after_a_denied_call(pipe: TestPipeline) -> None:
    pipe.register(hook("guard", "beforeToolCall", lambda e: Block(), matcher="^shell/"))
    with pipe.tracer.operation("a") as op, op.step() as step:
        denied = step.run_tool("shell", "rm", {}, _ok)
        second = step.run_tool("fs", "readFile", {}, _ok)
    assert (denied.success, second.content) == (False, "ran")
    assert op.reason == "done"


def test_denied_tool_call_fires_permission_denied(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(
        hook("guard", "beforeToolCall", lambda e: Block("nope")),
        hook("denied", "PermissionDenied", recorder),
    )
    run_one_tool(pipe)
    pipe.flush()
    assert recorder.fields("event", "reason") == [("on_tool_call_denied", "nope")]


# -- message_sending, before_agent_start, tool_result_persist ------------------------------------


def test_message_sending_rewrite_changes_the_sent_content(pipe: TestPipeline) -> None:
    delivered: list[str] = []

    def upper(data: MessageSendingEvent) -> dict[str, Any]:
        return {**data.model_dump(), "content": data.content.upper()}

    pipe.register(hook("up", "message_sending", upper, intercept=True))
    with pipe.tracer.operation("a") as op:
        sent = op.send_message("slack", "#ops", "hello", deliver=delivered.append)
    assert sent == "HELLO"
    assert delivered == ["HELLO"]


def test_message_sending_none_blocks_the_message(pipe: TestPipeline, recorder: Recorder) -> None:
    delivered: list[str] = []
    pipe.register(
        hook("drop", "message_sending", lambda d: None, intercept=True),
        hook("sent", "message_sent", recorder),
    )
    with pipe.tracer.operation("a") as op:
        sent = op.send_message("slack", "#ops", "spam", deliver=delivered.append)
    pipe.flush()
    assert sent is None
    assert delivered == []
    assert recorder.events == []
    assert pipe.span("send_message slack").attributes[sc.MESSAGE_BLOCKED] is True  # type: ignore[index]


def test_message_sent_fires_after_delivery(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("sent", "message_sent", recorder))
    with pipe.tracer.operation("a") as op:
        op.send_message("slack", "#ops", "hi")
    pipe.flush()
    assert recorder.fields("content") == [("hi",)]


def test_asend_message_awaits_an_async_rewrite_and_an_async_deliver(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    delivered: list[str] = []

    async def upper(data: MessageSendingEvent) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {**data.model_dump(), "content": data.content.upper()}

    async def deliver(content: str) -> None:
        await asyncio.sleep(0)
        delivered.append(content)

    pipe.register(
        hook("up", "message_sending", upper, intercept=True),
        hook("sent", "message_sent", recorder),
    )

    async def main() -> str | None:
        async with pipe.tracer.operation("a") as op:
            return await op.asend_message("slack", "#ops", "hello", deliver=deliver)

    assert asyncio.run(main()) == "HELLO"
    assert delivered == ["HELLO"]
    pipe.flush()
    assert recorder.fields("content") == [("HELLO",)]
    span = pipe.span("send_message slack")
    assert span.attributes[sc.HOOK_MATCHED] == ("up",)  # type: ignore[index]
    assert span.attributes[sc.MESSAGE_BLOCKED] is False  # type: ignore[index]


def test_asend_message_block_sends_nothing(pipe: TestPipeline, recorder: Recorder) -> None:
    delivered: list[str] = []
    pipe.register(
        hook("drop", "message_sending", lambda d: None, intercept=True),
        hook("sent", "message_sent", recorder),
    )

    async def main() -> str | None:
        async with pipe.tracer.operation("a") as op:
            return await op.asend_message("slack", "#ops", "spam", deliver=delivered.append)

    assert asyncio.run(main()) is None
    pipe.flush()
    assert delivered == []
    assert recorder.events == []
    assert pipe.span("send_message slack").attributes[sc.MESSAGE_BLOCKED] is True  # type: ignore[index]


def test_a_slow_message_interceptor_does_not_block_the_event_loop(pipe: TestPipeline) -> None:
    # a sync interceptor runs in a thread, never on the loop: it holds until the loop has
    # ticked 5 times while it ran (on the loop, it would hold the ticks back and wait in vain)
    started, ticked = threading.Event(), threading.Event()
    saw: list[bool] = []

    def slow_sync_check(data: MessageSendingEvent) -> None:
        started.set()
        saw.append(ticked.wait(10))

    pipe.register(hook("slow", "message_sending", slow_sync_check, timeout=30))

    async def ticker() -> None:
        ticks = 0
        while not ticked.is_set():
            ticks += started.is_set()
            if ticks >= 5:
                ticked.set()
            await asyncio.sleep(0.01)

    async def main() -> str | None:
        async with pipe.tracer.operation("a") as op:
            tick = asyncio.create_task(ticker())
            sent = await op.asend_message("slack", "#ops", "hi")
            ticked.set()  # ends the ticker whatever happened
            await tick
            return sent

    assert asyncio.run(main()) == "hi"
    assert saw == [True]  # the loop kept running while the interceptor held


def test_asend_message_deliver_failure_is_recorded_and_raised(pipe: TestPipeline) -> None:
    async def broken(content: str) -> None:
        raise ConnectionError("slack is down")

    async def main() -> None:
        async with pipe.tracer.operation("a") as op:
            await op.asend_message("slack", "#ops", "hi", deliver=broken)

    with pytest.raises(ConnectionError):
        asyncio.run(main())
    span = pipe.span("send_message slack")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ERROR_TYPE] == "ConnectionError"  # type: ignore[index]


def test_before_agent_start_rewrites_the_input(pipe: TestPipeline) -> None:
    def add_context(data: BeforeAgentStartEvent) -> dict[str, Any]:
        return {"input": f"[ctx] {data.input}"}

    pipe.register(hook("ctx", "before_agent_start", add_context))
    with pipe.tracer.operation("a", input="hello") as op:
        pass
    assert op.input == "[ctx] hello"
    assert not op.blocked


def test_before_agent_start_block_blocks_the_run(pipe: TestPipeline) -> None:
    pipe.register(hook("spam", "before_agent_start", lambda d: None, intercept=True))
    with pipe.tracer.operation("a", input="buy now") as op:
        pass
    assert op.blocked
    assert op.block_reason == "Blocked by before_agent_start hook."
    assert op.reason == "interrupted"


def test_user_prompt_submit_is_before_agent_start(pipe: TestPipeline) -> None:
    pipe.register(hook("deny", "UserPromptSubmit", lambda d: Block("no")))
    with pipe.tracer.operation("a", input="x") as op:
        pass
    assert (op.blocked, op.block_reason) == (True, "no")


def test_tool_result_persist_filters_the_result(pipe: TestPipeline, recorder: Recorder) -> None:
    def redact(data: ToolResultPersistEvent) -> dict[str, Any]:
        return {
            "result": {**data.result, "content": data.result["content"].replace("s3cr3t", "***")}
        }

    pipe.register(
        hook("redact", "tool_result_persist", redact, intercept=True),
        hook("after", "afterToolCall", recorder),
    )
    with (
        pipe.tracer.operation("a") as op,
        op.step() as step,
        step.tool_call("fs", "readFile") as call,
    ):
        persisted = call.set_result("token=s3cr3t")
    pipe.flush()
    assert persisted.content == "token=***"
    assert call.result.content == "token=***"
    assert getattr(recorder.events[0], "content", None) == "token=***"


def test_tool_result_persist_block_withholds_the_content_as_a_failure(pipe: TestPipeline) -> None:
    pipe.register(hook("drop", "tool_result_persist", lambda d: None, intercept=True))
    with (
        pipe.tracer.operation("a") as op,
        op.step() as step,
        step.tool_call("fs", "readFile") as call,
    ):
        persisted = call.set_result("secret")
    assert persisted.content == "Blocked by tool_result_persist hook."
    assert persisted.success is False
    assert call.persist_blocked


def test_tool_result_persist_is_recorded_as_a_span_event(pipe: TestPipeline) -> None:
    pipe.register(hook("keep", "tool_result_persist", lambda d: None))
    run_one_tool(pipe)
    events = [
        e
        for e in pipe.span("execute_tool readFile").events
        if e.name == "otelhooks.tool_result_persist"
    ]
    assert len(events) == 1
    assert events[0].attributes[sc.HOOK_MATCHED] == ("keep",)  # type: ignore[index]


# -- failing handlers --------------------------------------------------------------------------


def _boom(event: HookEvent) -> None:
    raise RuntimeError("hook exploded")


def test_raising_interceptor_does_not_affect_the_run(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "beforeToolCall", _boom))
    result = run_one_tool(pipe)
    assert (result.success, result.content) == (True, "ran")


def test_raising_interceptor_is_recorded_on_the_span(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "beforeToolCall", _boom))
    run_one_tool(pipe)
    errors = tool_span_attrs(pipe)[sc.HOOK_ERRORS]
    assert errors == ("boom: RuntimeError: hook exploded",)


def test_raising_interceptor_counts_an_error_invocation(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "beforeToolCall", _boom))
    run_one_tool(pipe)
    assert invocations(pipe, "boom", "error") == 1


def test_raising_interceptor_is_logged(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "beforeToolCall", _boom))
    with capture_logs() as logs:
        run_one_tool(pipe)
    assert [e.get("hook_id") for e in logs if e["log_level"] == "warning"] == ["boom"]


def test_raising_interceptor_does_not_affect_an_async_run(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "beforeToolCall", _boom))

    async def main() -> ToolResult:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            return await step.arun_tool("fs", "readFile", {}, _ok)

    assert asyncio.run(main()).content == "ran"


def test_raising_observer_does_not_stop_later_observers(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(
        hook("boom", "afterToolCall", _boom),
        hook("after", "afterToolCall", recorder),
    )
    run_one_tool(pipe)
    pipe.flush()
    assert recorder.names() == ["after_tool_call"]


def test_raising_observer_counts_an_error_invocation(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "afterToolCall", _boom))
    run_one_tool(pipe)
    pipe.flush()
    assert invocations(pipe, "boom", "error") == 1


def test_raising_observer_does_not_affect_the_run(pipe: TestPipeline) -> None:
    pipe.register(hook("boom", "afterToolCall", _boom))
    result = run_one_tool(pipe)
    pipe.flush()
    assert result.content == "ran"


def test_slow_interceptor_does_not_stall_the_run_past_its_timeout(pipe: TestPipeline) -> None:
    # The interceptor holds until the test lets it go: a run that waited for it would take 30 s.
    release = threading.Event()
    pipe.register(hook("slow", "beforeToolCall", lambda e: release.wait(30), timeout=0.2))
    try:
        started = time.perf_counter()
        result = run_one_tool(pipe)
        elapsed = time.perf_counter() - started
        assert not release.is_set()
    finally:
        release.set()
    assert result.content == "ran"
    assert 0.2 <= elapsed < 10  # its timeout kept, not its 30 s


def test_slow_interceptor_is_recorded_as_timeout(pipe: TestPipeline) -> None:
    pipe.register(hook("slow", "beforeToolCall", lambda e: time.sleep(1), timeout=0.2))
    run_one_tool(pipe)
    assert invocations(pipe, "slow", "timeout") == 1
    assert tool_span_attrs(pipe)[sc.HOOK_ERRORS] == ("slow: timed out after 0.2s",)


def _raises_timeout_error(event: HookEvent) -> None:
    raise TimeoutError("upstream API timed out")


def test_handler_raising_timeout_error_is_an_error_not_a_timeout(pipe: TestPipeline) -> None:
    pipe.register(hook("flaky", "beforeToolCall", _raises_timeout_error))
    run_one_tool(pipe)
    assert invocations(pipe, "flaky", "error") == 1
    assert tool_span_attrs(pipe)[sc.HOOK_ERRORS] == ("flaky: TimeoutError: upstream API timed out",)


def test_slow_observer_is_recorded_as_timeout_and_later_observers_run(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(
        hook("slow", "afterToolCall", lambda e: time.sleep(1), timeout=0.1),
        hook("after", "afterToolCall", recorder),
    )
    run_one_tool(pipe)
    pipe.flush()
    assert invocations(pipe, "slow", "timeout") == 1
    assert recorder.names() == ["after_tool_call"]


def test_a_hung_observer_times_out_once_and_everything_after_it_runs(
    pipe: TestPipeline, release: threading.Event
) -> None:
    # Observers of consecutive events run together on one pool thread: a hung one must cost
    # only its own deadline, and the hooks after it (same event, later events) still run.
    seen: list[tuple[str, str]] = []
    calls = 0
    returned = threading.Event()

    def hangs_once(event: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            release.wait(10)
            returned.set()

    pipe.register(
        hook("first", "afterToolCall", lambda e: seen.append(("first", e.apiName))),
        hook("hangs", "afterToolCall", hangs_once, timeout=0.2),
        hook("last", "afterToolCall", lambda e: seen.append(("last", e.apiName))),
    )
    started = time.perf_counter()
    with pipe.tracer.operation("a") as op, op.step() as step:
        for name in ("one", "two", "three", "four"):
            step.run_tool("fs", name, {}, _ok)
    pipe.flush()
    # the 10 s hang cost its 0.2 s deadline only (8 s: room for a loaded machine, short of 10)
    assert time.perf_counter() - started < 8
    names = ("one", "two", "three", "four")
    assert seen == [(h, n) for n in names for h in ("first", "last")]
    assert invocations(pipe, "hangs", "timeout") == 1
    assert invocations(pipe, "hangs", "ok") == 3
    release.set()  # the abandoned call returns now: it must not be recorded again
    assert returned.wait(10)
    with pipe.tracer.operation("a") as op, op.step() as step:
        step.run_tool("fs", "five", {}, _ok)  # handled after the abandoned call returned
    pipe.flush()
    assert invocations(pipe, "hangs", "ok") == 4  # the fifth call's only
    assert invocations(pipe, "hangs", "timeout") == 1


def test_observers_slower_than_nothing_but_within_their_deadline_are_not_timeouts(
    pipe: TestPipeline,
) -> None:
    # Each hook's deadline is its own, not shared by the events run together.
    # a wide margin per call (a loaded runner oversleeps a 0.05 s sleep by far less than 1 s),
    # while the calls together still take longer than one deadline
    pipe.register(hook("steady", "afterToolCall", lambda e: time.sleep(0.05), timeout=1.0))
    with pipe.tracer.operation("a") as op, op.step() as step:
        for _ in range(25):  # 1.25 s in all, more than one deadline
            step.run_tool("fs", "readFile", {}, _ok)
    pipe.flush()
    assert invocations(pipe, "steady", "ok") == 25
    assert invocations(pipe, "steady", "timeout") == 0


def test_hung_handlers_do_not_starve_later_hooks(
    pipe: TestPipeline, release: threading.Event
) -> None:
    pipe.register(
        hook("hung", "beforeToolCall", lambda e: release.wait(10), matcher="^slow/", timeout=0.05),
        hook("fast", "beforeToolCall", lambda e: e.mock("fast mock"), matcher="^fs/", timeout=1),
    )
    with pipe.tracer.operation("a") as op, op.step() as step:
        for _ in range(8):  # the pool has 8 threads
            step.run_tool("slow", "call", {}, _ok)
        result = step.run_tool("fs", "readFile", {}, _ok)
    assert result.content == "fast mock"


def test_wrong_return_type_is_ignored(pipe: TestPipeline) -> None:
    pipe.register(hook("num", "beforeToolCall", lambda e: 42))
    result = run_one_tool(pipe)
    assert (result.success, result.content) == (True, "ran")


def test_wrong_return_type_is_recorded_as_an_error(pipe: TestPipeline) -> None:
    pipe.register(hook("num", "beforeToolCall", lambda e: 42))
    run_one_tool(pipe)
    assert invocations(pipe, "num", "error") == 1
    assert tool_span_attrs(pipe)[sc.HOOK_ERRORS] == ("num: returned int, which is not a payload",)


def test_invalid_rewrite_is_recorded_as_an_error_and_ignored(pipe: TestPipeline) -> None:
    pipe.register(hook("bad", "beforeToolCall", lambda e: {"args": "not a dict"}))
    result = run_one_tool(pipe, args={"path": "/x"}, fn=lambda path: path)
    assert result.content == "/x"
    assert invocations(pipe, "bad", "error") == 1


def test_on_error_block_blocks_when_the_handler_fails(pipe: TestPipeline) -> None:
    ran: list[str] = []
    pipe.register(hook("strict", "beforeToolCall", lambda e: 42, on_error="block"))
    result = run_one_tool(pipe, fn=lambda: ran.append("x"))
    assert ran == []
    assert (result.state or {})["classification"] == "hook_denied"
    assert result.error == "hook strict failed: returned int, which is not a payload"


def test_on_error_block_blocks_when_the_handler_times_out(pipe: TestPipeline) -> None:
    pipe.register(
        hook("strict", "beforeToolCall", lambda e: time.sleep(1), timeout=0.1, on_error="block")
    )
    result = run_one_tool(pipe)
    assert result.success is False
    assert result.error == "hook strict failed: timed out after 0.1s"


def test_on_error_block_blocks_when_the_handler_raises(pipe: TestPipeline) -> None:
    pipe.register(hook("strict", "beforeToolCall", _boom, on_error="block"))
    assert run_one_tool(pipe).success is False


# -- async -------------------------------------------------------------------------------------


def test_async_interceptor_works_in_a_sync_runtime(pipe: TestPipeline) -> None:
    async def deny(event: ToolCallEvent) -> Block:
        await asyncio.sleep(0)
        return Block("async says no")

    pipe.register(hook("deny", "beforeToolCall", deny))
    assert run_one_tool(pipe).error == "async says no"


def test_async_mock_works_in_a_sync_runtime(pipe: TestPipeline) -> None:
    async def mocker(event: ToolCallEvent) -> None:
        await asyncio.sleep(0)
        event.mock("async mock")

    pipe.register(hook("m", "beforeToolCall", mocker))
    assert run_one_tool(pipe).content == "async mock"


def test_async_observer_works_in_a_sync_runtime(pipe: TestPipeline) -> None:
    seen: list[str] = []

    async def observe(event: AfterToolCallEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event.apiName)

    pipe.register(hook("obs", "afterToolCall", observe))
    run_one_tool(pipe)
    pipe.flush()
    assert seen == ["readFile"]


def test_async_interceptor_works_in_an_async_runtime(pipe: TestPipeline) -> None:
    async def deny(event: ToolCallEvent) -> Block:
        await asyncio.sleep(0)
        return Block("async says no")

    pipe.register(hook("deny", "beforeToolCall", deny))

    async def main() -> ToolResult:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            return await step.arun_tool("fs", "readFile", {}, _ok)

    result = asyncio.run(main())
    assert (result.error, (result.state or {})["classification"]) == (
        "async says no",
        "hook_denied",
    )


def test_sync_interceptor_works_in_an_async_runtime(pipe: TestPipeline) -> None:
    pipe.register(hook("rw", "beforeToolCall", lambda e: {"args": {"x": 2}}))

    async def tool(x: int) -> int:
        await asyncio.sleep(0)
        return x * 10

    async def main() -> ToolResult:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            return await step.arun_tool("calc", "times10", {"x": 1}, tool)

    assert asyncio.run(main()).content == "20"


def test_operation_hooks_work_in_an_async_runtime(pipe: TestPipeline) -> None:
    op_hook = hook("ctx", "before_agent_start", lambda d: {"input": "rewritten"})

    async def main() -> str:
        async with pipe.tracer.operation("a", input="orig", hooks=[op_hook]) as op:
            return op.input

    assert asyncio.run(main()) == "rewritten"
    assert not pipe.oh.hooks.registry.has_any()


def test_async_tool_result_persist_filters_the_result(pipe: TestPipeline) -> None:
    pipe.register(hook("r", "tool_result_persist", lambda d: {"result": "***"}))

    async def main() -> ToolResult:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            return await step.arun_tool("fs", "readFile", {}, _ok)

    assert asyncio.run(main()).content == "***"


def test_slow_sync_interceptor_does_not_block_the_event_loop(pipe: TestPipeline) -> None:
    # the interceptor holds until the loop has ticked 10 times while it ran: run on the loop,
    # it would hold the ticks back and wait its 10 s in vain (however loaded the machine)
    started, ticked = threading.Event(), threading.Event()
    saw: list[bool] = []

    def slow(event: Any) -> None:
        started.set()
        saw.append(ticked.wait(10))

    pipe.register(hook("slow", "beforeToolCall", slow, timeout=30))

    async def main() -> None:
        async def ticker() -> None:
            ticks = 0
            while not ticked.is_set():
                ticks += started.is_set()
                if ticks >= 10:
                    ticked.set()
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        async with pipe.tracer.operation("a") as op, op.step() as step:
            await step.arun_tool("fs", "readFile", {}, _ok)
        ticked.set()  # ends the ticker whatever happened
        await task

    asyncio.run(main())
    assert saw == [True]


# -- invalid hook definitions ------------------------------------------------------------------

INVALID: list[Any] = [
    pytest.param({"id": "x", "type": "afterStep"}, "handler", id="missing-handler"),
    pytest.param(hook("x", "afterStepp", print), "type", id="unknown-type"),
    pytest.param(
        hook("x", "afterStep", print, matcher="^fs/"),
        "matcher",
        id="matcher-on-non-tool-lobehub-event",
    ),
    pytest.param(
        hook("x", "afterToolCall", print, intercept=True),
        "intercept",
        id="intercept-on-non-interceptable-event",
    ),
    pytest.param(hook("x", "afterStep", print, timeout=0), "timeout", id="timeout"),
    pytest.param(
        hook("x", "afterStep", print, on_error="explode"),
        "on_error",
        id="on-error",
    ),
    pytest.param(hook("x", "afterStep", print, colour="red"), "colour", id="extra"),
]


@pytest.mark.parametrize(("hook", "field"), INVALID)
def test_invalid_hook_fails_at_registration_with_config_error(
    pipe: TestPipeline, hook: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        pipe.register(hook)
    assert info.value.hook_id == "x"
    assert "hook 'x'" in str(info.value)
    assert field in str(info.value)


@pytest.mark.parametrize(("hook", "field"), INVALID)
def test_invalid_hook_config_error_carries_the_field(
    pipe: TestPipeline, hook: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        pipe.register(hook)
    assert info.value.field == field


def test_unknown_hook_type_raises_unknown_event_error_at_registration(pipe: TestPipeline) -> None:
    with pytest.raises(UnknownEventError) as info:
        pipe.register(hook("x", "beforeToolcall", print))
    assert info.value.suggestion == "beforeToolCall"


def test_duplicate_hook_id_fails_at_registration(pipe: TestPipeline) -> None:
    pipe.register(hook("dup", "afterStep", print))
    with pytest.raises(ConfigError) as info:
        pipe.register(hook("dup", "afterToolCall", print))
    assert (info.value.hook_id, info.value.field) == ("dup", "id")


def test_duplicate_hook_id_in_one_batch_fails(pipe: TestPipeline) -> None:
    with pytest.raises(ConfigError, match="duplicate"):
        pipe.register(
            hook("dup", "afterStep", print),
            hook("dup", "afterStep", print),
        )


def test_registration_is_all_or_nothing(pipe: TestPipeline) -> None:
    with pytest.raises(ConfigError):
        pipe.register(
            hook("good", "afterStep", print),
            {"id": "bad", "type": "afterStep"},
        )
    assert pipe.oh.hooks.registry.hooks() == []


def test_invalid_operation_hook_fails_when_the_operation_starts(pipe: TestPipeline) -> None:
    with (
        pytest.raises(ConfigError) as info,
        pipe.tracer.operation("a", hooks=[{"id": "bad", "type": "afterStep"}]),
    ):
        pass  # pragma: no cover - never entered
    assert info.value.hook_id == "bad"
    assert not pipe.oh.hooks.registry.has_any()


def test_hook_objects_register_like_dicts(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.oh.hooks.register([Hook(id="obj", type="afterToolCall", handler=recorder)])
    run_one_tool(pipe)
    pipe.flush()
    assert recorder.names() == ["after_tool_call"]


# -- observers are off the hot path ----------------------------------------------------------


def test_slow_observer_does_not_slow_the_tool_call(pipe: TestPipeline) -> None:
    # The observer holds until the test lets it go, after the call returned: a call that waited
    # for it would never return (and the observer would give up after 30 s, finished unset).
    release, finished = threading.Event(), threading.Event()

    def slow(event: Any) -> None:
        if release.wait(30):
            finished.set()

    pipe.register(hook("slow", "afterToolCall", slow))
    try:
        with pipe.tracer.operation("a") as op, op.step() as step:
            result = step.run_tool("fs", "readFile", {}, _ok)
        assert result.content == "ran"
    finally:
        release.set()
    pipe.flush()
    assert finished.is_set()  # it ran, after the call


def test_observer_has_run_after_force_flush(pipe: TestPipeline, release: threading.Event) -> None:
    done = threading.Event()

    def slow(event: HookEvent) -> None:
        # held until the call returned (a loaded machine's pause cannot let it finish early),
        # then still slow: only a flush that waits for it sees it done
        release.wait(30)
        time.sleep(0.5)
        done.set()

    pipe.register(hook("slow", "afterToolCall", slow, timeout=60))
    run_one_tool(pipe)
    assert not done.is_set()
    release.set()
    pipe.flush()
    assert done.is_set()
    assert invocations(pipe, "slow", "ok") == 1


def test_observer_payload_is_built_when_the_event_happens(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("step", "afterStep", recorder))
    with pipe.tracer.operation("a") as op:
        with op.step() as step:
            step.run_tool("fs", "readFile", {}, _ok)
        with op.step() as step:
            step.run_tool("fs", "writeFile", {}, _ok)
    pipe.flush()
    calls = [[c["apiName"] for c in getattr(e, "toolsCalling", [])] for e in recorder.events]
    assert calls == [["readFile"], ["writeFile"]]


# -- spans from other GenAI instrumentations -----------------------------------------------------


def test_hooks_observe_a_foreign_execute_tool_span(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("after", "afterToolCall", recorder))
    attrs = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "get_weather"}
    with pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
        "execute_tool get_weather", attributes=attrs
    ):
        pass
    pipe.flush()
    (event,) = recorder.events
    assert isinstance(event, AfterToolCallEvent)
    assert event.apiName == "get_weather"
    assert event.traceId == format(pipe.span("execute_tool get_weather").context.trace_id, "032x")


def test_hooks_observe_a_failed_foreign_execute_tool_span(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("err", "onToolCallError", recorder))
    attrs = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "get_weather"}
    with pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
        "execute_tool get_weather", attributes=attrs
    ) as span:
        span.set_status(Status(StatusCode.ERROR, "api down"))
    pipe.flush()
    assert recorder.fields("error") == [("api down",)]


def test_hooks_observe_a_foreign_invoke_agent_span(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("done", "onComplete", recorder))
    attrs = {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "planner"}
    with pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
        "invoke_agent planner", attributes=attrs
    ):
        pass
    pipe.flush()
    assert recorder.fields("agentId", "reason") == [("planner", "done")]


def test_hooks_observe_a_foreign_chat_span(pipe: TestPipeline, recorder: Recorder) -> None:
    pipe.register(hook("llm", "llm_output", recorder))
    attrs: dict[str, AttributeValue] = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_REQUEST_MODEL: "gpt-4o",
        sc.GEN_AI_USAGE_INPUT_TOKENS: 12,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 3,
    }
    with pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
        "chat gpt-4o", attributes=attrs
    ):
        pass
    pipe.flush()
    (event,) = recorder.events
    assert getattr(event, "model", None) == "gpt-4o"
    usage = getattr(event, "tokenUsage", None)
    assert (usage.input, usage.output) == (12, 3)  # type: ignore[union-attr]


def test_on_error_fires_for_a_foreign_invoke_agent_span_with_error_status(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("err", "onError", recorder))
    attrs = {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "planner"}
    with (
        pytest.raises(ValueError, match="model refused"),
        pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
            "invoke_agent planner", attributes=attrs
        ),
    ):
        raise ValueError("model refused")
    pipe.flush()
    assert recorder.fields("errorMessage") == [("ValueError: model refused",)]


def test_foreign_span_without_gen_ai_operation_fires_nothing(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    for name in ("afterToolCall", "onComplete", "onError", "llm_output", "onToolCallError"):
        pipe.register(hook(name, name, recorder))
    with pipe.oh.tracer_provider.get_tracer("x").start_as_current_span(
        "GET /", attributes={"http.method": "GET"}
    ):
        pass
    pipe.flush()
    assert recorder.events == []


def test_own_spans_do_not_fire_foreign_observers_twice(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(hook("after", "afterToolCall", recorder))
    run_one_tool(pipe)
    pipe.flush()
    assert recorder.names() == ["after_tool_call"]


# -- sampling ----------------------------------------------------------------------------------


@pytest.fixture
def unsampled(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestPipeline]:
    # The SDK's TracerProvider takes its sampler from the standard variable.
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    with pipeline() as fresh:
        yield fresh


def test_sampled_out_operation_still_enforces_deny_hooks(unsampled: TestPipeline) -> None:
    ran: list[str] = []
    unsampled.register(hook("guard", "beforeToolCall", lambda e: Block("no")))
    result = run_one_tool(unsampled, fn=lambda: ran.append("x"))
    assert ran == []
    assert (result.state or {})["classification"] == "hook_denied"
    assert unsampled.spans() == []


def test_sampled_out_operation_still_applies_mocks_and_rewrites(unsampled: TestPipeline) -> None:
    unsampled.register(hook("ctx", "before_agent_start", lambda d: {"input": "new"}))
    unsampled.register(hook("m", "beforeToolCall", lambda e: e.mock("mocked")))
    with unsampled.tracer.operation("a", input="old") as op, op.step() as step:
        result = step.run_tool("fs", "readFile", {}, _ok)
    assert (op.input, result.content) == ("new", "mocked")


def test_sampled_out_operation_still_fires_observers(
    unsampled: TestPipeline, recorder: Recorder
) -> None:
    unsampled.register(
        hook("after", "afterToolCall", recorder),
        hook("done", "onComplete", recorder),
    )
    run_one_tool(unsampled)
    unsampled.flush()
    assert recorder.names() == ["after_tool_call", "on_complete"]


def test_sampled_out_async_operation_still_enforces_deny_hooks(unsampled: TestPipeline) -> None:
    unsampled.register(hook("guard", "beforeToolCall", lambda e: Block("no")))

    async def main() -> ToolResult:
        async with unsampled.tracer.operation("a") as op, op.step() as step:
            return await step.arun_tool("fs", "readFile", {}, _ok)

    assert asyncio.run(main()).error == "no"


def test_a_rewrite_by_a_model_copy_keeps_the_chain_deciding_on_the_copy() -> None:
    # A handler may return a shallow copy of its event: the copy carries marks of its own, so a
    # later hook's mock is the copy's and is credited to that hook.
    from otelhooks import HooksEngine

    engine = HooksEngine(
        [
            {
                "id": "rewrite",
                "type": "beforeToolCall",
                "handler": lambda e: e.model_copy(update={"args": {"path": "b"}}),
            },
            {"id": "mock", "type": "beforeToolCall", "handler": lambda e: e.mock("fake")},
        ]
    )
    try:
        event = ToolCallEvent(toolCallId="c1", identifier="fs", apiName="readFile", args={})
        verdict = engine.dispatch("before_tool_call", event)
    finally:
        engine.shutdown(5.0)
    assert (verdict.mocked_by, verdict.rewritten_by) == ("mock", ["rewrite"])
    assert verdict.mock is not None
    assert verdict.mock.content == "fake"
    assert isinstance(verdict.payload, ToolCallEvent)
    assert verdict.payload.args == {"path": "b"}
    assert event.mocked_result is None  # the handler's original saw no mock
