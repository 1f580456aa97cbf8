"""Every span, attribute and metric name otelhooks writes, defined once.

The GenAI names follow the OpenTelemetry GenAI semantic conventions, which moved in 2026 to the
``open-telemetry/semantic-conventions-genai`` repository; ``opentelemetry-semantic-conventions``
still ships them but marks them as moved, so we keep our own constants (a test cross-checks them
against that package). Names the spec does not cover (approvals, compaction, hook decisions, the
event log) live under the single ``otelhooks.`` namespace.
"""

from __future__ import annotations

from typing import Final

# The schema of the semantic conventions otelhooks' names follow, on each instrumentation scope
# (the GenAI conventions have no release of their own: docs/semconv.md names the commits).
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.43.0"


def error_type(exc: BaseException) -> str:
    """``error.type`` of ``exc``: its canonical class name, module-qualified except for
    builtins, exactly as the SDK's ``exception.type`` beside it (``httpx.ReadTimeout``,
    ``TimeoutError``).

    Example:
        >>> error_type(TimeoutError()), error_type(KeyError())
        ('TimeoutError', 'KeyError')
    """
    kind = type(exc)
    module = kind.__module__
    return f"{module}.{kind.__qualname__}" if module and module != "builtins" else kind.__qualname__


# -- GenAI operation names (values of gen_ai.operation.name) --------------------------------------
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
# Not in the spec: otelhooks' own operations, named in the same style.
OP_STEP: Final = "step"
OP_HUMAN_APPROVAL: Final = "request_human_approve"
OP_COMPACT: Final = "compress_context"
OP_CALL_AGENT: Final = "call_agent"
OP_SEND_MESSAGE: Final = "send_message"
OP_LIFECYCLE: Final = "agent_lifecycle"

# -- GenAI attributes ----------------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_CONVERSATION_COMPACTED: Final = "gen_ai.conversation.compacted"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"

# Experimental: ``gen_ai.security.finding`` span events for hook decisions, after the GenAI
# conventions' open guardrail proposal (pull request 427 of semantic-conventions-genai, not
# merged; its names may change). Off unless this variable is ``true`` or ``1``.
ENV_EXPERIMENTAL_SECURITY_FINDINGS: Final = "OTELHOOKS_EXPERIMENTAL_SECURITY_FINDINGS"
EVENT_SECURITY_FINDING: Final = "gen_ai.security.finding"
GEN_AI_SECURITY_GUARDRAIL_NAME: Final = "gen_ai.security.guardrail.name"
GEN_AI_SECURITY_POLICY_RULE_ID: Final = "gen_ai.security.policy.rule.id"
GEN_AI_SECURITY_VERDICT_TYPE: Final = "gen_ai.security.verdict.type"
GEN_AI_SECURITY_ACTION_TYPE: Final = "gen_ai.security.action.type"

# The GenAI content-capture switch (the same variable the GenAI instrumentations read).
ENV_CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# -- otelhooks attributes ------------------------------------------------------------------------
OPERATION_ID: Final = "otelhooks.operation.id"
PARENT_OPERATION_ID: Final = "otelhooks.operation.parent_id"
SESSION_ID: Final = "otelhooks.session.id"
USER_ID: Final = "otelhooks.user.id"
COMPLETE_REASON: Final = "otelhooks.operation.complete_reason"
STEP_INDEX: Final = "otelhooks.step.index"
STEP_TOOL_CALLS: Final = "otelhooks.step.tool_calls"

TOOL_IDENTIFIER: Final = "otelhooks.tool.identifier"
TOOL_API_NAME: Final = "otelhooks.tool.api_name"
TOOL_CALL_INDEX: Final = "otelhooks.tool.call_index"
TOOL_MATCHER_VALUE: Final = "otelhooks.tool.matcher_value"
# a namespaced tool's namespace (OpenAI Agents' tool_namespace): gen_ai.tool.name is
# "{namespace}.{apiName}"; replay offers matchers the bare names too, as the live call did
TOOL_NAMESPACE: Final = "otelhooks.tool.namespace"
# the MCP gateway: the annotation kinds (@destructive ...) a call was matched by, for replay
TOOL_KINDS: Final = "otelhooks.tool.kinds"
TOOL_ARGS_FINGERPRINT: Final = "otelhooks.tool.args_fp"
TOOL_ARGS_SIZE: Final = "otelhooks.tool.args_size"
TOOL_RESULT_SIZE: Final = "otelhooks.tool.result_size"
TOOL_SUCCESS: Final = "otelhooks.tool.success"
TOOL_OUTCOME: Final = "otelhooks.tool.outcome"

