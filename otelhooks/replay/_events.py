"""Recorded spans back into the intercept events they stood for, with what was decided then.

=====================================  =========================================================
span (``gen_ai.operation.name``)       replayed event
=====================================  =========================================================
``execute_tool``                       ``before_tool_call`` (arguments from
                                       ``gen_ai.tool.call.arguments``), and, when the tool
                                       returned, ``tool_result_persist`` (the result from
                                       ``gen_ai.tool.call.result``, as it was persisted)
``send_message``                       ``message_sending`` (channel and target; otelhooks does
                                       not record the message text)
``invoke_agent``                       ``before_agent_start`` (the input from
                                       ``gen_ai.input.messages`` when the span has it)
=====================================  =========================================================

Spans of other GenAI instrumentations map the same way wherever their attributes carry the
event (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``...). What a span lacks is not
guessed: the event is replayed with the names, matcher values and fingerprints it has, and
marked ``content_recorded=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from otelhooks import _semconv as sc
from otelhooks._engine import tool_values
from otelhooks._events import (
    BeforeAgentStartEvent,
    HookEvent,
    MessageSendingEvent,
    ToolCallEvent,
    ToolResultPersistEvent,
)
from otelhooks._json import JsonProblem, loads_bounded
from otelhooks._matchers import tool_aliases
from otelhooks._span_mapping import tool_identity
from otelhooks._tool_kinds import ANNOTATION_KINDS, cli_aliases
from otelhooks.replay._context import SpanContext, cut, reached_limit

__all__ = ["Decision", "RecordedEvent", "SpanContext", "recorded_events"]

_STATUS_ERROR = 2  # OTLP Status.code STATUS_CODE_ERROR
_EMPTY_ARGS_SIZE = 2  # len("{}"): arguments known to be empty even without capture
# what the MCP gateway may have matched a call by that a recording made before it wrote
# otelhooks.tool.kinds does not say
_ANY_KIND = tuple(ANNOTATION_KINDS)


@dataclass(frozen=True, slots=True)
class Decision:
    """What intercept hooks decided for one event.

    Attributes:
        action: ``allow``, ``deny`` (also a blocked message or run), ``mock`` or ``rewrite``;
            in a replay, also ``ask`` or ``defer``: a command answered so, and live a person
            (or, for ``defer``, whatever the agent defers to) decides.
        by: the deciding hook ids (every rewriting hook for ``rewrite``).
        reason: why, for ``deny``.

    Example:
        >>> str(Decision("deny", ("no-shell",), "no shell"))
        'deny by no-shell: no shell'
    """

    action: str = "allow"
    by: tuple[str, ...] = ()
    reason: str | None = None

    def __str__(self) -> str:
        text = self.action
        if self.by:
            text += f" by {', '.join(self.by)}"
        if self.reason:
            text += f": {self.reason}"
        return text


_ALLOWED = Decision()  # immutable: one for every event recorded as allowed


@dataclass(slots=True)
class RecordedEvent:
    """One recorded event to replay.

    Attributes:
        event: the canonical intercept event (``before_tool_call``...).
        build: makes its payload from the span (:attr:`payload` calls it once, when a hook
            matches: as live, no payload is built for an event no hook wants; a rewrite's diff
            calls it again, for the value the hooks started from).
        values: what matchers compare (as the live instrumentation offers them).
        recorded: what the hooks decided when the span was recorded.
        trace_id, span_id: the span (lowercase hex).
        agent: the agent that ran it (the nearest ``invoke_agent`` span), if known.
        subject: the tool (``identifier/apiName``), message (``channel -> target``) or agent.
        content_recorded: False when the span lacks the content the payload needs (capture
            was off, or the capture limit cut it short): hooks saw names, matcher values and
            fingerprints only.
        span: the recorded span (as :func:`read_recording` gives it).
        unknown: why some hooks cannot be judged on this event, and the matcher values live
            may have offered that the span does not say (``()``: every one is known): a hook
            that matches only with them, or any hook that matches arguments cut short, is
            not evaluated.
    """

    event: str
    build: Callable[[], HookEvent]
    values: tuple[str, ...]
    recorded: Decision
    trace_id: str
    span_id: str
    agent: str | None
    subject: str
    content_recorded: bool
    span: dict[str, Any]
    unknown: tuple[str, tuple[str, ...]] | None = None
    _payload: HookEvent | None = None

    @property
    def payload(self) -> HookEvent:
        """The event's payload, rebuilt from the span (built on first use)."""
        if self._payload is None:
            self._payload = self.build()
        return self._payload


