"""The ``approval:`` action and the inbox over real HTTP: a call waits for a person's answer."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import ConfigError, EventLogServer, serve
from otelhooks.testing import TestPipeline, pipeline
from tests._realparts import reserved_port
from tests.web.conftest import AUTH, TOKEN

HOOK_ID = "ask-a-person"


def _approval_hook(**approval: Any) -> dict[str, Any]:
    return {
        "id": HOOK_ID,
        "type": "before_tool_call",
        "matcher": "rm",
        "approval": {"timeout": 10, "default": "deny", "reason": "rm needs a person", **approval},
    }


def _pending(client: httpx.Client, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # the inbox is the process's: only this module's hook counts
        pending: list[dict[str, Any]] = [
            a for a in client.get("/v1/approvals").json()["pending"] if a["hook_id"] == HOOK_ID
        ]
        if len(pending) >= count:
            return pending
        time.sleep(0.02)
    raise AssertionError("no approval became pending")


def _run_rm(pipe: TestPipeline, ran: list[dict[str, Any]]) -> Any:
    with pipe.oh.operation("careful-bot") as op, op.step() as step:
        return step.run_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw) or "ok")


def test_a_sync_tool_call_waits_for_a_deny_given_through_the_api(api: httpx.Client) -> None:
    ran: list[dict[str, Any]] = []
    with pipeline(hooks=[_approval_hook()]) as pipe:
        worker = threading.Thread(target=_run_rm, args=(pipe, ran))
        worker.start()
        (item,) = _pending(api)
        assert (item["tool"], item["hook_id"], item["default"]) == ("fs/rm", "ask-a-person", "deny")
        assert "args" not in item  # content capture is off on this server
        answer = api.post(
            f"/v1/approvals/{item['id']}",
            json={"decision": "deny", "reason": "not on prod", "by": "alice"},
        )
        assert answer.status_code == 200
        worker.join(10)
        span = pipe.spans("execute_tool rm")[0]
    assert ran == []
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decided_by"] == "ask-a-person"
    assert "not on prod" in str(span.attributes["otelhooks.hook.decision_reason"])
    assert "alice" in str(span.attributes["otelhooks.hook.decision_reason"])


def test_an_allow_lets_the_call_run(api: httpx.Client) -> None:
    ran: list[dict[str, Any]] = []
    with pipeline(hooks=[_approval_hook()]) as pipe:
        worker = threading.Thread(target=_run_rm, args=(pipe, ran))
        worker.start()
        (item,) = _pending(api)
        api.post(f"/v1/approvals/{item['id']}", json={"decision": "allow"})
        worker.join(10)
    assert ran == [{"path": "/data"}]


def test_an_unanswered_approval_gets_its_default(api: httpx.Client) -> None:
    ran: list[dict[str, Any]] = []
    with pipeline(hooks=[_approval_hook(timeout=0.3, default="allow")]) as pipe:
        _run_rm(pipe, ran)
    assert ran == [{"path": "/data"}]
    with pipeline(hooks=[_approval_hook(timeout=0.3, default="deny")]) as pipe:
        _run_rm(pipe, ran)
        reason = pipe.spans("execute_tool rm")[0].attributes["otelhooks.hook.decision_reason"]  # type: ignore[index]
    assert len(ran) == 1
    assert "no answer within 0.3s" in str(reason)
    answered = api.get("/v1/approvals").json()["answered"]
    assert [a["answered_by"] for a in answered[:2]] == ["timeout", "timeout"]


def test_a_second_answer_is_refused(api: httpx.Client) -> None:
    with pipeline(hooks=[_approval_hook()]) as pipe:
        worker = threading.Thread(target=_run_rm, args=(pipe, []))
        worker.start()
        (item,) = _pending(api)
        first = api.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})
        second = api.post(f"/v1/approvals/{item['id']}", json={"decision": "allow"})
        worker.join(10)
    assert (first.status_code, second.status_code) == (200, 409)


def test_an_answer_is_a_span_event_and_an_event_log_record(api: httpx.Client) -> None:
    with pipeline(hooks=[_approval_hook()]) as pipe:
        worker = threading.Thread(target=_run_rm, args=(pipe, []))
        worker.start()
        (item,) = _pending(api)
        api.post(
            f"/v1/approvals/{item['id']}", json={"decision": "deny", "reason": "risky", "by": "bob"}
        )
        worker.join(10)
    records = api.get("/v1/events", params={"mode": "drain"}).json()["events"]
    record = next(r for r in records if r["kind"] == "approval")
    assert (record["tool"], record["success"], record["detail"]) == (
        "fs/rm",
        False,
        "rejected by bob: risky",
    )
    trace = api.get(f"/v1/ui/traces/{item['trace_id']}").json()
    approval = next(s for s in trace["spans"] if s["n"] == "request_human_approve fs/rm")
    assert approval["p"] == item["span_id"]
    (event,) = approval["e"]
    assert event["n"] == "otelhooks.reject"
    assert event["a"]["otelhooks.approval.answered_by"] == "bob"
    assert approval["d"]["kind"] == "asked"


@pytest.fixture
def capturing_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    started = serve(token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


def test_an_async_call_in_another_process_gets_the_edited_arguments(
    capturing_server: EventLogServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Remote: the action asks the serve at `url` (as a process other than serve does).
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", TOKEN)
    ran: list[dict[str, Any]] = []

    async def run(pipe: TestPipeline) -> None:
        async with pipe.oh.operation("careful-bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    with (
        httpx.Client(base_url=capturing_server.url, headers=AUTH) as client,
        pipeline(hooks=[_approval_hook(url=capturing_server.url)]) as pipe,
    ):
        worker = threading.Thread(target=asyncio.run, args=(run(pipe),))
        worker.start()
        (item,) = _pending(client)
        assert item["args"] == {"path": "/data"}
        assert item["editable"] is True
        client.post(
            f"/v1/approvals/{item['id']}", json={"decision": "allow", "args": {"path": "/data/tmp"}}
        )
        worker.join(10)
    assert ran == [{"path": "/data/tmp"}]


def test_a_serve_that_cannot_be_reached_blocks_the_call() -> None:
    ran: list[dict[str, Any]] = []
    with reserved_port() as dead_port:
        hook = _approval_hook(url=f"http://127.0.0.1:{dead_port}")
        with pipeline(hooks=[hook]) as pipe:
            _run_rm(pipe, ran)
            attrs = pipe.spans("execute_tool rm")[0].attributes
        assert ran == []
        assert attrs is not None
        assert attrs["otelhooks.hook.decision"] == "deny"


def test_an_agent_token_may_ask_but_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "agent-token-abc")
    server = serve(token=TOKEN)
    try:
        agent = {"Authorization": "Bearer agent-token-abc"}
        body = {"tool": "rm", "timeout_s": 5, "default": "deny", "args": {}}
        created = httpx.post(f"{server.url}/v1/approvals", json=body, headers=agent)
        assert created.status_code == 201
        answer = httpx.post(
            f"{server.url}/v1/approvals/{created.json()['id']}",
            json={"decision": "allow"},
            headers=agent,
        )
        assert answer.status_code == 403
        assert httpx.get(f"{server.url}/v1/approvals", headers=agent).status_code == 403
        httpx.post(
            f"{server.url}/v1/approvals/{created.json()['id']}",
            json={"decision": "deny"},
            headers=AUTH,
        )
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("approval", "field"),
    [
        ({"timeout": 10}, "approval.default"),
        ({"timeout": 0, "default": "deny"}, "approval.timeout"),
        ({"timeout": 5, "default": "maybe"}, "approval.default"),
    ],
)
def test_an_invalid_approval_is_a_config_error(approval: dict[str, Any], field: str) -> None:
    from otelhooks._actions import build_hook

    with pytest.raises(ConfigError) as info:
        build_hook({"id": "a", "type": "before_tool_call", "approval": approval})
    assert info.value.field == field


def test_an_approval_on_an_event_that_cannot_wait_is_a_config_error() -> None:
    from otelhooks._actions import build_hook

    with pytest.raises(ConfigError, match="approval hooks hold a call"):
        build_hook(
            {"id": "a", "type": "after_tool_call", "approval": {"timeout": 5, "default": "deny"}}
        )


def test_claude_code_install_waits_longer_than_the_longest_approval(tmp_path: Path) -> None:
    from otelhooks.integrations.claude_code import install

    hooks = tmp_path / ".claude" / "otelhooks.yaml"
    hooks.parent.mkdir()
    hooks.write_text(
        "hooks:\n  - id: ask\n    type: PreToolUse\n    matcher: Bash\n"
        "    approval: {timeout: 120, default: deny}\n"
    )
    settings = tmp_path / ".claude" / "settings.json"
    install(settings, http="http://127.0.0.1:4318")
    data = json.loads(settings.read_text())
    pre = data["hooks"]["PreToolUse"][0]["hooks"][0]
    post = data["hooks"]["PostToolUse"][0]["hooks"][0]
    assert pre["timeout"] > 120
    assert post["timeout"] == 10


def test_an_async_call_in_serves_process_waits_without_a_thread(api: httpx.Client) -> None:
    ran: list[dict[str, Any]] = []

    async def run(pipe: TestPipeline) -> None:
        async with pipe.oh.operation("careful-bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    def hook_threads() -> set[int | None]:
        return {t.ident for t in threading.enumerate() if t.name.startswith("otelhooks-hook")}

    before = hook_threads()
    with pipeline(hooks=[_approval_hook()]) as pipe:
        worker = threading.Thread(target=asyncio.run, args=(run(pipe),))
        worker.start()
        (item,) = _pending(api)
        waiting = hook_threads() - before
        api.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})
        worker.join(10)
    assert ran == []
    assert waiting == set()  # awaited in the inbox: no pool thread holds the call


def test_an_approval_nobody_can_answer_says_so() -> None:
    from structlog.testing import capture_logs

    # no serve runs in this test: nothing lists the process's inbox
    with capture_logs() as logs, pipeline(hooks=[_approval_hook(timeout=0.2)]) as pipe:
        _run_rm(pipe, [])
    warning = next(line for line in logs if line["log_level"] == "warning")
    assert "no otelhooks serve in this process lists approvals" in warning["event"]
