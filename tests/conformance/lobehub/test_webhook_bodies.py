"""LobeHub webhook bodies, field for field against ``hooks.ts`` (fixture ``hooks_ts.json``).

A run that fires all 16 LobeHub hook types notifies a real HTTP server on 127.0.0.1 through one
webhook per type; every body is checked against the interface the fixture copies from LobeHub:
each field LobeHub defines has LobeHub's JSON type, each required field is there (except the
deviations below, written in docs/webhooks.md), and otelhooks' own fields are additions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelhooks import WebhookDeliverer
from otelhooks.testing import TestPipeline, pipeline
from tests._webhook_server import webhook_server

FIXTURE = json.loads((Path(__file__).parent / "hooks_ts.json").read_text())
HOOK_TYPES: dict[str, str] = FIXTURE["hook_types"]
INTERFACES: dict[str, dict[str, dict[str, Any]]] = FIXTURE["interfaces"]

# Required fields otelhooks leaves out, each with its reason in docs/webhooks.md.
# Content is sent only with content capture on (or named in eventFields).
CONTENT_OPT_IN = {"args", "content", "summary", "instruction"}


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def fail_(message: str) -> Any:
    raise RuntimeError(message)


def run_every_hook_type(pipe: TestPipeline) -> None:
    """One run through the 16 LobeHub hook points, with a user and a session; it fails."""
    with pytest.raises(RuntimeError, match="the run failed"):
        _run(pipe)


def _run(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("planner", user_id="u-1", session_id="conv-1") as op:
        with op.step() as step:
            with step.llm("gpt-4o", provider="openai") as call:
                call.record("reading", input_tokens=12, output_tokens=3)
            step.run_tool("fs", "readFile", {"path": "a.txt"}, lambda path: "hello")
            step.run_tool("fs", "explode", {}, lambda: fail_("disk on fire"))
        with op.step() as step:
            step.run_tool("fs", "readFile", {"path": "b.txt"}, lambda path: "again")
            with step.approval([{"identifier": "fs", "apiName": "rm"}]) as approval:
                approval.approve("call_1")
            with step.compact(message_count=40, token_count=9000) as compaction:
                compaction.done(messages_after=4, tokens_after=800, summary="short")
            with pytest.raises(RuntimeError), step.compact(message_count=40, token_count=9000):
                fail_("summariser down")
            with step.call_agent("researcher", "find sources") as sub, sub.operation():
                pass
            with pytest.raises(RuntimeError), step.call_agent("writer", "draft"):
                fail_("writer unavailable")
        with op.step() as step, step.approval([{"identifier": "fs", "apiName": "rm"}]) as ask:
            ask.reject("too risky", tool_call_id="call_2", stop=False)
            ask.reject("no", tool_call_id="call_3")
        fail_("the run failed")


@pytest.fixture(scope="module", params=[True, False], ids=["capture", "no-capture"])
def bodies(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, list[Any]]]:
    """The bodies of one run, per hook type (one run per module and capture setting)."""
    outbox = tmp_path_factory.mktemp("outbox") / "outbox.db"
    with pipeline() as pipe, webhook_server() as server:
        deliverer = WebhookDeliverer(
            metrics=pipe.oh.metrics, retry_deadline_s=3.0, outbox_path=outbox
        )
        deliverer.builder.capture_content = request.param
        pipe.oh.engine.deliverer = deliverer
        try:
            pipe.register(
                *({"id": t, "type": t, "webhook": {"url": f"{server.url}/{t}"}} for t in HOOK_TYPES)
            )
            run_every_hook_type(pipe)
            pipe.flush()
            assert deliverer.flush(10)
            yield {t: [r.json() for r in server.requests(f"/{t}")] for t in HOOK_TYPES}
        finally:
            deliverer.shutdown(5)


def test_every_hook_type_was_delivered(bodies: dict[str, list[Any]]) -> None:
    assert sorted(t for t, got in bodies.items() if not got) == []


@pytest.mark.parametrize("hook_type", sorted(HOOK_TYPES))
def test_fields_lobehub_defines_have_lobehub_types(
    bodies: dict[str, list[Any]], hook_type: str
) -> None:
    interface = INTERFACES[HOOK_TYPES[hook_type]]
    for body in bodies[hook_type]:
        wrong = {
            name: (spec["type"], json_type(body[name]))
            for name, spec in interface.items()
            if name in body and spec["type"] != "any" and json_type(body[name]) != spec["type"]
        }
        assert wrong == {}, f"{hook_type}: field (LobeHub type, sent type)"


@pytest.mark.parametrize("hook_type", sorted(HOOK_TYPES))
def test_required_fields_are_sent_but_the_documented_deviations(
    bodies: dict[str, list[Any]], hook_type: str, request: pytest.FixtureRequest
) -> None:
    capture = "no-capture" not in request.node.callspec.id
    interface = INTERFACES[HOOK_TYPES[hook_type]]
    allowed = set(CONTENT_OPT_IN) if not capture else set()
    for body in bodies[hook_type]:
        missing = {n for n, spec in interface.items() if spec["required"] and n not in body}
        assert missing <= allowed, f"{hook_type} lacks {sorted(missing - allowed)}"


def test_after_step_counts_tool_calls_and_lists_them_under_lobehub_names(
    bodies: dict[str, list[Any]],
) -> None:
    # the first step's body, by its index: deliveries (and outbox retries) may arrive in any order
    first = min(bodies["afterStep"], key=lambda body: body["stepIndex"])
    assert first["toolCalls"] == 2
    assert [c["apiName"] for c in first["toolsCalling"]] == ["readFile", "explode"]
    assert [r["success"] for r in first["toolsResult"]] == [True, False]
    assert "toolResults" not in first
    assert first["totalInputTokens"] == 12
    assert first["totalOutputTokens"] == 3
    assert first["totalToolCalls"] == 2


def test_on_complete_carries_status_steps_llm_calls_and_total_tokens(
    bodies: dict[str, list[Any]],
) -> None:
    by_agent = {b["agentId"]: b for b in bodies["onComplete"]}
    planner = by_agent["planner"]
    assert (planner["reason"], planner["status"]) == ("error", "error")
    assert planner["steps"] == 3
    assert planner["llmCalls"] == 1
    assert planner["toolCalls"] == 3
    assert planner["totalTokens"] == 15
    assert by_agent["researcher"]["status"] == "done"


def test_call_index_counts_the_tools_earlier_calls_in_the_operation_from_one(
    bodies: dict[str, list[Any]],
) -> None:
    # toolPreparation.ts: each tool (identifier/apiName) counts its own calls from 1
    rule = FIXTURE["rules"]["callIndex"]
    assert rule["source"].endswith("toolPreparation.ts")
    calls = {(b["identifier"], b["apiName"], b["callIndex"]) for b in bodies["beforeToolCall"]}
    assert calls == {("fs", "readFile", 1), ("fs", "readFile", 2), ("fs", "explode", 1)}


def test_every_runtime_that_sends_call_index_is_checked_against_the_rule() -> None:
    # the in-process bodies (above), the coding-agent bridge (command and serve) and the fleet
    root = Path(__file__).parents[3]
    for checked in FIXTURE["rules"]["callIndex"]["checked_by"]:
        assert "toolPreparation.ts" in (root / checked).read_text(), checked


def test_tool_events_name_their_assistant_message_and_executor(
    bodies: dict[str, list[Any]],
) -> None:
    for hook_type in ("beforeToolCall", "afterToolCall", "onToolCallError"):
        for body in bodies[hook_type]:
            assert body["assistantMessageId"].startswith("msg_")
            assert (
                body["executor"] in INTERFACES["BeforeToolCallObservationEvent"]["executor"]["enum"]
            )
    # the two calls of the first step belong to one assistant message
    first = {b["assistantMessageId"] for b in bodies["beforeToolCall"] if b["stepIndex"] == 0}
    assert len(first) == 1


def test_on_error_detail_is_a_string(bodies: dict[str, list[Any]]) -> None:
    (body,) = bodies["onError"]
    assert body["errorMessage"] == "the run failed"
    assert body["errorType"] == "RuntimeError"
    assert isinstance(body["errorDetail"], str)
    assert "the run failed" in body["errorDetail"]