def recorded_events(
    spans: Iterable[dict[str, Any]],
    *,
    context: SpanContext | None = None,
    problems: list[str] | None = None,
) -> Iterator[RecordedEvent]:
    """The intercept events of ``spans`` (one recording, or several), in span order.

    Args:
        spans: the spans; held whole unless ``context`` is given.
        context: the ancestry of every span (:meth:`SpanContext.add` each span first, e.g. in
            a first pass over a streamed recording); built from ``spans`` when omitted.
        problems: where a span whose ``gen_ai.operation.name`` was cut short (the exporter's
            ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``) is described and skipped; without it, a
            ``ValueError`` is raised.

    Example:
        >>> from otelhooks.replay import read_recording
        >>> for ev in list(recorded_events(read_recording("examples/replay/traces.jsonl")))[:1]:
        ...     print(ev.event, ev.subject, ev.recorded)
        before_tool_call fs/readFile allow
    """
    if context is None:
        spans = list(spans)
        context = SpanContext()
        for span in spans:
            context.add(span)
    for span in spans:
        attrs = span.get("attributes") or {}
        op = attrs.get(sc.GEN_AI_OPERATION_NAME)
        if op in _REPLAYED:
            # A name or id a matcher or hook reads, cut by the exporter's limit (on this span,
            # or on the ancestor it is inherited from): no hook reading it can be judged on
            # the cut one, and one matching it would not even run.
            facts = context.of(span)
            was_cut = reached_limit(span, attrs, _READ) or facts.get("cut")
            if was_cut is not None:
                _cut_short(span, was_cut, problems)
            elif op == sc.OP_EXECUTE_TOOL:
                yield from _tool_events(span, attrs, facts)
            elif op == sc.OP_SEND_MESSAGE:
                yield _message_event(span, attrs, facts)
            else:
                yield _agent_event(span, attrs, facts)
        elif isinstance(op, str) and any(name.startswith(op) for name in _REPLAYED):
            # Cut by the exporter's limit, with the span's other values: an event no hook can
            # be judged on, which skipped without a word read as a policy that passed.
            _cut_short(span, f"gen_ai.operation.name {op!r}", problems)


def _cut_short(span: dict[str, Any], what: str, problems: list[str] | None) -> None:
    problem = (
        f"trace {span.get('traceId', '')} span {span.get('spanId', '')}: {what} was cut short, "
        "or may have been (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT of the recording process): not "
        "replayed"
    )
    if problems is None:
        raise ValueError(problem)
    problems.append(problem)


# The operations replayed as intercept events; a recorded name that is a proper prefix of one
# was cut short.
_REPLAYED = (sc.OP_EXECUTE_TOOL, sc.OP_SEND_MESSAGE, sc.OP_INVOKE_AGENT)
# What matchers and hooks read of a replayed span besides its content (the arguments and the
# result, whose cut makes only the hooks that matched not evaluable): names, ids, folders.
_READ = (
    sc.GEN_AI_TOOL_NAME,
    sc.TOOL_IDENTIFIER,
    sc.MCP_SERVER_NAME,
    sc.GEN_AI_TOOL_CALL_ID,
    sc.MESSAGE_CHANNEL,
    sc.MESSAGE_TARGET,
    sc.CLAUDE_CODE_CWD,
    sc.CLAUDE_CODE_PROJECT_DIR,
    *SpanContext.facts,
)


def _common(span: dict[str, Any], facts: Mapping[str, str]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "traceId": span.get("traceId"),
        "spanId": span.get("spanId"),
        "timestamp": int(span.get("startTimeUnixNano") or 0) // 1_000_000,
    }
    for field in ("operationId", "parentOperationId", "sessionKey", "userId"):
        if field in facts:
            fields[field] = facts[field]
    return fields


def _event(
    span: dict[str, Any],
    facts: Mapping[str, str],
    event: str,
    build: Callable[[], HookEvent],
    values: tuple[str, ...],
    recorded: Decision,
    subject: str,
    content_recorded: bool,
) -> RecordedEvent:
    return RecordedEvent(
        event,
        build,
        values,
        recorded,
        span.get("traceId", ""),
        span.get("spanId", ""),
        facts.get("agent") or facts.get("agentId"),
        subject,
        content_recorded,
        span,
    )


def _ids(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v)
    return ()


def _blocked(attrs: Mapping[str, Any], rewritten: Any, blocked: bool) -> Decision:
    if blocked:
        reason = attrs.get(sc.HOOK_DECISION_REASON)
        return Decision("deny", _ids(attrs.get(sc.HOOK_DECIDED_BY)), reason or None)
    by = _ids(rewritten)
    return Decision("rewrite", by) if by else _ALLOWED


