"""OTLP/JSON requests built by hand, to post spans of a chosen shape to ``serve``."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx


def ids() -> tuple[str, str]:
    """A new (trace id, span id) in hex."""
    return os.urandom(16).hex(), os.urandom(8).hex()


def span(
    trace_id: str,
    span_id: str,
    name: str,
    *,
    parent: str | None = None,
    start_ns: int | None = None,
    duration_ns: int = 1_000_000,
    attributes: dict[str, Any] | None = None,
    error: bool = False,
) -> dict[str, Any]:
    start = start_ns if start_ns is not None else time.time_ns()
    body: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + duration_ns),
        "attributes": [_kv(k, v) for k, v in (attributes or {}).items()],
        "status": {"code": 2, "message": "boom"} if error else {"code": 1},
    }
    if parent:
        body["parentSpanId"] = parent
    return body


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, list):
        return {
            "key": key,
            "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}},
        }
    return {"key": key, "value": {"stringValue": str(value)}}


def post(client: httpx.Client, spans: list[dict[str, Any]], service: str = "web-test") -> None:
    """POST ``spans`` to ``/v1/traces`` of the client's server, as one OTLP/JSON request."""
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", service)]},
                "scopeSpans": [{"scope": {"name": "tests"}, "spans": spans}],
            }
        ]
    }
    response = client.post(
        "/v1/traces",
        content=json.dumps(request),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text


def agent_run(agent: str, *, denied_tool: str | None = None) -> list[dict[str, Any]]:
    """An ``invoke_agent`` with a step, a model call and a tool call (denied when asked)."""
    trace_id, root = ids()
    _, step = ids()
    _, chat = ids()
    _, tool = ids()
    now = time.time_ns()
    tool_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": denied_tool or "calc",
        "otelhooks.tool.matcher_value": denied_tool or "calc",
        "otelhooks.tool.outcome": "denied" if denied_tool else "success",
    }
    if denied_tool:
        tool_attrs |= {
            "otelhooks.hook.decision": "deny",
            "otelhooks.hook.decided_by": "no-rm",
            "otelhooks.hook.decision_reason": "rm is not allowed",
        }
    return [
        span(
            trace_id,
            root,
            f"invoke_agent {agent}",
            start_ns=now,
            duration_ns=9_000_000,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
        ),
        span(
            trace_id,
            step,
            "step 0",
            parent=root,
            start_ns=now + 10_000,
            duration_ns=8_000_000,
            attributes={"gen_ai.operation.name": "step"},
        ),
        span(
            trace_id,
            chat,
            "chat gpt",
            parent=step,
            start_ns=now + 20_000,
            duration_ns=3_000_000,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 30,
            },
        ),
        span(
            trace_id,
            tool,
            f"execute_tool {denied_tool or 'calc'}",
            parent=step,
            start_ns=now + 4_000_000,
            duration_ns=1_000_000,
            attributes=tool_attrs,
        ),
    ]


def big_trace(count: int) -> list[dict[str, Any]]:
    """A run of ``count`` spans: steps of 50, model and tool calls under them, every tenth
    tool call denied."""
    trace_id, root = ids()
    now = time.time_ns()
    spans = [
        span(
            trace_id,
            root,
            "invoke_agent big-bot",
            start_ns=now,
            duration_ns=count * 2000,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "big-bot"},
        )
    ]
    step = root
    for n in range(1, count):
        _, sid = ids()
        if n % 50 == 1:
            spans.append(
                span(
                    trace_id,
                    sid,
                    f"step {n // 50}",
                    parent=root,
                    start_ns=now + n * 1000,
                    duration_ns=100_000,
                    attributes={"gen_ai.operation.name": "step"},
                )
            )
            step = sid
            continue
        kind = "chat" if n % 2 else "execute_tool"
        attrs: dict[str, Any] = {"gen_ai.operation.name": kind}
        if kind == "execute_tool" and n % 10 == 0:
            attrs |= {"otelhooks.tool.outcome": "denied", "otelhooks.hook.decided_by": "guard"}
        spans.append(
            span(
                trace_id,
                sid,
                f"{kind} {n}",
                parent=step,
                start_ns=now + n * 1000,
                duration_ns=900,
                attributes=attrs,
            )
        )
    return spans


def posted_big_trace(client: httpx.Client, count: int) -> tuple[str, str]:
    """:func:`big_trace` of ``count`` spans posted through ``client``: its trace and root ids."""
    spans = big_trace(count)
    post(client, spans)
    return spans[0]["traceId"], spans[0]["spanId"]
