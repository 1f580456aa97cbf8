"""``@otelhooks.tool``: a decorated function is a tool call of the step in the context."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from otelhooks import AgentTracer, Block, ToolDenied
from otelhooks.events import ToolCallEvent
from otelhooks.testing import TestPipeline
from tests.conftest import hook

ROOT = Path(__file__).resolve().parents[2]


def _deny_rm(event: ToolCallEvent) -> Block | None:
    return Block("rm is not allowed") if event.apiName == "rm" else None


def test_a_call_inside_a_step_is_an_execute_tool_span_under_it(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    @otelhooks.tool(identifier="calc", name="add")
    def add(a: int, b: int) -> int:
        return a + b

    with tracer.operation("helper") as op, op.step():
        assert add(2, 3) == 5
    span = pipe.span("execute_tool add")
    step = pipe.span("step 0")
    assert span.parent is not None
    assert span.parent.span_id == step.context.span_id
    assert span.attributes is not None
    assert span.attributes["otelhooks.tool.matcher_value"] == "calc/add"
    assert span.attributes["otelhooks.tool.outcome"] == "success"


def test_a_deny_raises_tool_denied_with_the_reason_and_the_function_does_not_run(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    ran: list[str] = []
    pipe.register(hook("no-rm", "beforeToolCall", _deny_rm, matcher="^fs/rm$"))

    @otelhooks.tool(identifier="fs", name="rm")
    def remove(path: str) -> str:
        ran.append(path)
        return "removed"

    with tracer.operation("cleaner") as op, op.step(), pytest.raises(ToolDenied) as denied:
        remove("/etc/passwd")
    assert ran == []
    assert denied.value.reason == "rm is not allowed"
    assert denied.value.tool == "fs/rm"
    assert denied.value.decided_by == "no-rm"
    attrs = pipe.span("execute_tool rm").attributes or {}
    assert attrs["otelhooks.tool.outcome"] == "denied"
    assert attrs["otelhooks.hook.decision"] == "deny"


def test_matchers_see_identifier_slash_name_and_not_other_tools(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    seen: list[str] = []
    pipe.register(
        hook("fs-only", "beforeToolCall", lambda e: seen.append(e.matcher_value), matcher="^fs/")
    )

    @otelhooks.tool(identifier="fs", name="read")
    def read(path: str) -> str:
        return "text"

    @otelhooks.tool(identifier="web", name="get")
    def get(url: str) -> str:
        return "page"

    with tracer.operation("reader") as op, op.step():
        read("a.txt")
        get("http://127.0.0.1/")
    assert seen == ["fs/read"]


def test_a_mock_returns_its_content_instead_of_calling_the_function(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    def offline(event: ToolCallEvent) -> None:
        event.mock({"content": "cached page", "success": True})

    pipe.register(hook("offline", "beforeToolCall", offline, matcher="^web/"))
    calls: list[str] = []

    @otelhooks.tool(identifier="web", name="get")
    def get(url: str) -> str:
        calls.append(url)
        return "live page"

    with tracer.operation("browser") as op, op.step():
        assert get("http://127.0.0.1/") == "cached page"
    assert calls == []
    assert (pipe.span("execute_tool get").attributes or {})["otelhooks.tool.outcome"] == "mocked"


def test_rewritten_arguments_are_what_the_function_gets(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    def sandbox(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {**event.args, "path": "/sandbox/a.txt"}})

    pipe.register(hook("sandbox", "beforeToolCall", sandbox))

    @otelhooks.tool(identifier="fs", name="write")
    def write(path: str, text: str = "") -> str:
        return f"wrote {path}"

    with tracer.operation("writer") as op, op.step():
        assert write("/etc/a.txt", text="x") == "wrote /sandbox/a.txt"


def test_a_rewritten_result_is_what_the_caller_receives(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    def redact(event: Any) -> dict[str, Any]:
        return {"result": {"content": "[redacted]", "success": True}}

    pipe.register(hook("redact", "tool_result_persist", redact))

    @otelhooks.tool(identifier="vault", name="read")
    def read_secret() -> str:
        return "s3cr3t"

    with tracer.operation("reader") as op, op.step():
        assert read_secret() == "[redacted]"


def test_an_unchanged_result_is_the_functions_own_value(tracer: AgentTracer) -> None:
    @otelhooks.tool
    def pair() -> tuple[int, int]:
        return (1, 2)

    with tracer.operation("x") as op, op.step():
        assert pair() == (1, 2)


def test_an_exception_of_the_function_is_raised_as_it_was_and_recorded(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    @otelhooks.tool
    def broken() -> str:
        raise KeyError("missing")

    with tracer.operation("x") as op, op.step(), pytest.raises(KeyError):
        broken()
    attrs = pipe.span("execute_tool broken").attributes or {}
    assert attrs["error.type"] == "KeyError"


def test_async_functions_are_tools_too_deny_mock_and_result(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    pipe.register(hook("no-rm", "beforeToolCall", _deny_rm))

    @otelhooks.tool(identifier="fs", name="rm")
    async def remove(path: str) -> str:
        await asyncio.sleep(0)
        return "removed"

    @otelhooks.tool(identifier="fs", name="stat")
    async def stat(path: str) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"size": 3}

    async def agent() -> None:
        async with tracer.operation("async-agent") as op, op.step():
            assert await stat("a") == {"size": 3}
            with pytest.raises(ToolDenied, match="rm is not allowed"):
                await remove("a")

    asyncio.run(agent())
    assert (pipe.span("execute_tool rm").attributes or {})["otelhooks.tool.outcome"] == "denied"
    assert (pipe.span("execute_tool stat").attributes or {})["otelhooks.tool.outcome"] == "success"


def test_outside_any_operation_a_call_opens_one_of_its_own(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    pipe.register(hook("no-rm", "beforeToolCall", _deny_rm))

    @otelhooks.tool(identifier="fs", name="rm", tracer=tracer)
    def remove(path: str) -> str:
        return "removed"

    with pytest.raises(ToolDenied):
        remove("a")
    op = pipe.span("invoke_agent rm")
    tool_span = pipe.span("execute_tool rm")
    assert tool_span.context.trace_id == op.context.trace_id
    assert (tool_span.attributes or {})["otelhooks.tool.outcome"] == "denied"


def test_directly_in_an_operation_a_call_opens_a_step_of_it(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    @otelhooks.tool
    def ping() -> str:
        return "pong"

    with tracer.operation("x"):
        assert ping() == "pong"
    step = pipe.span("step 0")
    assert (pipe.span("execute_tool ping").parent or step.context).span_id == step.context.span_id
    assert len(pipe.spans("invoke_agent x")) == 1


def test_the_step_follows_asyncio_tasks_and_copied_thread_contexts(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    import contextvars
    import threading

    @otelhooks.tool
    def ping() -> str:
        return "pong"

    with tracer.operation("x") as op, op.step():
        ctx = contextvars.copy_context()
        thread = threading.Thread(target=ctx.run, args=(ping,))
        thread.start()
        thread.join()
    step = pipe.span("step 0")
    span = pipe.span("execute_tool ping")
    assert span.parent is not None
    assert span.parent.span_id == step.context.span_id


def test_a_method_is_a_tool_without_its_receiver_in_the_arguments(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    seen: list[dict[str, Any]] = []
    pipe.register(hook("see", "beforeToolCall", lambda e: seen.append(dict(e.args))))

    class Files:
        prefix = "/data"

        @otelhooks.tool(identifier="fs", name="read")
        def read(self, path: str) -> str:
            return f"{self.prefix}/{path}"

    with tracer.operation("x") as op, op.step():
        assert Files().read("a.txt") == "/data/a.txt"
    assert seen == [{"path": "a.txt"}]


def test_a_rewrite_with_an_argument_the_function_does_not_take_fails_loudly(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    def inject(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {**event.args, "sudo": True}})

    pipe.register(hook("inject", "beforeToolCall", inject))

    @otelhooks.tool
    def ls(path: str) -> str:
        return "listing"

    with tracer.operation("x") as op, op.step(), pytest.raises(TypeError, match="sudo, not taken"):
        ls("/")
    assert (pipe.span("execute_tool ls").attributes or {})["error.type"] == "TypeError"


def test_positional_only_arguments_survive_a_rewrite(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    def double(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"a": event.args["a"] * 2, "b": event.args["b"]}})

    pipe.register(hook("double", "beforeToolCall", double))

    @otelhooks.tool
    def sub(a: int, /, b: int) -> int:
        return a - b

    with tracer.operation("x") as op, op.step():
        assert sub(5, 1) == 9


def _run_script(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter: the default tracer is process state."""
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(script))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=60, env=env
    )


