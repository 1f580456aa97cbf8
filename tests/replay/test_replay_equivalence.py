"""The streamed ``replay()`` (inline hooks) against the plainest road through the same public
pieces: every span held (:func:`read_recording`), the ancestry built from all of them at once
(:func:`recorded_events` without a context), hooks on the engine's handler pool. Both must give
the same report and the same ``--otlp-out`` file, byte for byte, on recordings with every kind of
outcome: denies, mocks, rewrites, passes, errors, permissive hooks, webhooks not called, events
without content, results rewritten on persist, and parents written after their children (also
in another file, and never)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import HooksEngine
from otelhooks.replay import (
    AnnotationWriter,
    RecordingError,
    ReplayReport,
    SpanContext,
    _stream,
    iter_spans,
    read_recording,
    recorded_events,
    replay,
    replay_events,
)

POLICY_PY = """
from otelhooks import Block

def deny_secret(event):
    if "secret" in str(event.args.get("path", "")):
        return Block("secret paths are off limits")

def mock_search(event):
    if event.args.get("n", 0) % 3 == 1:
        event.mock({"content": "cached"})

def rewrite_cmd(event):
    if event.args.get("n", 0) % 3 == 0:
        return {"args": {**event.args, "cmd": "echo " + str(event.args.get("cmd", ""))}}

def deny_in_place(event):
    if event.args.get("n", 0) % 5 == 2:
        event.deny("denied in place")

def flaky(event):
    if event.args.get("n", 0) % 7 == 3:
        raise RuntimeError("flaky hook")

def allow(event):
    return None

def redact(event):
    result = event.result
    if isinstance(result, dict) and "password" in str(result.get("content", "")):
        return {"result": {**result, "content": "[REDACTED]"}}
    return event

def no_mail(event):
    if event.target == "all@example.com":
        return Block("no mass mail")

def greet(event):
    if "hello" in event.input:
        return {"input": event.input + " (checked)"}
"""

POLICY_YAML = """
hooks:
  - id: would-deny
    type: beforeToolCall
    matcher: "^fs/deleteFile$"
    mode: permissive
    script: policy.py:deny_secret
  - {id: deny-secret, type: beforeToolCall, matcher: "^fs/", script: policy.py:deny_secret}
  - {id: mock-search, type: beforeToolCall, matcher: "^web/search$", script: policy.py:mock_search}
  - {id: rewrite-cmd, type: beforeToolCall, matcher: "^shell/", script: policy.py:rewrite_cmd}
  - {id: deny-in-place, type: beforeToolCall, matcher: "^db/", script: policy.py:deny_in_place}
  - {id: flaky, type: beforeToolCall, matcher: "^db/", script: policy.py:flaky}
  - id: flaky-blocks
    type: beforeToolCall
    matcher: "^mail/"
    script: policy.py:flaky
    on_error: block
  - id: guard
    type: beforeToolCall
    matcher: "^git/"
    webhook: {url: "http://127.0.0.1:9/decide", responseHandling: toolCall, timeout: 5}
  - {id: everyone, type: beforeToolCall, script: policy.py:allow}
  - {id: redact, type: tool_result_persist, intercept: true, script: policy.py:redact}
  - {id: no-mail, type: message_sending, script: policy.py:no_mail}
  - {id: greet, type: before_agent_start, script: policy.py:greet}