def _tool_events(
    span: dict[str, Any], attrs: Mapping[str, Any], facts: Mapping[str, str]
) -> Iterator[RecordedEvent]:
    if attrs.get(sc.HOOK_DECIDED_BY) == sc.DECIDED_BY_OTELHOOKS:
        # otelhooks refused the call before any hook ran (its arguments' types): no policy
        # decides it, then or now, and nothing ran to persist
        return
    trace_id, span_id = span.get("traceId", ""), span.get("spanId", "")
    agent = facts.get("agent") or facts.get("agentId")
    tool = tool_identity(attrs, str(span.get("name", "")), str(span_id))
    identifier, api, namespace = tool["identifier"], tool["apiName"], tool.get("toolNamespace")
    # as the instrumentation and the MCP gateway offer them; the first names the tool
    values: tuple[str, ...] = tool_values(identifier, api, namespace)
    subject = values[0]
    shared = _common(span, facts)
    common = shared | tool
    if "agentId" in facts:
        common["agentId"] = facts["agentId"]
    index = attrs.get(sc.TOOL_CALL_INDEX)
    if isinstance(index, int):
        common["callIndex"] = index
    parent = span.get("parentSpanId")
    if isinstance(parent, str) and parent:
        # as recorded live: the id of the step (or turn) the call belongs to
        common["assistantMessageId"] = f"msg_{parent}"
    # The kernel's names for the same facts, given as the model's validator would set them
    # (toolInput is set by it: it is the arguments' own dict), so building the payload is one
    # validation with no assignment after it.
    common["toolName"] = api
    if "operationId" in common:
        common["runId"] = common["operationId"]
    cwd = attrs.get(sc.CLAUDE_CODE_CWD)
    if isinstance(cwd, str):  # the folders of the call, as the live bridge gives them to hooks
        common["claudeCode"] = {"cwd": cwd}
        project = attrs.get(sc.CLAUDE_CODE_PROJECT_DIR)
        if isinstance(project, str):
            common["claudeCode"]["projectDir"] = project
    raw_args = attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
    # Without capture the arguments are unknown, unless their size says they were "{}".
    args_size = attrs.get(sc.TOOL_ARGS_SIZE)
    has_args = raw_args is not None or args_size == _EMPTY_ARGS_SIZE
    unknown: tuple[str, tuple[str, ...]] | None = None
    if cut(raw_args, args_size, "utf-8"):
        has_args, unknown = False, (_CUT_ARGS, ())
    outcome = attrs.get(sc.TOOL_OUTCOME)
    if attrs.get(sc.HOOK_DECISION) == "deny" or outcome == "denied":
        recorded = _blocked(attrs, (), True)
    elif attrs.get(sc.HOOK_MOCKED) is True or outcome == "mocked":
        recorded = Decision("mock", _ids(attrs.get(sc.HOOK_MOCKED_BY)))
    else:
        rewritten = attrs.get(sc.HOOK_REWRITTEN_BY)
        recorded = _blocked(attrs, rewritten, False) if rewritten else _ALLOWED
    if identifier:
        if sc.MCP_METHOD_NAME in attrs:  # the gateway's: the annotation kinds it matched by
            kinds = attrs.get(sc.TOOL_KINDS)
            if isinstance(kinds, list | tuple):
                values += tuple(k for k in kinds if isinstance(k, str))
            elif unknown is None:
                unknown = (_NO_KINDS, _ANY_KIND)
    else:  # as the coding agents' bridge does: an MCP tool's gateway names, the CLI's aliases
        values = (api, *tool_aliases(api), *cli_aliases(agent, api, _arguments(raw_args)))

    def build_call() -> HookEvent:
        # The payload's own values at each build (its chain hands them to the hooks, which may
        # change them in place): text parsed again; arguments recorded as a structure (an
        # OTLP map or list, the span's own) copied, so the span and a rewrite's diff keep them.
        args = _arguments(raw_args if isinstance(raw_args, str) else deepcopy(raw_args))
        common["args"] = args
        return ToolCallEvent.model_validate(common)

    yield RecordedEvent(
        "before_tool_call",
        build_call,
        values,
        recorded,
        trace_id,
        span_id,
        agent,
        subject,
        has_args,
        span,
        unknown,
    )
    failed = (span.get("status") or {}).get("code") == _STATUS_ERROR
    if failed or outcome not in (None, "success", "error"):
        return  # denied, mocked or raised: nothing was persisted
    content = attrs.get(sc.GEN_AI_TOOL_CALL_RESULT)
    result_size = attrs.get(sc.TOOL_RESULT_SIZE)
    has_result = isinstance(content, str) or result_size == 0
    result_cut = cut(content, result_size, None)
    persisted = _ALLOWED
    for span_event in span.get("events") or ():
        if span_event.get("name") == sc.EVENT_TOOL_RESULT_PERSIST:
            event_attrs = span_event.get("attributes") or {}
            persisted = _blocked(
                event_attrs,
                event_attrs.get(sc.HOOK_REWRITTEN_BY),
                event_attrs.get(sc.MESSAGE_BLOCKED) is True,
            )
    # The payload's fields are only put together when it is built (a hook matched).
    yield RecordedEvent(
        "tool_result_persist",
        lambda: ToolResultPersistEvent.model_validate(
            {
                **shared,
                "toolName": api,
                "toolCallId": tool["toolCallId"],
                "identifier": identifier,
                "apiName": api,
                "result": {
                    "content": content if isinstance(content, str) else "",
                    "success": outcome != "error",
                },
            }
        ),
        values,
        persisted,
        trace_id,
        span_id,
        agent,
        subject,
        has_result and not result_cut,
        span,
        (_CUT_RESULT, ()) if result_cut else unknown if unknown and unknown[1] else None,
    )


