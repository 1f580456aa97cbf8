"""Control webhooks on before_tool_call, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import pytest

from otelhooks import ToolResult
from otelhooks._actions._webhook_http import CONTROL_RESPONSE_LIMIT
from otelhooks.testing import TestPipeline
from tests._webhook_server import Received, Reply, WebhookServer


def control(server: WebhookServer, path: str = "/control", **webhook: Any) -> dict[str, Any]:
    return {
        "id": f"ctl{path.replace('/', '-')}",
        "type": "beforeToolCall",
        "webhook": {"url": server.url + path, "responseHandling": "toolCall", **webhook},
    }


def run_tool(pipe: TestPipeline, ran: list[str] | None = None) -> ToolResult:
    ran = ran if ran is not None else []

    def tool(path: str) -> str:
        ran.append(path)
        return "contents"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("fs", "readFile", {"path": "a.txt"}, tool)


def denied(result: ToolResult) -> bool:
    return (result.state or {}).get("classification") == "hook_denied"


def test_allow_lets_the_tool_run(pipe: TestPipeline, server: WebhookServer) -> None:
    server.routes["/control"] = Reply.json({"decision": "allow"})
    pipe.register(control(server))
    ran: list[str] = []
    result = run_tool(pipe, ran)
    assert (result.content, ran) == ("contents", ["a.txt"])
    span = pipe.span("execute_tool readFile")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "allow"


def test_the_request_carries_the_event_and_hook_identity(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply.json({"decision": "allow"})
    pipe.register(control(server))
    run_tool(pipe)
    request = server.requests("/control")[0]
    body = request.json()
    assert (body["identifier"], body["apiName"], body["args"]) == (
        "fs",
        "readFile",
        {"path": "a.txt"},
    )
    assert (body["hookId"], body["hookType"]) == ("ctl-control", "beforeToolCall")
    assert request.headers["idempotency-key"] == body["eventId"]


def test_deny_with_a_reason_reaches_the_agent_as_hook_denied(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply.json({"decision": "deny", "reason": "禁止执行该操作"})
    pipe.register(control(server))
    ran: list[str] = []
    result = run_tool(pipe, ran)
    assert ran == []
    assert denied(result)
    assert result.content == "禁止执行该操作"
    attrs = pipe.span("execute_tool readFile").attributes
    assert attrs is not None
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert attrs["otelhooks.hook.decision_reason"] == "禁止执行该操作"
    assert attrs["otelhooks.hook.classification"] == "hook_denied"


def test_deny_without_a_reason_uses_the_default(pipe: TestPipeline, server: WebhookServer) -> None:
    server.routes["/control"] = Reply.json({"decision": "deny"})
    pipe.register(control(server))
    assert run_tool(pipe).content == "Blocked by beforeToolCall hook."


def test_extra_fields_are_ignored_and_updated_input_changes_nothing(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply.json(
        {"decision": "allow", "updatedInput": {"path": "/etc/shadow"}, "additionalContext": "x"}
    )
    pipe.register(control(server))
    ran: list[str] = []
    run_tool(pipe, ran)
    assert ran == ["a.txt"]


PROTOCOL_ERRORS = {
    "empty-body": Reply(200, b""),
    "status-204": Reply(204),
    "status-500": Reply.json({"decision": "allow"}, status=500),
    "redirect": Reply(302, b"", headers={"Location": "http://127.0.0.1:1/elsewhere"}),
    "invalid-json": Reply(200, b"{not json"),
    "not-an-object": Reply.json(["allow"]),
    "missing-decision": Reply.json({"reason": "x"}),
    "invalid-decision": Reply.json({"decision": "maybe"}),
    "nested-hookSpecificOutput": Reply.json(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    ),
    "too-large": Reply(
        200, b'{"decision": "allow", "pad": "' + b"x" * CONTROL_RESPONSE_LIMIT + b'"}'
    ),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_ERRORS))
def test_protocol_errors_follow_on_error_continue_by_default(
    case: str, pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = PROTOCOL_ERRORS[case]
    pipe.register(control(server))
    ran: list[str] = []
    run_tool(pipe, ran)
    assert ran == ["a.txt"]  # continue: the failed hook is ignored
    attrs = pipe.span("execute_tool readFile").attributes
    assert attrs is not None
    assert attrs["otelhooks.hook.errors"]


@pytest.mark.parametrize("case", sorted(PROTOCOL_ERRORS))
def test_protocol_errors_block_with_on_error_block_and_are_never_an_allow(
    case: str, pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = PROTOCOL_ERRORS[case]
    pipe.register(control(server, onError="block"))
    ran: list[str] = []
    result = run_tool(pipe, ran)
    assert ran == []
    assert denied(result)


def test_control_requests_are_never_retried(pipe: TestPipeline, server: WebhookServer) -> None:
    server.routes["/control"] = Reply(503)
    pipe.register(control(server))
    run_tool(pipe)
    assert len(server.requests("/control")) == 1


def test_a_slow_endpoint_times_out_and_follows_on_error(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply.json({"decision": "allow"}, delay_s=2.0)
    pipe.register(control(server, timeout=0.3, onError="block"))
    started = time.perf_counter()
    result = run_tool(pipe)
    assert time.perf_counter() - started < 1.5
    assert denied(result)
    errors = pipe.span("execute_tool readFile").attributes["otelhooks.hook.errors"]  # type: ignore[index]
    assert "timeout" in errors[0]


def test_a_dripping_endpoint_is_cut_at_the_timeout(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/control"] = Reply(200, json.dumps({"decision": "allow"}).encode(), drip_s=0.2)
    pipe.register(control(server, timeout=0.5, onError="block"))
    started = time.perf_counter()
    assert denied(run_tool(pipe))
    assert time.perf_counter() - started < 3.0


def test_a_refused_connection_is_a_network_error(pipe: TestPipeline) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x"
    webhook = {"url": url, "responseHandling": "toolCall", "onError": "block"}
    pipe.register({"id": "c", "type": "beforeToolCall", "webhook": webhook})
    assert denied(run_tool(pipe))
    errors = pipe.span("execute_tool readFile").attributes["otelhooks.hook.errors"]  # type: ignore[index]
    assert "network_error" in errors[0]


def test_control_hooks_run_in_registration_order_and_the_first_deny_wins(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    server.routes["/a"] = Reply.json({"decision": "allow"})
    server.routes["/b"] = Reply.json({"decision": "deny", "reason": "b says no"})
    server.routes["/c"] = Reply.json({"decision": "deny", "reason": "c says no"})
    pipe.register(control(server, "/a"), control(server, "/b"), control(server, "/c"))
    result = run_tool(pipe)
    assert result.content == "b says no"
    assert [r.path for r in server.received] == ["/a", "/b"]


def test_in_async_runtimes_the_wait_does_not_block_the_event_loop(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    # The webhook answers only once the event loop has run while it holds the request: a wait
    # that blocked the loop would hold the answer until the 30 s bound (no timing to guess).
    loop_ran = threading.Event()
    held: list[bool] = []

    def answer(got: Received) -> Reply:
        held.append(loop_ran.wait(30))
        return Reply.json({"decision": "deny", "reason": "slow no"})

    server.routes["/control"] = answer
    pipe.register(control(server))

    async def main() -> ToolResult:
        async def watcher() -> None:
            while not server.requests("/control"):
                await asyncio.sleep(0.01)
            loop_ran.set()

        task = asyncio.create_task(watcher())
        async with pipe.tracer.operation("agent") as op, op.step() as step:
            result = await step.arun_tool("fs", "readFile", {"path": "a"}, lambda path: "x")
        task.cancel()
        return result

    result = asyncio.run(main())
    assert result.content == "slow no"
    assert held == [True]


def test_cancellation_never_grants_permission(pipe: TestPipeline, server: WebhookServer) -> None:
    server.routes["/control"] = Reply.json({"decision": "allow"}, delay_s=0.5)
    pipe.register(control(server))
    ran: list[str] = []

    async def main() -> None:
        async def agent() -> None:
            async with pipe.tracer.operation("agent") as op, op.step() as step:
                await step.arun_tool("fs", "readFile", {"path": "a"}, lambda path: ran.append(path))

        task = asyncio.create_task(agent())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.8)  # the late allow arrives now

    asyncio.run(main())
    assert ran == []
