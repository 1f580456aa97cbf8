"""The event registry: every dialect's names resolve, intercept points, errors, payload field names
and the GenAI semantic-convention constants."""

from __future__ import annotations

from typing import Any, cast

import pytest
from conftest import Recorder, hook
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes
from pydantic import BaseModel

from otelhooks import (
    EVENTS,
    AfterToolCallEvent,
    CompleteEvent,
    ConfigError,
    Dialect,
    ErrorEvent,
    HookEvent,
    ToolCallEvent,
    UnknownEventError,
    all_event_names,
    resolve_event,
)
from otelhooks import semconv as sc
from otelhooks.events import (
    AfterCallAgentEvent,
    AfterCompactEvent,
    AfterHumanInterventionEvent,
    AfterStepEvent,
    BeforeAgentStartEvent,
    BeforeCallAgentEvent,
    BeforeCompactEvent,
    BeforeHumanInterventionEvent,
    CallAgentErrorEvent,
    CompactErrorEvent,
    GenericEvent,
    LlmOutputEvent,
    MessageReceivedEvent,
    MessageSendingEvent,
    PendingTool,
    StepEvent,
    StopByHumanInterventionEvent,
    ToolCallErrorEvent,
    ToolResultPersistEvent,
)
from otelhooks.testing import TestPipeline

LOBEHUB: dict[str, str] = {
    "beforeStep": "before_step",
    "afterStep": "after_step",
    "onComplete": "on_complete",
    "onError": "on_error",
    "beforeToolCall": "before_tool_call",
    "afterToolCall": "after_tool_call",
    "onToolCallError": "on_tool_call_error",
    "beforeHumanIntervention": "before_human_intervention",
    "afterHumanIntervention": "after_human_intervention",
    "onStopByHumanIntervention": "on_stop_by_human_intervention",
    "beforeCompact": "before_compact",
    "afterCompact": "after_compact",
    "onCompactError": "on_compact_error",
    "beforeCallAgent": "before_call_agent",
    "afterCallAgent": "after_call_agent",
    "onCallAgentError": "on_call_agent_error",
}

KERNEL: dict[str, str] = {
    "before_agent_start": "before_agent_start",
    "llm_input": "llm_input",
    "llm_output": "llm_output",
    "agent_end": "on_complete",
    "before_compaction": "before_compact",
    "after_compaction": "after_compact",
    "before_reset": "before_reset",
    "message_received": "message_received",
    "message_sending": "message_sending",
    "message_sent": "message_sent",
    "before_tool_call": "before_tool_call",
    "after_tool_call": "after_tool_call",
    "tool_result_persist": "tool_result_persist",
    "session_start": "session_start",
    "session_end": "session_end",
    "gateway_start": "gateway_start",
    "gateway_stop": "gateway_stop",
}

AGENT_OS: dict[str, str] = {
    "after_tool_result": "after_tool_call",
    "after_turn": "after_step",
    "after_loop": "on_complete",
    "on_terminate": "on_stop_by_human_intervention",
    "on_error": "on_error",
    "on_budget_threshold": "on_budget_threshold",
}

WORKSPACE: dict[str, str] = {
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "Stop": "on_complete",
    "StopFailure": "on_error",
    "UserPromptSubmit": "before_agent_start",
    "UserPromptExpansion": "user_prompt_expansion",
    "InstructionsLoaded": "instructions_loaded",
    "CwdChanged": "cwd_changed",
    "PreToolUse": "before_tool_call",
    "PostToolUse": "after_tool_call",
    "PostToolUseFailure": "on_tool_call_error",
    "PostToolBatch": "after_tool_batch",
    "PermissionDenied": "on_tool_call_denied",
    "Notification": "notification",
    "SubagentStart": "before_call_agent",
    "SubagentStop": "after_call_agent",
    "TeammateIdle": "teammate_idle",
    "TaskCreated": "task_created",
    "TaskCompleted": "task_completed",
    "PreCompact": "before_compact",
    "PostCompact": "after_compact",
    "WorktreeRemove": "worktree_remove",
    "Elicitation": "elicitation",
    "ElicitationResult": "elicitation_result",
    # Claude Code's additions to the workspace seed's list
    "Setup": "setup",
    "PermissionRequest": "before_human_intervention",
    "MessageDisplay": "message_sent",
    "ConfigChange": "config_change",
    "DirectoryAdded": "directory_added",
    "FileChanged": "file_changed",
    "WorktreeCreate": "worktree_create",
}