HOOK_MATCHED: Final = "otelhooks.hook.matched"
HOOK_MOCKED: Final = "otelhooks.hook.mocked"
HOOK_MOCKED_BY: Final = "otelhooks.hook.mocked_by"
HOOK_DECISION: Final = "otelhooks.hook.decision"
HOOK_DECISION_REASON: Final = "otelhooks.hook.decision_reason"
HOOK_DECIDED_BY: Final = "otelhooks.hook.decided_by"
HOOK_CLASSIFICATION: Final = "otelhooks.hook.classification"
HOOK_REWRITTEN_BY: Final = "otelhooks.hook.rewritten_by"
HOOK_ERRORS: Final = "otelhooks.hook.errors"
# "hook-id: would-be decision" of each hook in mode: permissive (recorded, never enforced)
HOOK_PERMISSIVE: Final = "otelhooks.hook.permissive"
CLASSIFICATION_HOOK_DENIED: Final = "hook_denied"
# decided_by of a call otelhooks itself refused before any hook ran (see _live.refusal)
DECIDED_BY_OTELHOOKS: Final = "otelhooks"

# `otelhooks replay`: a recorded span annotated with what a policy decides now.
REPLAY_EVENT: Final = "otelhooks.replay"  # span event, one per replayed lifecycle event
REPLAY_LIFECYCLE_EVENT: Final = "otelhooks.replay.event"
REPLAY_DECISION: Final = "otelhooks.replay.decision"
REPLAY_DECIDED_BY: Final = "otelhooks.replay.decided_by"
REPLAY_REASON: Final = "otelhooks.replay.reason"
REPLAY_RECORDED_DECISION: Final = "otelhooks.replay.recorded_decision"
REPLAY_CHANGED: Final = "otelhooks.replay.changed"
REPLAY_CONTENT_RECORDED: Final = "otelhooks.replay.content_recorded"
REPLAY_DIFF: Final = "otelhooks.replay.diff"
REPLAY_ERRORS: Final = "otelhooks.replay.errors"
REPLAY_WOULD_CALL: Final = "otelhooks.replay.would_call"
REPLAY_POLICY: Final = "otelhooks.replay.policy"  # resource attribute: the policy files
# Resource attribute of every provider otelhooks makes: the span attribute value length limit
# its spans were recorded under (set only when one is), so replay knows which values it may cut.
ATTRIBUTE_VALUE_LENGTH_LIMIT: Final = "otelhooks.attribute_value_length_limit"

APPROVAL_ACTION: Final = "otelhooks.approval.action"
APPROVAL_TOOL_CALL_ID: Final = "otelhooks.approval.tool_call_id"
APPROVAL_REJECTION_REASON: Final = "otelhooks.approval.rejection_reason"
APPROVAL_PENDING_TOOLS: Final = "otelhooks.approval.pending_tools"
# On an answered approval's span event (otelhooks.approve / otelhooks.reject): who answered
# what, never the arguments themselves (args_edited says whether the answer changed them).
APPROVAL_ID: Final = "otelhooks.approval.id"
APPROVAL_HOOK_ID: Final = "otelhooks.approval.hook_id"
APPROVAL_TOOL: Final = "otelhooks.approval.tool"
APPROVAL_DECISION: Final = "otelhooks.approval.decision"
APPROVAL_ANSWERED_BY: Final = "otelhooks.approval.answered_by"
APPROVAL_ANSWERED_MS: Final = "otelhooks.approval.answered_ms"
APPROVAL_REASON: Final = "otelhooks.approval.reason"
APPROVAL_TIMED_OUT: Final = "otelhooks.approval.timed_out"
APPROVAL_ARGS_EDITED: Final = "otelhooks.approval.args_edited"
# the web view's stand-in span for an approval asked before its tool span was exported
APPROVAL_STAND_IN: Final = "otelhooks.approval.stand_in"