def test_a_call_before_configure_does_not_keep_later_calls_from_its_hooks(
    tmp_path: Path,
) -> None:
    # the first call outside any operation made the hookless stand-in the default for good, so
    # every later such call ran past the guards of the configure() that came after it
    done = _run_script(
        tmp_path,
        """
        import otelhooks
        from otelhooks import Block

        ran = []

        @otelhooks.tool
        def rm(path: str) -> str:
            ran.append(path)
            return "removed"

        rm("warm-up")  # before the application configures otelhooks
        guard = {"id": "no-rm", "type": "before_tool_call", "matcher": "rm",
                 "handler": lambda event: Block("rm is not allowed")}
        oh = otelhooks.configure(otlp=False, structured_logging=False, hooks=[guard])
        try:
            rm("victim")
        except otelhooks.ToolDenied as denied:
            print("denied:", denied.reason)
        print("ran:", ran)
        oh.shutdown()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["denied: rm is not allowed", "ran: ['warm-up']"]


def test_a_second_global_configure_says_its_hooks_are_not_global(tmp_path: Path) -> None:
    # OpenTelemetry keeps the first global provider: the second pipeline's guard never saw the
    # calls outside an operation, and nothing but OpenTelemetry's own log line said so
    done = _run_script(
        tmp_path,
        """
        import warnings
        import otelhooks
        from otelhooks import Block

        @otelhooks.tool
        def rm(path: str) -> str:
            return "removed"

        first = otelhooks.configure(otlp=False, structured_logging=False)
        guard = {"id": "no-rm", "type": "before_tool_call", "matcher": "rm",
                 "handler": lambda event: Block("rm is not allowed")}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second = otelhooks.configure(otlp=False, structured_logging=False, hooks=[guard])
            apart = otelhooks.configure(otlp=False, structured_logging=False, set_global=False)
        for warning in caught:
            print(warning.category.__name__, warning.filename.endswith("agent.py"))
        print("the first pipeline's call:", rm("victim"))
        for oh in (apart, second, first):
            oh.shutdown()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "UserWarning True",  # the second global one only, pointing at its caller
        "the first pipeline's call: removed",
    ]