KERNEL_INTERCEPTS = {
    "before_agent_start",
    "message_sending",
    "before_tool_call",
    "tool_result_persist",
}


def _cases(table: dict[str, str]) -> list[Any]:
    return [pytest.param(name, canonical, id=name) for name, canonical in table.items()]


# -- resolution --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "canonical"), _cases(LOBEHUB))
def test_lobehub_hook_type_resolves(name: str, canonical: str) -> None:
    spec, dialect = resolve_event(name)
    assert (spec.name, dialect) == (canonical, Dialect.LOBEHUB)


def test_lobehub_has_the_sixteen_hook_types() -> None:
    assert len(LOBEHUB) == 16
    lobehub_aliases = {a for s in EVENTS.values() for a in s.aliases.get(Dialect.LOBEHUB, ())}
    assert set(LOBEHUB) <= lobehub_aliases


@pytest.mark.parametrize(("name", "canonical"), _cases(KERNEL))
def test_kernel_event_resolves(name: str, canonical: str) -> None:
    spec, dialect = resolve_event(name)
    assert spec.name == canonical
    # A kernel name that is also the canonical name resolves as canonical.
    assert dialect in (Dialect.KERNEL, Dialect.OTELHOOKS)


@pytest.mark.parametrize(("name", "canonical"), _cases(AGENT_OS))
def test_agent_os_on_point_resolves(name: str, canonical: str) -> None:
    spec, dialect = resolve_event(name)
    assert spec.name == canonical
    assert dialect in (Dialect.AGENT_OS, Dialect.OTELHOOKS)


@pytest.mark.parametrize(("name", "canonical"), _cases(WORKSPACE))
def test_workspace_and_claude_event_resolves(name: str, canonical: str) -> None:
    spec, dialect = resolve_event(name)
    assert (spec.name, dialect) == (canonical, Dialect.WORKSPACE)


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_canonical_name_resolves_to_itself(name: str) -> None:
    spec, dialect = resolve_event(name)
    assert (spec.name, dialect) == (name, Dialect.OTELHOOKS)


def test_all_event_names_covers_every_dialect_name() -> None:
    names = set(all_event_names())
    for table in (LOBEHUB, KERNEL, AGENT_OS, WORKSPACE):
        assert set(table) <= names
    assert set(EVENTS) <= names


@pytest.mark.parametrize(
    "name", sorted(n for n, s in EVENTS.items() if s.payload is not GenericEvent)
)
def test_payload_event_field_defaults_to_the_canonical_name(name: str) -> None:
    field = EVENTS[name].payload.model_fields["event"]
    assert field.default == name


# -- intercept points ------------------------------------------------------------------------


def test_kernel_intercept_points_are_exactly_the_four() -> None:
    intercepting = {name for name in KERNEL if resolve_event(name)[0].intercept}
    assert intercepting == KERNEL_INTERCEPTS


def test_canonical_intercept_events_are_the_kernel_four_and_the_human_approval() -> None:
    # before_human_intervention waits for a decision (LobeHub's approval point, Claude Code's
    # PermissionRequest): an approval hook there answers it (issue #29)
    intercepting = {name for name, spec in EVENTS.items() if spec.intercept}
    assert intercepting == KERNEL_INTERCEPTS | {"before_human_intervention"}


def test_lobehub_tool_events_are_the_only_lobehub_matcher_events() -> None:
    tool = {name for name, canonical in LOBEHUB.items() if EVENTS[canonical].tool_event}
    assert tool == {"beforeToolCall", "afterToolCall", "onToolCallError"}


# -- unknown names -----------------------------------------------------------------------------


def test_unknown_event_raises_unknown_event_error() -> None:
    with pytest.raises(UnknownEventError) as info:
        resolve_event("beforeToolcall")
    assert isinstance(info.value, ConfigError)


def test_unknown_event_suggests_the_closest_name() -> None:
    with pytest.raises(UnknownEventError) as info:
        resolve_event("beforeToolcall")
    assert info.value.suggestion == "beforeToolCall"
    assert "Did you mean 'beforeToolCall'?" in str(info.value)


