"""Print exported spans (as read back from OTLP JSON lines) as a readable trace tree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from typing import Any

from otelhooks import _semconv as sc

__all__ = ["LIFECYCLE_PREFIX", "operation_summary", "render_trees", "usd"]

# The span name of a lifecycle event outside any operation (gateway_start, session_end...).
LIFECYCLE_PREFIX = "agent_lifecycle "

_STATUS = {0: "", 1: "ok", 2: "ERROR"}


def _ms(span: dict[str, Any]) -> float:
    return (int(span.get("endTimeUnixNano", 0)) - int(span.get("startTimeUnixNano", 0))) / 1e6


def _tokens(a: dict[str, Any]) -> str:
    usage_in, usage_out = a.get(sc.GEN_AI_USAGE_INPUT_TOKENS), a.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    if usage_in is None and usage_out is None:
        return ""  # a call that failed before the model answered counted nothing
    return f"tokens in/out={usage_in or 0}/{usage_out or 0}"


def usd(value: float) -> str:
    """Dollars as the tree and the summary print them (model calls cost fractions of a cent)."""
    return f"${value:.2f}" if value >= 1 else f"${value:.6f}"


def _cost(a: dict[str, Any], name: str) -> str:
    value = a.get(name)
    return f"cost={usd(float(value))}" if isinstance(value, int | float) else ""


def _details(span: dict[str, Any], hide_hooks: Collection[str]) -> str:
    a: dict[str, Any] = span.get("attributes", {})
    op = a.get(sc.GEN_AI_OPERATION_NAME)
    parts: list[str] = []
    if op == sc.OP_INVOKE_AGENT:
        parts.append(f"reason={a.get(sc.COMPLETE_REASON)}")
        parts.append(_tokens(a))
        parts.append(_cost(a, sc.OPERATION_COST_USD))
        if a.get(sc.HOOK_REWRITTEN_BY):
            parts.append(f"input rewritten by {','.join(a[sc.HOOK_REWRITTEN_BY])}")
        if a.get(sc.HOOK_DECIDED_BY):
            parts.append(f"BLOCKED by {a[sc.HOOK_DECIDED_BY]}")
    elif op == sc.OP_CHAT:
        parts.append(_tokens(a))
        parts.append(_cost(a, sc.LLM_COST_USD))
    elif op == sc.OP_EXECUTE_TOOL:
        parts.append(str(a.get(sc.TOOL_MATCHER_VALUE) or a.get(sc.GEN_AI_TOOL_NAME)))
        outcome = a.get(sc.TOOL_OUTCOME)
        if outcome == "denied":
            parts.append(
                f"DENIED by {a.get(sc.HOOK_DECIDED_BY)}: {a.get(sc.HOOK_DECISION_REASON)!r}"
            )
        elif outcome == "mocked":
            parts.append(f"MOCKED by {a.get(sc.HOOK_MOCKED_BY)}")
        elif outcome is not None:  # spans of other instrumentations have none
            parts.append(str(outcome))
    elif op == sc.OP_HUMAN_APPROVAL:
        parts.append(f"pending={','.join(a.get(sc.APPROVAL_PENDING_TOOLS, ()))}")
    elif op == sc.OP_COMPACT:
        if sc.COMPACT_MESSAGES_AFTER in a:
            before, after = a.get(sc.COMPACT_MESSAGES_BEFORE), a.get(sc.COMPACT_MESSAGES_AFTER)
            saved = a.get(sc.COMPACT_TOKENS_SAVED)
            parts.append(f"messages {before}->{after}, tokens saved={saved}")
    elif op == sc.OP_CALL_AGENT:
        parts.append("isolated" if a.get(sc.SUBAGENT_ISOLATED) else "in-process")
    elif op == sc.OP_SEND_MESSAGE:
        if a.get(sc.MESSAGE_BLOCKED):
            parts.append(f"BLOCKED by {a.get(sc.HOOK_DECIDED_BY)}")
        elif a.get(sc.HOOK_REWRITTEN_BY):
            parts.append(f"rewritten by {','.join(a[sc.HOOK_REWRITTEN_BY])}")
    if a.get(sc.HOOK_ERRORS):
        parts.append(f"hook errors: {'; '.join(a[sc.HOOK_ERRORS])}")
    matched = [h for h in a.get(sc.HOOK_MATCHED, ()) if h not in hide_hooks]
    if matched:
        parts.append(f"hooks: {', '.join(matched)}")
    for link in span.get("links", []):
        if link.get("attributes", {}).get(sc.LINK_RELATION) == sc.LINK_PARENT_OPERATION:
            parts.append(f"link -> parent op span {link.get('spanId', '')[:8]}")
        elif link.get("attributes", {}).get(sc.LINK_RELATION) == sc.LINK_HOOK_DECISION:
            # Claude Code's own tool span, joined with the hook span that decided it
            parts.append(f"link -> hook span {link.get('spanId', '')[:8]}")
    for event in span.get("events", []):
        ea = event.get("attributes", {})
        if event.get("name") == "exception":
            parts.append(f"exception {ea.get('exception.type')}: {ea.get('exception.message')}")
        elif event.get("name") in (sc.EVENT_APPROVE, sc.EVENT_REJECT):
            why = ea.get(sc.APPROVAL_REJECTION_REASON)
            parts.append(f"{event['name']}" + (f" ({why})" if why else ""))
        else:
            parts.append(f"event {event.get('name')}")
    return "  ".join(p for p in parts if p)


def render_trees(spans: Iterable[dict[str, Any]], *, hide_hooks: Collection[str] = ()) -> str:
    """Render spans (dicts as :func:`read_otlp_json_lines` returns) as trees, one per trace;
    the hooks that matched each span are listed, but for ``hide_hooks``."""
    spans = list(spans)
    by_id = {(s["traceId"], s["spanId"]): s for s in spans}
    children: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    roots = []
    for s in spans:
        parent = s.get("parentSpanId")
        if parent and (s["traceId"], parent) in by_id:
            children[(s["traceId"], parent)].append(s)
        else:
            roots.append(s)
    roots.sort(key=lambda s: int(s.get("startTimeUnixNano", 0)))
    lines: list[str] = []

    def walk(span: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        status = _STATUS.get(int(span.get("status", {}).get("code", 0)), "")
        head = f"{span['name']}  {_ms(span):.1f} ms" + (
            f"  [{status}]" if status == "ERROR" else ""
        )
        details = _details(span, hide_hooks)
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{head}" + (f"  {details}" if details else ""))
        kids = sorted(
            children.get((span["traceId"], span["spanId"]), []),
            key=lambda s: int(s.get("startTimeUnixNano", 0)),
        )
        child_prefix = prefix if top else prefix + ("   " if last else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, child_prefix, i == len(kids) - 1, False)

    for root in roots:
        lines.append(f"trace {root['traceId']}")
        walk(root, "  ", True, True)
        lines.append("")
    return "\n".join(lines)


def operation_summary(spans: Iterable[dict[str, Any]]) -> str:
    """One line per top-level operation: its end, tokens, tool calls and what went wrong."""
    spans = list(spans)
    ops = sorted(
        (
            s
            for s in spans
            if s["name"].startswith(f"{sc.OP_INVOKE_AGENT} ")
            and not s.get("parentSpanId")
            and not any(
                link.get("attributes", {}).get(sc.LINK_RELATION) == sc.LINK_PARENT_OPERATION
                for link in s.get("links", [])
            )
        ),
        key=lambda s: int(s.get("startTimeUnixNano", 0)),
    )
    width = max((len(op["name"]) for op in ops), default=0) - len(sc.OP_INVOKE_AGENT) - 1
    lines = [f"{len(ops)} operations, {len(spans)} spans in all:"]
    for op in ops:
        trace = [s for s in spans if s["traceId"] == op["traceId"]]
        a = op.get("attributes", {})
        tools = [s.get("attributes", {}) for s in trace if s["name"].startswith("execute_tool ")]
        outcomes = [t.get(sc.TOOL_OUTCOME) for t in tools]
        notes = [f"{len(tools)} tool call{'s' if len(tools) != 1 else ''}"]
        cost = a.get(sc.OPERATION_COST_USD)
        if isinstance(cost, int | float):
            notes.insert(0, usd(float(cost)))
        notes += [
            f"{outcomes.count(o)} {o}" for o in ("mocked", "denied", "error") if o in outcomes
        ]
        subagents = sum(1 for s in trace if s["name"].startswith(f"{sc.OP_CALL_AGENT} "))
        if subagents:
            notes.append(f"{subagents} sub-agent call{'s' if subagents != 1 else ''}")
        for s in trace:
            for event in s.get("events", []):
                ea = event.get("attributes", {})
                if event.get("name") == sc.EVENT_REJECT:
                    notes.append(f"approval rejected ({ea.get(sc.APPROVAL_REJECTION_REASON)})")
        if int(op.get("status", {}).get("code", 0)) == 2:
            failed = [
                e.get("attributes", {})
                for s in trace
                if s is not op
                for e in s.get("events", [])
                if e.get("name") == "exception"
            ]
            if failed:
                notes.append(
                    f"{failed[-1].get('exception.type')}: {failed[-1].get('exception.message')}"
                )
        name = op["name"].removeprefix(f"{sc.OP_INVOKE_AGENT} ")
        lines.append(f"  {name:<{width}}  {a.get(sc.COMPLETE_REASON)!s:<12} {', '.join(notes)}")
    return "\n".join(lines)
