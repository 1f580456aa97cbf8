"""Every approval is a span event on the span of the call that waited, as the SDK exports it:
who answered, when, what (issue #29, point 2). And the runtimes that wait besides a tool call:
LobeHub's ``beforeHumanIntervention`` (the ``step.approval`` scope) and the kernel's intercept
points, each answered in that system's own shape."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otelhooks import EventLogServer, OtlpJsonLinesSpanExporter, load_config, serve
from otelhooks.testing import TestPipeline, pipeline
from tests.web.conftest import AUTH, TOKEN, approval_holder

pytestmark = pytest.mark.timeout(60)


def _hook(hook_id: str, event: str, matcher: str | None = "rm", **approval: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "id": hook_id,
        "type": event,
        "approval": {"timeout": 10, "default": "deny", **approval},
    }
    if matcher is not None:
        hook["matcher"] = matcher
    return hook


@pytest.fixture
def capturing_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    # content capture on: the person sees the arguments and may edit them
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    started = serve(token=TOKEN)
    try:
        with httpx.Client(base_url=started.url, headers=AUTH, timeout=30) as client:
            yield client
    finally:
        started.stop()


def _pending(api: httpx.Client, hook_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # the inbox is the process's: only this test's hook counts
        for item in api.get("/v1/approvals").json()["pending"]:
            if item["hook_id"] == hook_id:
                return dict(item)
        time.sleep(0.02)
    raise AssertionError(f"no approval of {hook_id} became pending")


def _answer_while(
    api: httpx.Client,
    hook_id: str,
    run: Callable[[], Any],
    answer: dict[str, Any],
    *,
    after_s: float = 0.0,
) -> tuple[Any, dict[str, Any]]:
    """Run ``run`` on a thread, answer its approval with ``answer`` (``after_s`` after it is
    pending); (its result, the item)."""
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(result=run()))
    worker.start()
    item = _pending(api, hook_id)
    time.sleep(after_s)
    assert api.post(f"/v1/approvals/{item['id']}", json=answer).status_code == 200
    worker.join(10)
    assert not worker.is_alive()
    return out.get("result"), item


def _event(span: ReadableSpan, name: str) -> dict[str, Any]:
    (event,) = [e for e in span.events if e.name == name]
    return dict(event.attributes or {})


def _run_rm(pipe: TestPipeline, ran: list[Any]) -> Any:
    with pipe.oh.operation("careful-bot") as op, op.step() as step:
        return step.run_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw) or "ok")


def test_a_denied_tool_call_span_carries_who_answered_when_and_why(api: httpx.Client) -> None:
    ran: list[Any] = []
    with pipeline(hooks=[_hook("ask-sync", "before_tool_call")]) as pipe:
        before_ms = time.time_ns() // 1_000_000
        _, item = _answer_while(
            api,
            "ask-sync",
            lambda: _run_rm(pipe, ran),
            {"decision": "deny", "reason": "not on prod", "by": "alice"},
        )
        (span,) = pipe.spans("execute_tool rm")
    assert ran == []
    attrs = _event(span, "otelhooks.reject")
    assert attrs["otelhooks.approval.answered_by"] == "alice"
    assert attrs["otelhooks.approval.decision"] == "deny"
    assert attrs["otelhooks.approval.reason"] == "not on prod"
    assert attrs["otelhooks.approval.hook_id"] == "ask-sync"
    assert attrs["otelhooks.approval.id"] == item["id"]
    assert attrs["otelhooks.approval.timed_out"] is False
    assert attrs["otelhooks.approval.args_edited"] is False
    answered_ms = attrs["otelhooks.approval.answered_ms"]
    assert isinstance(answered_ms, int)
    assert answered_ms >= before_ms
    assert span.events[-1].timestamp == answered_ms * 1_000_000


def test_an_async_allow_with_edited_arguments_is_an_approve_event_marked_edited(
    capturing_api: httpx.Client,
) -> None:
    api = capturing_api
    ran: list[Any] = []

    async def run(pipe: TestPipeline) -> None:
        async with pipe.oh.operation("careful-bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    with pipeline(hooks=[_hook("ask-async", "before_tool_call")]) as pipe:
        _answer_while(
            api,
            "ask-async",
            lambda: asyncio.run(run(pipe)),
            {"decision": "allow", "by": "bob", "args": {"path": "/data/tmp"}},
        )
        (span,) = pipe.spans("execute_tool rm")
    attrs = _event(span, "otelhooks.approve")
    assert ran == [{"path": "/data/tmp"}]
    assert (attrs["otelhooks.approval.answered_by"], attrs["otelhooks.approval.args_edited"]) == (
        "bob",
        True,
    )
    # the edited values themselves never go on the span: arguments are content
    assert "/data/tmp" not in json.dumps({k: str(v) for k, v in attrs.items()})


def test_an_unanswered_approval_is_an_event_answered_by_the_timeout(api: httpx.Client) -> None:
    ran: list[Any] = []
    hook = _hook("ask-timeout", "before_tool_call", timeout=0.3, default="allow")
    with pipeline(hooks=[hook]) as pipe:
        _run_rm(pipe, ran)
        (span,) = pipe.spans("execute_tool rm")
    attrs = _event(span, "otelhooks.approve")
    assert ran == [{"path": "/data"}]
    assert attrs["otelhooks.approval.answered_by"] == "timeout"
    assert attrs["otelhooks.approval.timed_out"] is True


# -- LobeHub: beforeHumanIntervention ------------------------------------------------------------


def _approval_step(pipe: TestPipeline) -> tuple[Any, str | None]:
    with pipe.oh.operation("lobe-agent") as op, op.step() as step:
        pending = [{"identifier": "fs", "apiName": "delete", "toolCallId": "call_1"}]
        with step.approval(pending) as approval:
            pass
    return approval, op.reason


def test_lobehub_before_human_intervention_waits_and_a_deny_is_a_reject(
    api: httpx.Client,
) -> None:
    hook = _hook("lobe-ask", "beforeHumanIntervention", matcher=None)
    stopped: list[Any] = []
    with pipeline(hooks=[hook]) as pipe:
        pipe.oh.register(
            [{"id": "stopped", "type": "onStopByHumanIntervention", "handler": stopped.append}]
        )
        (approval, reason), item = _answer_while(
            api,
            "lobe-ask",
            lambda: _approval_step(pipe),
            {"decision": "deny", "reason": "no deletes today", "by": "carol"},
        )
        pipe.oh.engine.flush(10)
        (span,) = pipe.spans("request_human_approve")
    assert item["tool"] == "fs/delete"
    # LobeHub's own shape: action reject, with the rejection reason, and the run halted
    assert approval.action == "reject"
    assert "no deletes today" in approval.rejection_reason
    assert reason == "interrupted"
    assert [e.rejectionReason for e in stopped] == [approval.rejection_reason]
    attrs = _event(span, "otelhooks.reject")
    assert attrs["otelhooks.approval.answered_by"] == "carol"


def test_lobehub_before_human_intervention_answer_is_an_event_log_record(
    api: httpx.Client,
) -> None:
    hook = _hook("lobe-log", "beforeHumanIntervention", matcher=None)
    with pipeline(hooks=[hook]) as pipe:
        _answer_while(
            api,
            "lobe-log",
            lambda: _approval_step(pipe),
            {"decision": "deny", "reason": "later", "by": "fay"},
        )
    records = api.get("/v1/events", params={"mode": "drain"}).json()["events"]
    (record,) = [r for r in records if r["kind"] == "approval" and r["tool"] == "fs/delete"]
    assert (record["success"], record["detail"]) == (False, "rejected by fay: later")


def test_lobehub_before_human_intervention_allow_is_an_approve(api: httpx.Client) -> None:
    hook = _hook("lobe-allow", "beforeHumanIntervention", matcher=None)
    with pipeline(hooks=[hook]) as pipe:
        (approval, reason), _ = _answer_while(
            api, "lobe-allow", lambda: _approval_step(pipe), {"decision": "allow", "by": "dan"}
        )
        (span,) = pipe.spans("request_human_approve")
    assert (approval.action, approval.rejection_reason, reason) == ("approve", None, "done")
    assert span.attributes is not None
    assert span.attributes["otelhooks.approval.action"] == "approve"
    assert _event(span, "otelhooks.approve")["otelhooks.approval.answered_by"] == "dan"


def test_lobehub_before_human_intervention_awaited_waits_without_blocking_the_loop(
    api: httpx.Client,
) -> None:
    ticks: list[float] = []

    async def run(pipe: TestPipeline) -> Any:
        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)

        ticker = asyncio.create_task(tick())
        pending = [{"identifier": "fs", "apiName": "delete"}]
        async with (
            pipe.oh.operation("lobe-agent") as op,
            op.step() as step,
            step.approval(pending) as approval,
        ):
            pass
        ticker.cancel()
        return approval

    hook = _hook("lobe-async", "beforeHumanIntervention", matcher=None)
    with pipeline(hooks=[hook]) as pipe:
        approval, _ = _answer_while(
            api, "lobe-async", lambda: asyncio.run(run(pipe)), {"decision": "deny"}, after_s=0.5
        )
    assert approval.action == "reject"
    assert len(ticks) > 3  # the loop ran on while the person decided


# -- the kernel's intercept points ---------------------------------------------------------------


def _kernel_app(tmp_path: Path, hook_id: str) -> list[Any]:
    app = {
        "name": "moderation",
        "capabilities": {"hooks": {"subscribes": [], "intercepts": ["message_sending"]}},
        "hooks": [
            {
                "id": hook_id,
                "type": "message_sending",
                "approval": {"timeout": 10, "default": "allow", "reason": "a person reads it"},
            }
        ],
    }
    path = tmp_path / "moderation.json"
    path.write_text(json.dumps(app))
    return list(load_config([path]).hooks)


def test_a_kernel_message_sending_approval_denied_is_a_message_not_sent(
    api: httpx.Client, tmp_path: Path
) -> None:
    delivered: list[str] = []

    def send(pipe: TestPipeline) -> str | None:
        with pipe.oh.operation("kernel-agent") as op:
            return op.send_message("slack", "#ops", "deploy done", deliver=delivered.append)

    with pipeline(hooks=_kernel_app(tmp_path, "kernel-ask")) as pipe:
        sent, item = _answer_while(
            api, "kernel-ask", lambda: send(pipe), {"decision": "deny", "by": "erin"}
        )
        (span,) = [s for s in pipe.spans() if _has_event(s, "otelhooks.reject")]
    # the kernel's shape: a blocked message_sending is no message (None), never delivered
    assert (sent, delivered) == (None, [])
    assert item["event"] == "message_sending"
    assert _event(span, "otelhooks.reject")["otelhooks.approval.answered_by"] == "erin"


def test_a_kernel_message_sending_approval_allowed_delivers_it(
    api: httpx.Client, tmp_path: Path
) -> None:
    delivered: list[str] = []

    def send(pipe: TestPipeline) -> str | None:
        with pipe.oh.operation("kernel-agent") as op:
            return op.send_message("slack", "#ops", "deploy done", deliver=delivered.append)

    with pipeline(hooks=_kernel_app(tmp_path, "kernel-allow")) as pipe:
        sent, _ = _answer_while(api, "kernel-allow", lambda: send(pipe), {"decision": "allow"})
    assert (sent, delivered) == ("deploy done", ["deploy done"])


def _has_event(span: ReadableSpan, name: str) -> bool:
    return any(e.name == name for e in span.events)


def test_the_instrumentations_span_sent_to_serve_is_the_one_record_of_its_approval(
    server: EventLogServer, api: httpx.Client, tmp_path: Path
) -> None:
    with pipeline(hooks=[_hook("ask-sent", "before_tool_call")]) as pipe:
        _, item = _answer_while(
            api, "ask-sent", lambda: _run_rm(pipe, []), {"decision": "deny", "by": "alice"}
        )
        spans = pipe.spans()
    # the process's spans reach serve over OTLP/HTTP (JSON, as the project's exporter writes it)
    lines = tmp_path / "spans.jsonl"
    OtlpJsonLinesSpanExporter(str(lines)).export(spans)
    for line in lines.read_text().splitlines():
        sent = api.post("/v1/traces", content=line, headers={"content-type": "application/json"})
        assert sent.status_code == 200
    assert approval_holder(server, item["trace_id"], item["id"]) == "execute_tool rm"
