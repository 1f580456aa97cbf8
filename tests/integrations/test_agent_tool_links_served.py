"""A real ``otelhooks serve`` links Codex's own tool spans and the bridge's ``execute_tool`` span
of the same tool use whatever order they reach it in, and exports each span once (#30).

The bridge's span is the real bridge's (:func:`run_hook` on Codex's captured hook inputs, written
to an OTLP JSON lines file); Codex's spans are shaped as Codex 0.171 exports them (service
``codex_exec``, the session named on one span of the trace, ``call_id`` on two spans of the shell
call). Both are posted to ``serve`` on 127.0.0.1 in a chosen order, one request at a time (serve
runs a request's processors before it answers), and read back from ``--traces-out`` once serve
has stopped (it flushes what it holds on SIGTERM).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import BridgeOptions, run_hook, session_trace_id
from tests.reliability._serve_proc import ServeProc, post_traces

CAPTURED = Path(__file__).parents[1] / "coding_agents_cli" / "captured"
SESSION = "01a23620-bca6-7242-87ff-3f8a58c20507"
CALL = "call_links"
CODEX_TRACE = f"{0xC0DE:032x}"
# Codex's spans of one tool use: the turn (naming the session) and two spans naming the call
TURN, EXEC, UNIFIED = f"{0x71:016x}", f"{0x72:016x}", f"{0x73:016x}"


def _bridge_body(tmp_path: Path, session: str = SESSION, call: str = CALL) -> bytes:
    """The real bridge's OTLP JSON of one Codex tool use (PreToolUse then PostToolUse)."""
    out = tmp_path / f"bridge-{call}.jsonl"
    options = BridgeOptions(
        state=str(tmp_path / "bridge.sqlite3"), dialect="codex", traces_out=str(out)
    )
    for event in ("PreToolUse", "PostToolUse"):
        raw = json.loads((CAPTURED / f"codex-{event}.json").read_text())
        raw.update(session_id=session, tool_use_id=call)
        assert run_hook(raw, options, environ={"HOME": str(tmp_path)}).exit_code == 0
    (line,) = out.read_text().splitlines()
    return line.encode()


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _codex_span(span_id: str, name: str, parent: str, **attrs: str) -> dict[str, Any]:
    return {
        "traceId": CODEX_TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000002000000",
        "attributes": [_kv(k, v) for k, v in attrs.items()],
    }


def _codex_resource_spans() -> dict[str, Any]:
    spans = [
        _codex_span(TURN, "session_task.turn", "", **{"conversation.id": SESSION}),
        _codex_span(EXEC, "exec_command", TURN, call_id=CALL),
        _codex_span(UNIFIED, "unified_exec.exec_command", EXEC, call_id=CALL),
    ]
    return {
        "resource": {"attributes": [_kv("service.name", "codex_exec")]},
        "scopeSpans": [{"scope": {"name": "codex_otel"}, "spans": spans}],
    }


def _codex_body() -> bytes:
    return json.dumps({"resourceSpans": [_codex_resource_spans()]}).encode()


def _both_body(bridge: bytes, *, codex_first: bool) -> bytes:
    theirs = json.loads(bridge)["resourceSpans"]
    ours = [_codex_resource_spans()]
    return json.dumps({"resourceSpans": ours + theirs if codex_first else theirs + ours}).encode()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProc]:
    traces = tmp_path / "served.jsonl"
    server = ServeProc(tmp_path, "--no-web", "--traces-out", str(traces))
    server.traces = traces  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()


def _post(server: ServeProc, body: bytes) -> None:
    response = post_traces(server.url, body, timeout_s=60)
    assert response.status_code == 200, response.text


def _exported(server: ServeProc) -> list[dict[str, Any]]:
    """Every span in ``--traces-out``, once serve has stopped (each with its scope's name)."""
    server.stop()
    traces: Path = server.traces  # type: ignore[attr-defined]
    spans: list[dict[str, Any]] = []
    for line in traces.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs.get("scopeSpans") or ():
                scope = (ss.get("scope") or {}).get("name", "")
                spans.extend({**s, "scope": scope} for s in ss.get("spans") or ())
    return spans