def test_unknown_event_message_lists_the_valid_names() -> None:
    with pytest.raises(UnknownEventError) as info:
        resolve_event("nonsense_event_xyz")
    message = str(info.value)
    for name in ("beforeToolCall", "PreToolUse", "agent_end", "after_tool_result", "on_complete"):
        assert name in message
    assert set(info.value.valid) == set(all_event_names())


def test_unknown_event_error_names_the_type_field() -> None:
    with pytest.raises(UnknownEventError) as info:
        resolve_event("preToolUse_")
    assert info.value.field == "type"


# -- payload field names (the seeds' exact spelling) ---------------------------------------------

_TOOL: dict[str, Any] = {
    "operationId": "op_1",
    "toolCallId": "call_1",
    "identifier": "fs",
    "apiName": "readFile",
    "args": {"path": "a.txt"},
    "callIndex": 2,
    "stepIndex": 1,
}

PAYLOADS: list[Any] = [
    pytest.param(
        ToolCallEvent(**_TOOL, sessionKey="s"),
        {
            "toolCallId",
            "identifier",
            "apiName",
            "args",
            "callIndex",
            "stepIndex",
            "operationId",
            "assistantMessageId",
            "executor",
            # the kernel's names for the same facts
            "toolName",
            "toolInput",
            "sessionKey",
            "runId",
        },
        id="beforeToolCall",
    ),
    pytest.param(
        AfterToolCallEvent(**_TOOL, content="x", mocked=True, executionTimeMs=3.0),
        {
            "identifier",
            "apiName",
            "args",
            "callIndex",
            "content",
            "success",
            "mocked",
            "executionTimeMs",
            "stepIndex",
            "result",
            "toolName",
            "toolInput",
            "toolOutput",
            "duration",
        },
        id="afterToolCall",
    ),
    pytest.param(
        ToolCallErrorEvent(**_TOOL, error="boom"),
        {"identifier", "apiName", "args", "callIndex", "error", "stepIndex"},
        id="onToolCallError",
    ),
    pytest.param(
        BeforeHumanInterventionEvent(
            operationId="op_1",
            stepIndex=0,
            pendingTools=[PendingTool(identifier="fs", apiName="rm")],
        ),
        {"operationId", "stepIndex", "pendingTools"},
        id="beforeHumanIntervention",
    ),
    pytest.param(
        AfterHumanInterventionEvent(
            operationId="op_1", action="reject", toolCallId="c", rejectionReason="no"
        ),
        {"operationId", "action", "toolCallId", "rejectionReason"},
        id="afterHumanIntervention",
    ),
    pytest.param(
        StopByHumanInterventionEvent(operationId="op_1", toolCallId="c", rejectionReason="no"),
        {"operationId", "toolCallId", "rejectionReason"},
        id="onStopByHumanIntervention",
    ),
    pytest.param(
        BeforeCompactEvent(operationId="op_1", stepIndex=0, messageCount=10, tokenCount=900),
        {"operationId", "stepIndex", "messageCount", "tokenCount", "sessionKey"},
        id="beforeCompact",
    ),
    pytest.param(
        AfterCompactEvent(
            operationId="op_1", groupId="g", messagesBefore=10, messagesAfter=2, summary="s"
        ),
        {
            "operationId",
            "stepIndex",
            "groupId",
            "messagesBefore",
            "messagesAfter",
            "summary",
            # kernel after_compaction
            "originalCount",
            "compactedCount",
            "tokensSaved",
        },
        id="afterCompact",
    ),
    pytest.param(
        CompactErrorEvent(operationId="op_1", tokenCount=5, error="x"),
        {"operationId", "stepIndex", "tokenCount", "error"},
        id="onCompactError",
    ),
    pytest.param(
        BeforeCallAgentEvent(operationId="op_1", agentId="sub", instruction="go"),
        {"operationId", "agentId", "instruction"},
        id="beforeCallAgent",
    ),
    pytest.param(
        AfterCallAgentEvent(operationId="op_1", agentId="sub", subOperationId="op_2", threadId="t"),
        {"operationId", "agentId", "subOperationId", "threadId", "success"},
        id="afterCallAgent",
    ),
    pytest.param(
        CallAgentErrorEvent(operationId="op_1", agentId="sub", error="x"),
        {"operationId", "agentId", "error"},
        id="onCallAgentError",
    ),
    pytest.param(
        StepEvent(operationId="op_1", stepIndex=0),
        {"operationId", "stepIndex"},
        id="beforeStep",
    ),
    pytest.param(
        AfterStepEvent(operationId="op_1", stepIndex=0),
        {
            "operationId",
            "stepIndex",
            "content",
            "toolCalls",
            "toolsCalling",
            "toolsResult",
            "usage",
        },
        id="afterStep",
    ),
    pytest.param(
        CompleteEvent(operationId="op_1", reason="max_steps"),
        {"operationId", "reason", "status", "runId", "success", "error", "duration", "tokenUsage"},
        id="onComplete",
    ),
    pytest.param(
        ErrorEvent(operationId="op_1", errorMessage="x"),
        {"operationId", "errorMessage", "errorDetail"},
        id="onError",
    ),
    pytest.param(
        BeforeAgentStartEvent(sessionKey="s", agentId="a", input="hi"),
        {"sessionKey", "agentId", "input", "metadata", "userMessage", "fullPrompt"},
        id="before_agent_start",
    ),
    pytest.param(
        LlmOutputEvent(sessionKey="s", agentId="a", response="r"),
        {"sessionKey", "agentId", "response", "tokenUsage"},
        id="llm_output",
    ),
    pytest.param(
        MessageSendingEvent(channelId="c", target="t", content="x"),
        {"channelId", "target", "content", "metadata"},
        id="message_sending",
    ),
    pytest.param(
        MessageReceivedEvent.model_validate({"content": "x", "from": "bob"}),
        {"content", "channelId", "from", "metadata"},
        id="message_received",
    ),
    pytest.param(
        ToolResultPersistEvent(toolName="readFile", result={"content": "x"}, sessionKey="s"),
        {"toolName", "result", "sessionKey"},
        id="tool_result_persist",
    ),
]