"""

TOOLS = [
    ("fs", "readFile"),
    ("fs", "deleteFile"),
    ("web", "search"),
    ("shell", "exec"),
    ("db", "query"),
    ("mail", "send"),
    ("git", "commit"),
    ("calc", "evaluate"),
]


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, span: str, parent: str, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_790_000_000_000_000_000 + int(span, 16) % 10**9),
        "endTimeUnixNano": str(1_790_000_000_000_000_500 + int(span, 16) % 10**9),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "status": {},
    }
    if parent:
        record["parentSpanId"] = parent
    return record


def _tool(trace: str, span: str, parent: str, n: int) -> dict[str, Any]:
    identifier, api = TOOLS[n % len(TOOLS)]
    args: dict[str, Any] = {"n": n, "path": "secret.txt" if n % 6 == 1 else f"f{n}"}
    if identifier == "shell":
        args["cmd"] = "ls"
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": api,
        "gen_ai.tool.call.id": f"call_{n}",
        "otelhooks.tool.identifier": identifier,
        "otelhooks.tool.args_size": 20,
    }
    if n % 11 != 5:  # now and then recorded without content (capture off)
        attrs["gen_ai.tool.call.arguments"] = json.dumps(args, sort_keys=True)
        attrs["gen_ai.tool.call.result"] = "password=x" if n % 9 == 0 else "ok"
    attrs["otelhooks.tool.outcome"] = "success"
    if n % 13 == 4:  # decided then, allowed now
        attrs["otelhooks.hook.decision"] = "deny"
        attrs["otelhooks.hook.decided_by"] = "old-policy"
        attrs["otelhooks.tool.outcome"] = "denied"
    return _span(trace, span, parent, f"execute_tool {api}", attrs)


def _run(r: int, calls: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One agent run: tool calls under a step under the agent's span, which is written last
    (it ends last); returns the spans before the agent's, and the agent's."""
    trace, root, step = f"{r + 1:032x}", f"{r + 1:08x}00000000", f"{r + 1:08x}00000001"
    spans = [_tool(trace, f"{r + 1:08x}{n + 2:08x}", step, r * 1000 + n) for n in range(calls)]
    spans.append(
        _span(
            trace,
            f"{r + 1:08x}{calls + 2:08x}",
            step,
            "send_message email",
            {
                "gen_ai.operation.name": "send_message",
                "otelhooks.message.channel": "email",
                "otelhooks.message.target": "all@example.com" if r % 2 else "bob@example.com",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "hi"}]),
            },
        )
    )
    spans.append(_span(trace, step, root, "step", {"otelhooks.step.index": 0}))
    agent = _span(
        trace,
        root,
        "",
        f"invoke_agent agent-{r}",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": f"agent-{r}",
            "gen_ai.agent.id": f"agent-id-{r}",
            "otelhooks.operation.id": f"op_{r}",
            "session.id": f"session-{r % 3}",
            "user.id": f"user-{r % 2}",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "content": "hello" if r % 2 else "bye"}]
            ),
        },
    )
    return spans, agent


def _line(spans: list[dict[str, Any]]) -> str:
    resource = {"attributes": [_kv("service.name", "equivalence")]}
    scope = {"scope": {"name": "otelhooks"}, "spans": spans}
    request = {"resourceSpans": [{"resource": resource, "scopeSpans": [scope]}]}
    return json.dumps(request, separators=(",", ":")) + "\n"


def _recordings(folder: Path, runs: int, calls: int, per_line: int) -> list[Path]:
    """Two files. Run 0's agent span is written in the second file; the last run's never."""
    first, second = folder / "first.jsonl", folder / "second.jsonl"
    lines: list[list[dict[str, Any]]] = [[]]
    held = None
    for r in range(runs):
        spans, agent = _run(r, calls)
        if r == 0:
            held = agent
        elif r < runs - 1:
            spans.append(agent)
        for span in spans:
            if len(lines[-1]) == per_line:
                lines.append([])
            lines[-1].append(span)
    half = len(lines) // 2
    first.write_text("".join(_line(spans) for spans in lines[:half]))
    assert held is not None
    second.write_text(_line([held]) + "".join(_line(spans) for spans in lines[half:]))
    return [first, second]


def _held_whole(recordings: list[Path], policy: Path, otlp_out: Path) -> ReplayReport:
    """The plainest road: every span in memory, the hooks on the engine's handler pool."""
    engine = HooksEngine.from_files([policy])
    try:
        report = ReplayReport(
            [hook.id for hook in engine.registry.hooks() if hook.intercepts],
            sources={"recordings": [str(p) for p in recordings], "policy": [str(policy)]},
        )
        spans = [span for path in recordings for span in read_recording(path)]
        report.spans = len(spans)
        writer = AnnotationWriter(otlp_out, policy=[str(policy)])
        for outcome in replay_events(engine, recorded_events(spans), pooled=True):
            report.add(outcome)
            writer.add(outcome)
        writer.write(recordings)
    finally:
        engine.shutdown(1.0)
    return report