# The name of a guardrail an OpenAI Agents run met (the SDK's own guardrail, not a hook).
GUARDRAIL_NAME: Final = "otelhooks.guardrail.name"

# The MCP gateway's spans, by the GenAI conventions' MCP page (docs/gen-ai/mcp.md).
MCP_SESSION_SPAN_NAME: Final = "mcp.session"  # the root span of one MCP session
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_RESOURCE_URI: Final = "mcp.resource.uri"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
GEN_AI_PROMPT_NAME: Final = "gen_ai.prompt.name"
NETWORK_TRANSPORT: Final = "network.transport"
# the MCP client's side of an HTTP request, on the gateway's SERVER spans
NETWORK_PROTOCOL_NAME: Final = "network.protocol.name"
NETWORK_PROTOCOL_VERSION: Final = "network.protocol.version"
CLIENT_ADDRESS: Final = "client.address"
CLIENT_PORT: Final = "client.port"
# Not in the conventions: which server the gateway fronts (also the matcher's first part) and,
# on the session span only, the HTTP upstream behind it (on a SERVER span server.address would
# name the gateway itself, the server the client reached).
MCP_SERVER_NAME: Final = "otelhooks.mcp.server.name"
MCP_UPSTREAM_ADDRESS: Final = "otelhooks.mcp.upstream.address"
MCP_UPSTREAM_PORT: Final = "otelhooks.mcp.upstream.port"

# A coding agent's own tool span and the hook route's execute_tool span of the same call, joined:
# the CLI's span names the route's (one id), the route's names the CLI's (up to 8, 16 hex each).
HOOK_SPAN_ID: Final = "otelhooks.hook.span_id"
AGENT_SPAN_IDS: Final = "otelhooks.agent.span_ids"
# Claude Code's own names for what its hook input says of the turn, kept on the bridge's spans
# as Claude Code's telemetry names them.
CLAUDE_CODE_PROMPT_ID: Final = "claude_code.prompt_id"
CLAUDE_CODE_EFFORT_LEVEL: Final = "claude_code.effort.level"
# The folder of a tool call (the hook input's ``cwd``), kept with its arguments: replay judges a
# Claude ``if`` rule's relative paths where the call was made.
CLAUDE_CODE_CWD: Final = "claude_code.cwd"
# The folder the session started in (``$CLAUDE_PROJECT_DIR``), kept with it: a ``/src/**`` rule's.
CLAUDE_CODE_PROJECT_DIR: Final = "claude_code.project_dir"

COMPACT_MESSAGES_BEFORE: Final = "otelhooks.compact.messages_before"
COMPACT_MESSAGES_AFTER: Final = "otelhooks.compact.messages_after"
COMPACT_TOKENS_BEFORE: Final = "otelhooks.compact.tokens_before"
COMPACT_TOKENS_SAVED: Final = "otelhooks.compact.tokens_saved"
COMPACT_GROUP_ID: Final = "otelhooks.compact.group_id"

SUBAGENT_ID: Final = "otelhooks.subagent.agent_id"
SUBAGENT_OPERATION_ID: Final = "otelhooks.subagent.operation_id"
SUBAGENT_THREAD_ID: Final = "otelhooks.subagent.thread_id"
SUBAGENT_ISOLATED: Final = "otelhooks.subagent.isolated"
SUBAGENT_SUCCESS: Final = "otelhooks.subagent.success"

MESSAGE_CHANNEL: Final = "otelhooks.message.channel"
MESSAGE_TARGET: Final = "otelhooks.message.target"
MESSAGE_BLOCKED: Final = "otelhooks.message.blocked"
MESSAGE_SIZE: Final = "otelhooks.message.size"

# Cost (GenAI conventions have no cost attribute): priced with genai-prices, in US dollars.
LLM_COST_USD: Final = "otelhooks.llm.cost_usd"  # one model call
STEP_COST_USD: Final = "otelhooks.step.cost_usd"
OPERATION_COST_USD: Final = "otelhooks.operation.cost_usd"
SESSION_COST_USD: Final = "otelhooks.session.cost_usd"  # the session's total as the run ends
LLM_UNPRICED_CALLS: Final = "otelhooks.llm.unpriced_calls"  # calls no price was found for
BUDGET_SCOPE: Final = "otelhooks.budget.scope"
BUDGET_LIMIT: Final = "otelhooks.budget.limit"
BUDGET_SPENT: Final = "otelhooks.budget.spent"
GEN_AI_SYSTEM: Final = "gen_ai.system"  # the older name of gen_ai.provider.name