_FIELDS_BY_EVENT: dict[str, set[str]] = {
    cast(HookEvent, p.values[0]).event: cast(set[str], p.values[1]) for p in PAYLOADS
}


@pytest.mark.parametrize(("payload", "fields"), PAYLOADS)
def test_payload_dumps_the_seed_field_names(payload: BaseModel, fields: set[str]) -> None:
    dumped = payload.model_dump(by_alias=True)
    assert fields <= set(dumped), sorted(fields - set(dumped))


@pytest.mark.parametrize(("payload", "fields"), PAYLOADS)
def test_payload_dump_has_the_event_discriminator_and_id(
    payload: BaseModel, fields: set[str]
) -> None:
    dumped = payload.model_dump(mode="json", by_alias=True)
    assert dumped["event"] in EVENTS
    assert dumped["eventId"]


def test_kernel_tool_names_mirror_lobehub_names() -> None:
    event = ToolCallEvent(**_TOOL)
    assert event.toolName == "readFile"
    assert event.toolInput == {"path": "a.txt"}
    assert event.runId == "op_1"


def test_message_received_from_field_dumps_under_its_seed_name() -> None:
    dumped = MessageReceivedEvent.model_validate({"content": "x", "from": "bob"}).model_dump(
        by_alias=True
    )
    assert dumped["from"] == "bob"
    assert "from_" not in dumped


def test_after_compact_mirrors_kernel_counts() -> None:
    event = AfterCompactEvent(groupId="g", messagesBefore=10, messagesAfter=2)
    assert (event.originalCount, event.compactedCount) == (10, 2)


def test_lobehub_events_reach_handlers_with_seed_field_names(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    """Run one operation that fires every LobeHub hook type and check the delivered payloads."""
    pipe.register(*(hook(name, name, recorder) for name in LOBEHUB))
    with pipe.tracer.operation("root", session_id="s1") as op, op.step() as step:
        step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "ok")
        step.run_tool("fs", "bad", {}, lambda: 1 / 0)
        with step.compact(message_count=10, token_count=1000) as compaction:
            compaction.done(messages_after=2, tokens_after=100, summary="sum")
        with pytest.raises(RuntimeError), step.compact(message_count=1, token_count=1):
            raise RuntimeError("compaction failed")
        with step.call_agent("sub", "go") as call, call.operation():
            pass
        with step.call_agent("broken", "go") as call:
            try:
                with call.operation():
                    raise ValueError("child failed")
            except ValueError:
                pass
        with step.approval([{"identifier": "fs", "apiName": "rm"}]) as approval:
            approval.reject("no", tool_call_id="call_x")
    with pytest.raises(KeyError), pipe.tracer.operation("failing"):
        raise KeyError("k")
    pipe.flush()

    assert set(recorder.names()) == set(LOBEHUB.values())
    for event in recorder.events:
        fields = _FIELDS_BY_EVENT.get(event.event)
        if fields is not None:
            dumped = event.model_dump(by_alias=True)
            assert fields <= set(dumped), (event.event, sorted(fields - set(dumped)))