@pytest.mark.parametrize(
    ("runs", "calls", "per_line", "held_back"),
    [(6, 40, 64, None), (3, 300, 500, None), (6, 40, 64, 7)],
    ids=["parents-in-later-lines", "parents-in-the-same-line", "too-many-held-back"],
)
def test_the_streamed_replay_reports_and_annotates_as_the_held_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runs: int,
    calls: int,
    per_line: int,
    held_back: int | None,
) -> None:
    if held_back is not None:  # spans wait for run 0's root, in the other file: past the bound
        monkeypatch.setattr(_stream, "HELD_BACK", held_back)
    (tmp_path / "policy.py").write_text(POLICY_PY)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY_YAML)
    recordings = _recordings(tmp_path, runs, calls, per_line)

    expected = _held_whole(recordings, policy, tmp_path / "held.jsonl")
    streamed = replay(recordings, [policy], otlp_out=tmp_path / "streamed.jsonl")

    changes = expected.changes
    assert changes["deny"]
    assert changes["mock"]
    assert changes["rewrite"]
    assert changes["allow"]
    assert changes["error"]
    assert expected.content_missing
    hooks = expected.hooks
    assert hooks["redact"].rewrite
    assert hooks["flaky-blocks"].deny
    assert hooks["no-mail"].deny
    assert hooks["greet"].rewrite
    assert hooks["guard"].would_call
    assert hooks["everyone"].seen > hooks["deny-secret"].deny > 0  # most calls pass
    assert any("would-deny would deny" in str(r) for r in expected.json_lines())
    assert len(list(streamed.json_lines())) == len(list(expected.json_lines()))
    assert list(streamed.json_lines()) == list(expected.json_lines())
    assert streamed.table() == expected.table()
    held = (tmp_path / "held.jsonl").read_bytes()
    assert (
        held.count(b"otelhooks.replay.decision")
        == 2 * expected.events - expected.by_event["tool_result_persist"]
    )
    assert (tmp_path / "streamed.jsonl").read_bytes() == held
    # the ancestry reached the events: the first run's agent, written in the other file
    agents = {e["agent"] for e in expected.listed()}
    assert "agent-0" in agents
    assert f"agent-{runs - 1}" not in agents


def test_spans_wait_for_their_ancestors_and_no_more_than_the_bound(tmp_path: Path) -> None:
    first, second = _recordings(tmp_path, 4, 30, 16)
    context = SpanContext()
    spans = _stream.Spans([first, second], context, [])
    given = []
    for span in spans:
        given.append(span["spanId"])
        if span["traceId"] == f"{1:032x}":  # run 0: its root is the first span of `second`
            assert spans.read > sum(1 for _ in iter_spans(first))
    assert given == [s["spanId"] for p in (first, second) for s in iter_spans(p)]
    assert not spans.ancestry_read

    bounded = _stream.Spans([first, second], SpanContext(), [], held_back=10)
    assert len(list(bounded)) == len(given)
    assert bounded.ancestry_read  # run 0's 32 spans could not all wait


def test_a_span_id_recorded_twice_keeps_what_it_was_first_recorded_with() -> None:
    # Streamed, a span may be replayed before a later copy of its parent is read: the first
    # facts must be the ones every answer gives, before and after.
    context = SpanContext()
    child = {"traceId": "t", "spanId": "c", "parentSpanId": "p"}
    context.add(child)
    assert context.waiting_for(child) == ("t", "p")
    context.add({"traceId": "t", "spanId": "p", "attributes": {"gen_ai.agent.name": "first"}})
    assert context.complete(child)
    assert context.of(child) == {"agent": "first"}
    context.add({"traceId": "t", "spanId": "p", "attributes": {"gen_ai.agent.name": "second"}})
    assert context.of(child) == {"agent": "first"}
    later = {"traceId": "t", "spanId": "d", "parentSpanId": "p"}
    assert context.of(later) == {"agent": "first"}


def test_a_later_recording_in_no_known_format_is_refused_before_any_hook_runs(
    tmp_path: Path,
) -> None:
    spans, agent = _run(0, 5)
    first = tmp_path / "first.jsonl"
    first.write_text(_line([agent]) + _line(spans))  # nothing waits: replayed as it is read
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x07not a recording at all")
    ran: list[str] = []
    engine = HooksEngine(
        [{"id": "count", "type": "beforeToolCall", "handler": lambda e: ran.append(e.apiName)}]
    )
    try:
        with pytest.raises(RecordingError, match=r"junk\.bin"):
            replay([first, junk], engine)
        assert ran == []  # as when the ancestry of every recording was read first
        replay([first], engine)
        assert ran
    finally:
        engine.shutdown(1.0)