EVENT_NAME: Final = "otelhooks.event"
# The event's id: the spec's event.* namespace defines no id, so it lives under ours.
EVENT_ID: Final = "otelhooks.event.id"
# Why a span links another: one attribute on every link otelhooks writes, one value per reason.
LINK_RELATION: Final = "otelhooks.link.relation"
LINK_PARENT_OPERATION: Final = "parent_operation"  # a sub-agent's or compaction's operation
LINK_HOOK_DECISION: Final = "hook_decision"  # a coding agent's tool span -> the route's span
LINK_AGENT_TOOL: Final = "agent_tool"  # the route's execute_tool span -> the agent's tool span

# -- span event names ----------------------------------------------------------------------------
# The conventions' own name for an exception; every other span event otelhooks writes is in its
# namespace (``otelhooks.``), or ``claude_code.`` (``codex.``, ``gemini_cli.``) for an event a
# coding agent names itself.
EVENT_EXCEPTION: Final = "exception"
EVENT_APPROVE: Final = "otelhooks.approve"
EVENT_REJECT: Final = "otelhooks.reject"
EVENT_TOOL_RESULT_PERSIST: Final = "otelhooks.tool_result_persist"
EVENT_TOOL_GUARDRAIL: Final = "otelhooks.tool_guardrail"
# a call an agent framework holds for a person's approval, or that the person rejected
EVENT_TOOL_APPROVAL: Final = "otelhooks.tool_approval"
EVENT_PREFIX: Final = "otelhooks."
CLAUDE_CODE_EVENT_PREFIX: Final = "claude_code."

# -- metrics -------------------------------------------------------------------------------------
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_INVOKE_AGENT_DURATION: Final = "gen_ai.invoke_agent.duration"
METRIC_EXECUTE_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"
METRIC_OPERATIONS: Final = "otelhooks.agent.operations"
METRIC_ERRORS: Final = "otelhooks.agent.errors"
METRIC_STEP_DURATION: Final = "otelhooks.agent.step.duration"
METRIC_TOOL_CALLS: Final = "otelhooks.tool.calls"
METRIC_COMPACTIONS: Final = "otelhooks.compactions"
METRIC_COMPACT_TOKENS_SAVED: Final = "otelhooks.compaction.tokens_saved"
METRIC_HUMAN_INTERVENTIONS: Final = "otelhooks.human_interventions"
METRIC_HOOK_INVOCATIONS: Final = "otelhooks.hook.invocations"
METRIC_HOOK_DURATION: Final = "otelhooks.hook.duration"
METRIC_DROPPED: Final = "otelhooks.dropped"
METRIC_LLM_CALLS: Final = "otelhooks.llm.calls"
METRIC_LLM_COST: Final = "otelhooks.llm.cost"
METRIC_STORE_ERRORS: Final = "otelhooks.store.errors"
MCP_METRIC_SERVER_OPERATION_DURATION: Final = "mcp.server.operation.duration"
MCP_METRIC_CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"
MCP_METRIC_SERVER_SESSION_DURATION: Final = "mcp.server.session.duration"

# Metric attribute keys that are ours.
ATTR_OUTCOME: Final = "otelhooks.outcome"
ATTR_HOOK_ID: Final = "otelhooks.hook.id"
ATTR_HOOK_EVENT: Final = "otelhooks.hook.event"
ATTR_HOOK_KIND: Final = "otelhooks.hook.kind"
ATTR_HOOK_MODE: Final = "otelhooks.hook.mode"  # only on hooks in mode: permissive
ATTR_DROP_SOURCE: Final = "otelhooks.drop.source"
ATTR_DROP_REASON: Final = "otelhooks.drop.reason"
ATTR_STORE_ERROR: Final = "otelhooks.store.error"
ATTR_APPROVAL_ACTION: Final = APPROVAL_ACTION