# -- semantic conventions ----------------------------------------------------------------------


def _gen_ai_constants() -> dict[str, str]:
    return {k: v for k, v in vars(sc).items() if k.startswith("GEN_AI_") and isinstance(v, str)}


def test_gen_ai_attribute_constants_equal_the_semconv_package() -> None:
    ours = _gen_ai_constants()
    shared = {k for k in ours if hasattr(gen_ai_attributes, k)}
    assert len(shared) >= 15  # the cross-check is not vacuous
    mismatched = {k: (ours[k], getattr(gen_ai_attributes, k)) for k in shared}
    assert {k: v for k, v in mismatched.items() if v[0] != v[1]} == {}


# Names newer than the installed semconv package, each with where it comes from.
NEWER_THAN_THE_PACKAGE = {
    "GEN_AI_CONVERSATION_COMPACTED": "model/gen-ai/spans.yaml at 004902b",
    "GEN_AI_SECURITY_GUARDRAIL_NAME": "pull request 427 (experimental)",
    "GEN_AI_SECURITY_POLICY_RULE_ID": "pull request 427 (experimental)",
    "GEN_AI_SECURITY_VERDICT_TYPE": "pull request 427 (experimental)",
    "GEN_AI_SECURITY_ACTION_TYPE": "pull request 427 (experimental)",
}


def test_every_gen_ai_attribute_constant_exists_in_the_semconv_package() -> None:
    missing = sorted(k for k in _gen_ai_constants() if not hasattr(gen_ai_attributes, k))
    assert missing == sorted(NEWER_THAN_THE_PACKAGE)


def test_error_type_equals_the_semconv_package() -> None:
    assert sc.ERROR_TYPE == error_attributes.ERROR_TYPE


def test_gen_ai_metric_names_equal_the_semconv_package() -> None:
    assert sc.METRIC_TOKEN_USAGE == gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE
    assert sc.METRIC_OPERATION_DURATION == gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION


def test_gen_ai_operation_names_equal_the_semconv_package() -> None:
    values = gen_ai_attributes.GenAiOperationNameValues
    assert values.INVOKE_AGENT.value == sc.OP_INVOKE_AGENT
    assert values.CHAT.value == sc.OP_CHAT
    assert values.EXECUTE_TOOL.value == sc.OP_EXECUTE_TOOL


def test_otelhooks_attributes_live_under_one_namespace() -> None:
    # the conventions' own namespaces (GenAI, MCP, RPC, network, error) and the one of names a
    # coding agent gives itself (Claude Code's): every other name is ours, under otelhooks.
    theirs = ("gen_ai.", "mcp.", "jsonrpc.", "rpc.", "network.", "client.", "error.")
    ours = {
        k: v
        for k, v in vars(sc).items()
        if k.isupper()
        and isinstance(v, str)
        and "." in v
        and not k.startswith(("GEN_AI_", "ENV_"))
        and not v.startswith(theirs)
        and k not in ("SCHEMA_URL", "CLAUDE_CODE_EVENT_PREFIX", "EVENT_SECURITY_FINDING")
        and not k.startswith("CLAUDE_CODE_")
    }
    assert ours
    assert {k: v for k, v in ours.items() if not v.startswith("otelhooks.")} == {}
    # and no name of ours hides among theirs
    assert not [
        v
        for v in vars(sc).values()
        if isinstance(v, str) and v.startswith(theirs) and "otelhooks" in v
    ]


def test_event_ids_are_random_uuid4_hex_and_unique() -> None:
    import uuid

    from otelhooks import HookEvent

    ids = [HookEvent(event="gateway_start").eventId for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for event_id in ids:
        parsed = uuid.UUID(hex=event_id)
        assert parsed.hex == event_id  # 32 lowercase hex digits, as uuid4().hex
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