_CUT_ARGS = (
    "its arguments were recorded cut short (the attribute length limit): a guard reading them "
    "cannot be judged"
)
_CUT_RESULT = (
    "its result was recorded cut short (the attribute length limit): a guard reading it cannot "
    "be judged"
)
_NO_KINDS = (
    "the recording does not say the tool's annotation kinds (no otelhooks.tool.kinds: a gateway "
    "older than this release), which this hook's matcher names"
)


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = loads_bounded(raw)  # arguments nested past 64 levels: kept as their text
        except JsonProblem:
            return {"input": raw}  # not JSON: hooks see the text as it was recorded
    return raw if isinstance(raw, dict) else {"input": raw}


def _message_event(
    span: dict[str, Any], attrs: Mapping[str, Any], facts: Mapping[str, str]
) -> RecordedEvent:
    channel = str(attrs.get(sc.MESSAGE_CHANNEL) or str(span.get("name", "")).partition(" ")[2])
    target = str(attrs.get(sc.MESSAGE_TARGET) or "")
    content = _output_text(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES))
    fields = {**_common(span, facts), "channelId": channel, "target": target}
    recorded = _blocked(
        attrs, attrs.get(sc.HOOK_REWRITTEN_BY), attrs.get(sc.MESSAGE_BLOCKED) is True
    )
    subject = f"{channel} -> {target}" if target else channel
    values = tuple(v for v in (channel, target) if v) or ("*",)
    return _event(
        span,
        facts,
        "message_sending",
        lambda: MessageSendingEvent(**fields, content=content or ""),
        values,
        recorded,
        subject,
        content is not None,
    )


def _agent_event(
    span: dict[str, Any], attrs: Mapping[str, Any], facts: Mapping[str, str]
) -> RecordedEvent:
    name = str(attrs.get(sc.GEN_AI_AGENT_NAME) or str(span.get("name", "")).partition(" ")[2])
    agent_id = str(attrs.get(sc.GEN_AI_AGENT_ID) or name)
    text = _input_text(attrs.get(sc.GEN_AI_INPUT_MESSAGES))
    fields = {**_common(span, facts), "agentId": agent_id}
    prompt = text or ""
    recorded = _blocked(attrs, attrs.get(sc.HOOK_REWRITTEN_BY), bool(attrs.get(sc.HOOK_DECIDED_BY)))
    # As the instrumentation offers them: the agent's name, then its id ("*" for neither, as
    # matcher_values says for an event without one).
    values = tuple(v for v in (name, agent_id) if v) or ("*",)
    return _event(
        span,
        facts,
        "before_agent_start",
        lambda: BeforeAgentStartEvent(
            **fields, input=prompt, userMessage=prompt, fullPrompt=prompt
        ),
        values,
        recorded,
        name,
        text is not None,
    )


def _messages(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        try:
            value = loads_bounded(value)
        except JsonProblem:
            return None
    return value if isinstance(value, list) else None


def _text_of(message: Any) -> str:
    if not isinstance(message, dict):
        return str(message)
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = message.get("parts")  # the GenAI conventions' structured messages
    if isinstance(parts, list):
        return "".join(str(p.get("content", "")) for p in parts if isinstance(p, dict))
    return ""


def _input_text(value: Any) -> str | None:
    """The last user message of ``gen_ai.input.messages`` (None: not recorded)."""
    messages = _messages(value)
    if messages is None:
        return None
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return _text_of(users[-1]) if users else ""


def _output_text(value: Any) -> str | None:
    """The text of ``gen_ai.output.messages`` on a span (None: not recorded)."""
    messages = _messages(value)
    if messages is None:
        return None
    return "\n".join(_text_of(m) for m in messages)