def test_a_call_that_lost_its_operations_context_says_no_hook_saw_it(tmp_path: Path) -> None:
    # configure(set_global=False) and a thread pool of the application's own between the step
    # and the tool: the call found no operation, ran on the hookless stand-in, silently
    done = _run_script(
        tmp_path,
        """
        import asyncio
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        import otelhooks
        from otelhooks import Block

        ran = []

        @otelhooks.tool
        def rm(path: str) -> str:
            ran.append(path)
            return "removed"

        @otelhooks.tool
        async def arm(path: str) -> str:
            ran.append(path)
            return "removed"

        guard = {"id": "no-rm", "type": "before_tool_call", "matcher": "rm$",
                 "handler": lambda event: Block("rm is not allowed")}
        oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False,
                                 hooks=[guard])
        with oh.operation("agent") as op, op.step(), ThreadPoolExecutor(1) as pool:
            print(pool.submit(rm, "lost").result())
            print(pool.submit(asyncio.run, arm("lost-async")).result())
            try:
                pool.submit(contextvars.copy_context().run, rm, "kept").result()
            except otelhooks.ToolDenied as denied:
                print("denied:", denied.reason)
        print("ran:", ran)
        oh.shutdown()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "removed",
        "removed",
        "denied: rm is not allowed",
        "ran: ['lost', 'lost-async']",
    ]
    for name in ("rm", "arm"):
        assert (
            f"UserWarning: @otelhooks.tool {name!r} ran outside any operation and no "
            "configure() set a global tracer: no hook saw it"
        ) in done.stderr


def test_a_call_that_lost_the_context_of_a_run_with_guards_of_its_own_says_they_did_not_see_it(
    tmp_path: Path,
) -> None:
    # a global configure() and a guard given to the run (operation(hooks=...)): the call in the
    # application's thread pool opened an operation of its own, which the global hooks see and
    # the run's guard does not, and it ran without a word
    done = _run_script(
        tmp_path,
        """
        import asyncio
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        import otelhooks
        from otelhooks import Block

        ran = []

        @otelhooks.tool
        def rm(path: str) -> str:
            ran.append(path)
            return "removed"

        @otelhooks.tool
        async def arm(path: str) -> str:
            ran.append(path)
            return "removed"

        guard = {"id": "no-rm", "type": "before_tool_call", "matcher": "rm$",
                 "handler": lambda event: Block("rm is not allowed")}
        oh = otelhooks.configure(otlp=False, structured_logging=False)
        print(rm("before"))  # no run has guards of its own: no warning
        with oh.operation("agent", hooks=[guard]) as op, op.step(), ThreadPoolExecutor(1) as pool:
            print(pool.submit(rm, "lost").result())
            print(pool.submit(asyncio.run, arm("lost-async")).result())
            try:
                pool.submit(contextvars.copy_context().run, rm, "kept").result()
            except otelhooks.ToolDenied as denied:
                print("denied:", denied.reason)
        print(rm("after"))  # the run and its guard are gone: no warning
        print("ran:", ran)
        oh.shutdown()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "removed",
        "removed",
        "removed",
        "denied: rm is not allowed",
        "removed",
        "ran: ['before', 'lost', 'lost-async', 'after']",
    ]
    warned = [line for line in done.stderr.splitlines() if "UserWarning" in line]
    assert [w.split("UserWarning: ")[1][:60] for w in warned] == [
        "@otelhooks.tool 'rm' ran outside any operation while a run h",
        "@otelhooks.tool 'arm' ran outside any operation while a run ",
    ]
    assert "before_tool_call hooks of its own: they did not see it" in warned[0]