def _attr(span: dict[str, Any], key: str) -> Any:
    for kv in span.get("attributes") or ():
        if kv["key"] == key:
            value = kv["value"]
            if "arrayValue" in value:
                return [next(iter(v.values())) for v in value["arrayValue"].get("values") or ()]
            return next(iter(value.values()))
    return None


def _links(span: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (link["traceId"], link["spanId"], _attr(link, "otelhooks.link.relation"))
        for link in span.get("links") or ()
    ]


def _by_id(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    counts = Counter(s["spanId"] for s in spans)
    assert [k for k, n in counts.items() if n > 1] == [], "a span exported more than once"
    return {s["spanId"]: s for s in spans}


def _bridge_tool(spans: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (tool,) = [
        s
        for s in spans.values()
        if _attr(s, "gen_ai.operation.name") == "execute_tool" and _attr(s, "gen_ai.tool.call.id")
    ]
    return tool


def _assert_codex_moved(spans: dict[str, dict[str, Any]]) -> str:
    trace = f"{session_trace_id(SESSION):032x}"
    for span_id in (TURN, EXEC, UNIFIED):
        assert spans[span_id]["traceId"] == trace
        assert _attr(spans[span_id], "codex.trace_id") == CODEX_TRACE
    return trace


def test_codex_first_then_the_bridge_links_the_bridges_span_to_codexs(
    tmp_path: Path, serve: ServeProc
) -> None:
    bridge = _bridge_body(tmp_path)
    _post(serve, _codex_body())
    _post(serve, bridge)
    spans = _by_id(_exported(serve))
    trace = _assert_codex_moved(spans)
    tool = _bridge_tool(spans)
    assert tool["traceId"] == trace
    assert _attr(tool, "otelhooks.agent.span_ids") == [EXEC, UNIFIED]
    assert _links(tool) == [(trace, EXEC, "agent_tool"), (trace, UNIFIED, "agent_tool")]
    # the link is made once, on the span that came second
    assert _attr(spans[EXEC], "otelhooks.hook.span_id") is None
    assert _links(spans[EXEC]) == []


def test_the_bridge_first_then_codex_links_codexs_spans_to_the_bridges(
    tmp_path: Path, serve: ServeProc
) -> None:
    bridge = _bridge_body(tmp_path)
    _post(serve, bridge)
    _post(serve, _codex_body())
    spans = _by_id(_exported(serve))
    trace = _assert_codex_moved(spans)
    tool = _bridge_tool(spans)
    for span_id in (EXEC, UNIFIED):
        assert _attr(spans[span_id], "otelhooks.hook.span_id") == tool["spanId"]
        assert _links(spans[span_id]) == [(trace, tool["spanId"], "hook_decision")]
    assert _attr(spans[TURN], "otelhooks.hook.span_id") is None
    assert _attr(tool, "otelhooks.agent.span_ids") is None
    assert _links(tool) == []


@pytest.mark.parametrize("codex_first", [True, False], ids=["codex-first", "bridge-first"])
def test_one_request_with_both_links_codexs_spans_to_the_bridges(
    tmp_path: Path, serve: ServeProc, codex_first: bool
) -> None:
    _post(serve, _both_body(_bridge_body(tmp_path), codex_first=codex_first))
    spans = _by_id(_exported(serve))
    trace = _assert_codex_moved(spans)
    tool = _bridge_tool(spans)
    for span_id in (EXEC, UNIFIED):
        assert _links(spans[span_id]) == [(trace, tool["spanId"], "hook_decision")]
    assert _links(tool) == []


def test_a_request_sent_again_exports_nothing_twice(tmp_path: Path, serve: ServeProc) -> None:
    bridge, codex = _bridge_body(tmp_path), _codex_body()
    for body in (codex, bridge, codex, bridge):  # a client retrying both requests
        _post(serve, body)
    spans = _by_id(_exported(serve))
    tool = _bridge_tool(spans)
    assert _attr(tool, "otelhooks.agent.span_ids") == [EXEC, UNIFIED]
    assert set(spans) == {TURN, EXEC, UNIFIED, tool["spanId"]}