def test_a_call_in_a_task_that_outlived_a_run_with_guards_of_its_own_says_they_did_not_see_it(
    pipe: TestPipeline,
) -> None:
    # a task the run started and did not await: its call found the run's step in its context,
    # and the hooks the run was given, removed when it ended, let it run without a word
    ran: list[str] = []

    @otelhooks.tool
    async def rm(path: str) -> str:
        ran.append(path)
        return "removed"

    guard = hook("no-rm", "beforeToolCall", _deny_rm, matcher="rm$")

    async def main() -> list[str]:
        async with pipe.tracer.operation("agent", hooks=[guard]) as op, op.step():
            with pytest.raises(ToolDenied, match="rm is not allowed"):
                await rm("awaited")
            ended = asyncio.Event()

            async def later() -> str:
                await ended.wait()
                return await rm("after-the-run")

            straggler = asyncio.create_task(later())
        ended.set()
        with pytest.warns(UserWarning, match="'rm' ran in run 'agent' after it ended: the hooks"):
            return [await straggler]

    assert asyncio.run(main()) == ["removed"]
    assert ran == ["after-the-run"]


def _deny_force(event: ToolCallEvent) -> Block | ToolCallEvent | None:
    if event.args.get("path") == "/":  # the root is cleaned without force
        return event.model_copy(update={"args": {**event.args, "force": False}})
    return Block("force is not allowed") if event.args.get("force") else None


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_guard_sees_the_defaults_the_function_receives(
    pipe: TestPipeline, tracer: AgentTracer, use_async: bool
) -> None:
    # guards saw only the arguments the caller wrote: called without `force`, the function ran
    # with its default force=True past a guard denying force
    ran: list[tuple[str, bool]] = []
    pipe.register(hook("no-force", "beforeToolCall", _deny_force))

    @otelhooks.tool(identifier="fs", name="rm")
    def remove(path: str, force: bool = True) -> str:
        ran.append((path, force))
        return "removed"

    @otelhooks.tool(identifier="fs", name="rm")
    async def aremove(path: str, force: bool = True) -> str:
        ran.append((path, force))
        return "removed"

    async def calls() -> None:
        async with tracer.operation("cleaner") as op, op.step():
            with pytest.raises(ToolDenied, match="force is not allowed"):
                await aremove("/tmp/x")
            assert await aremove("/") == "removed"

    if use_async:
        asyncio.run(calls())
    else:
        with tracer.operation("cleaner") as op, op.step():
            with pytest.raises(ToolDenied, match="force is not allowed"):
                remove("/tmp/x")
            assert remove("/") == "removed"  # the guard's rewrite of a default reaches it
    assert ran == [("/", False)]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_no_hook_changes_a_default_or_an_argument_later_calls_receive(
    pipe: TestPipeline, tracer: AgentTracer, use_async: bool
) -> None:
    # Observers of the call's end (after, error, denied) got the function's default list and
    # the caller's list themselves, and a guard got them when a sibling argument (a lock)
    # could not be copied: what a hook appended there, every later call received.
    def tag(event: Any) -> None:
        event.args["tags"].append(event.event)

    def deny_rm(event: ToolCallEvent) -> Block | None:
        tag(event)
        return Block("no rm") if event.args["path"] == "rm" else None

    pipe.register(
        hook("guard", "beforeToolCall", deny_rm),
        *(
            hook(n, n, tag)
            for n in ("after_tool_call", "on_tool_call_error", "on_tool_call_denied")
        ),
    )
    received: list[list[str]] = []
    lock = threading.Lock()

    def body(path: str, tags: list[str]) -> str:
        received.append(list(tags))
        if path == "boom":
            raise RuntimeError("boom")
        return "ok"

    @otelhooks.tool(name="t")
    def run(path: str, tags: list[str] = [], held: Any = lock) -> str:  # noqa: B006 (the case)
        return body(path, tags)

    @otelhooks.tool(name="t")
    async def arun(path: str, tags: list[str] = [], held: Any = lock) -> str:  # noqa: B006
        return body(path, tags)

    mine: list[str] = []
    paths = ["ok", "boom", "rm", "ok"]

    async def acalls() -> None:
        async with tracer.operation("a") as op, op.step():
            for path in paths:
                with contextlib.suppress(RuntimeError, ToolDenied):
                    await arun(path)
                with contextlib.suppress(RuntimeError, ToolDenied):
                    await arun(path, mine)

    if use_async:
        asyncio.run(acalls())
    else:
        with tracer.operation("a") as op, op.step():
            for path in paths:
                with contextlib.suppress(RuntimeError, ToolDenied):
                    run(path)
                with contextlib.suppress(RuntimeError, ToolDenied):
                    run(path, mine)
    assert pipe.flush()
    fn = arun if use_async else run
    assert fn.__wrapped__.__defaults__[0] == []  # type: ignore[attr-defined]
    assert mine == []
    # each call received what the guard left: its own copy, changed by this call's guard only
    assert received == [["before_tool_call"]] * 6


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_guard_sees_each_keyword_a_function_taking_kwargs_receives(
    pipe: TestPipeline, tracer: AgentTracer, use_async: bool
) -> None:
    # guards saw {"kwargs": {"path": ..., "force": True}}: a guard denying `force` let
    # `rm(path="/", force=True)` run, and one rewriting `path` changed nothing
    ran: list[dict[str, Any]] = []
    pipe.register(hook("no-force", "beforeToolCall", _deny_force))

    @otelhooks.tool(identifier="fs", name="rm")
    def remove(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "removed"

    @otelhooks.tool(identifier="fs", name="rm")
    async def aremove(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "removed"

    async def calls() -> None:
        async with tracer.operation("cleaner") as op, op.step():
            with pytest.raises(ToolDenied, match="force is not allowed"):
                await aremove(path="/tmp/x", force=True)
            assert await aremove(path="/", force=True) == "removed"

    if use_async:
        asyncio.run(calls())
    else:
        with tracer.operation("cleaner") as op, op.step():
            with pytest.raises(ToolDenied, match="force is not allowed"):
                remove(path="/tmp/x", force=True)
            assert remove(path="/", force=True) == "removed"
    assert ran == [{"path": "/", "force": False}]  # the guard's rewrite reaches it


def test_an_object_whose_call_is_async_is_an_async_tool(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    # Python 3.11's iscoroutinefunction says no to such an object: it was wrapped as a sync
    # tool, whose span ended before the coroutine ran, so a tool_result_persist hook redacting
    # the secret saw "<coroutine ...>" and the caller got the secret
    def redact(event: Any) -> None:
        event.result["content"] = event.result["content"].replace("SECRET", "***")

    pipe.register(hook("redact", "tool_result_persist", redact))

    class Fetch:
        async def __call__(self, url: str) -> str:
            return f"token=SECRET from {url}"

    fetch = otelhooks.tool(name="fetch")(Fetch())
    partly = otelhooks.tool(name="fetch")(functools.partial(Fetch(), "b"))

    async def calls() -> list[str]:
        async with tracer.operation("a") as op, op.step():
            return [await fetch("a"), await partly()]

    assert asyncio.run(calls()) == ["token=*** from a", "token=*** from b"]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_guard_that_allows_leaves_the_tool_the_callers_own_object(
    pipe: TestPipeline, tracer: AgentTracer, use_async: bool
) -> None:
    # the chain handed hooks a deep copy of each argument and took any difference for a
    # change in place: a plain object (compared by identity) differed from its copy, so every
    # guard that allowed was a rewrite, and the tool added to a copy of the caller's cart
    class Cart:
        def __init__(self) -> None:
            self.items: list[str] = []

    pipe.register(hook("allow", "beforeToolCall", lambda event: None))

    @otelhooks.tool(name="add")
    def add(cart: Cart, item: str) -> str:
        cart.items.append(item)
        return "added"

    @otelhooks.tool(name="add")
    async def aadd(cart: Cart, item: str) -> str:
        cart.items.append(item)
        return "added"

    cart = Cart()

    async def calls() -> None:
        async with tracer.operation("shop") as op, op.step():
            assert await aadd(cart, "tea") == "added"

    if use_async:
        asyncio.run(calls())
    else:
        with tracer.operation("shop") as op, op.step():
            assert add(cart, "tea") == "added"
    assert cart.items == ["tea"]
    (span,) = pipe.spans("execute_tool add")
    assert span.attributes is not None
    assert "otelhooks.hook.rewritten_by" not in span.attributes


def test_a_generator_is_refused_when_it_is_decorated(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    # wrapped as a plain function, the call's span ended before the body ran: a
    # tool_result_persist redaction saw "<generator object ...>" and the caller got the secret
    def lines(path: str) -> Any:
        yield f"token=SECRET in {path}"

    async def alines(path: str) -> Any:
        yield f"token=SECRET in {path}"

    class Lines:
        def __call__(self, path: str) -> Any:
            yield path

    for func in (lines, alines, Lines(), functools.partial(lines, "a")):
        with pytest.raises(otelhooks.ConfigError, match=r"is a generator.*return a list"):
            otelhooks.tool(name="lines")(func)

    # what decorating cannot foresee is refused when called, before the body runs
    @otelhooks.tool(name="lines")
    @functools.wraps(lines)
    def wrapped(path: str) -> Any:
        return lines(path)

    @otelhooks.tool(name="lines")
    def expression(path: str) -> Any:
        return (line for line in [f"token=SECRET in {path}"])

    @otelhooks.tool(name="lines")
    async def awaited(path: str) -> Any:
        return alines(path)

    with tracer.operation("a") as op, op.step():
        for call in (wrapped, expression):
            with pytest.raises(otelhooks.ConfigError, match="is a generator"):
                call("x")

    async def acall() -> None:
        async with tracer.operation("a") as op, op.step():
            await awaited("x")

    with pytest.raises(otelhooks.ConfigError, match="is a generator"):
        asyncio.run(acall())

    @otelhooks.tool(name="lines")
    def listed(path: str) -> list[str]:  # what the error says to do: redacted
        return list(lines(path))

    pipe.register(
        hook(
            "redact",
            "tool_result_persist",
            lambda e: e.result.update(content=e.result["content"].replace("SECRET", "***")),
        )
    )
    with tracer.operation("a") as op, op.step():
        assert "SECRET" not in str(listed("x"))


@dataclass
class _Files:
    """A receiver a rewrite must not copy: the method records on the caller's own instance."""

    root: str = "/srv"
    read_paths: list[str] = field(default_factory=list)

    @otelhooks.tool
    def read(this, path: str) -> str:  # a receiver not named self, as users write
        this.read_paths.append(path)
        return f"read {this.root}{path}"

    @otelhooks.tool
    async def aread(this, path: str) -> str:
        this.read_paths.append(path)
        return f"aread {this.root}{path}"

    @staticmethod
    @otelhooks.tool
    def stat(path: str) -> str:
        return f"stat {path}"

    @otelhooks.tool
    @staticmethod
    def size(path: str) -> str:
        return f"size {path}"

    @classmethod
    @otelhooks.tool
    def ls(klass, path: str) -> str:
        return f"ls {klass.__name__} {path}"

    @otelhooks.tool
    @classmethod
    def tree(klass, path: str) -> str:
        return f"tree {klass.__name__} {path}"


class _MoreFiles(_Files):
    def read(self, path: str) -> str:
        return "more " + super().read(path)


def test_a_methods_receiver_is_never_judged_or_copied_whatever_its_name(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    # hooks saw `this`/`klass` as an argument, a rewrite ran the method on a dict copied from
    # the dataclass (AttributeError), and a tool stacked over @staticmethod/@classmethod failed
    # through an instance or when decorated
    seen: list[dict[str, Any]] = []

    def under_tmp(event: ToolCallEvent) -> ToolCallEvent:
        seen.append(dict(event.args))
        return event.model_copy(
            update={"args": {**event.args, "path": "/tmp" + event.args["path"]}}
        )

    pipe.register(hook("under-tmp", "beforeToolCall", under_tmp))
    files = _Files()
    with tracer.operation("x") as op, op.step():
        results = [
            files.read("/a"),
            asyncio.run(files.aread("/b")),
            _Files.read(files, "/c"),
            _MoreFiles().read("/d"),
            files.stat("/e"),
            _Files.stat("/f"),
            files.size("/g"),
            _Files.size("/h"),
            files.ls("/i"),
            _Files.tree("/j"),
            files.tree("/k"),
        ]
    assert seen == [{"path": f"/{c}"} for c in "abcdefghijk"]
    assert results == [
        "read /srv/tmp/a",
        "aread /srv/tmp/b",
        "read /srv/tmp/c",
        "more read /srv/tmp/d",
        "stat /tmp/e",
        "stat /tmp/f",
        "size /tmp/g",
        "size /tmp/h",
        "ls _Files /tmp/i",
        "tree _Files /tmp/j",
        "tree _Files /tmp/k",
    ]
    assert files.read_paths == ["/tmp/a", "/tmp/b", "/tmp/c"]


def test_a_function_whose_first_argument_is_an_instance_still_shows_it(
    pipe: TestPipeline, tracer: AgentTracer
) -> None:
    seen: list[dict[str, Any]] = []
    pipe.register(hook("see", "beforeToolCall", lambda e: seen.append(dict(e.args))))

    @otelhooks.tool
    def archive(files: _Files, path: str) -> str:
        return path

    with tracer.operation("x") as op, op.step():
        archive(_Files(), "/a")
    assert [sorted(s) for s in seen] == [["files", "path"]]
