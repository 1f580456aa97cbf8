"""Recordings other than a captured otelhooks run: without content, from the Claude Code bridge,
and as OTLP protobuf dumps (the Collector's ``file`` exporter with ``format: proto``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import read_otlp_json_lines
from otelhooks import semconv as sc
from otelhooks.integrations.claude_code import session_trace_id
from otelhooks.replay import RecordingError, iter_requests, read_recording, replay
from tests.replay.conftest import replay_main

# -- content not recorded -------------------------------------------------------------------------


def test_without_content_hooks_decide_on_names_and_the_report_says_so(
    uncaptured_demo: Path, policy: Path
) -> None:
    run = replay_main(uncaptured_demo, "--hooks", policy, "--format", "json")
    assert run.code == 0, run.stderr
    reads = [e for e in run.events() if e["subject"] == "fs/readFile"]
    assert {e["event"] for e in reads} == {"before_tool_call", "tool_result_persist"}
    for event in (e for e in reads if e["event"] == "before_tool_call"):
        assert event["content_recorded"] is False
        assert event["matched"] == ["sandbox-reads"]
    # The deny needs only the tool's name; the fingerprint the span kept reaches the hook.
    (span,) = [s for s in read_recording(uncaptured_demo) if s["name"] == "execute_tool deleteFile"]
    deny = run.one("event", event="before_tool_call", subject="fs/deleteFile")
    assert deny["now"]["reason"] == (
        f"deleting is off (args {span['attributes'][sc.TOOL_ARGS_FINGERPRINT]})"
    )
    assert deny["content_recorded"] is False
    summary = run.one("summary")
    assert summary["content_not_recorded"] == 9  # 2 reads, 1 delete, 5 calc, 1 shell: matched
    table = replay_main(uncaptured_demo, "--hooks", policy).stdout
    assert "Content not recorded (9): hooks saw names, matcher values and fingerprints" in table


def test_arguments_known_to_be_empty_count_as_recorded(uncaptured_demo: Path) -> None:
    from otelhooks.replay import recorded_events

    events = list(recorded_events(read_recording(uncaptured_demo)))
    explode = next(e for e in events if e.subject == "flaky/explode")
    assert explode.span["attributes"][sc.TOOL_ARGS_SIZE] == 2  # "{}"
    assert explode.content_recorded is True
    assert explode.payload.args == {}  # type: ignore[attr-defined]


# -- Claude Code ----------------------------------------------------------------------------------

BRIDGE_HOOKS = """
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""

# The new policy: Claude Code's own settings format, a command hook that refuses listings.
NEW_SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'case "$HOOK_TOOL_INPUT" in *\'"ls\'*) '
                        "echo 'no listings' >&2; exit 2;; esac",
                    }
                ],
            }
        ]
    }
}


def _bridge(tmp: Path, traces: Path, *events: tuple[str, dict[str, Any]]) -> None:
    """Hook processes started together (as Claude Code runs the hooks of parallel tools)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["HOME"] = str(tmp)
    env[sc.ENV_CAPTURE_CONTENT] = "true"
    command = [
        sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(tmp / "hooks.yaml"),
        "--traces-out", str(traces), "--state", str(tmp / "state.sqlite3"),
    ]  # fmt: skip
    procs = []
    for event, fields in events:
        payload = {
            "session_id": "sess-1",
            "transcript_path": str(tmp / "t.jsonl"),
            "cwd": str(tmp),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def bridge_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Claude Code turn through ``otelhooks claude-code``, one process per hook event."""
    tmp = tmp_path_factory.mktemp("claude")
    (tmp / "hooks.yaml").write_text(BRIDGE_HOOKS)
    traces = tmp / "traces.jsonl"

    def pre(use: str, tool: str, **tool_input: Any) -> dict[str, Any]:
        return {"tool_name": tool, "tool_input": tool_input, "tool_use_id": use}

    listing, removal, read = (
        pre("tu1", "Bash", command="ls -la"),
        pre("tu2", "Bash", command="rm -rf build"),
        pre("tu3", "Read", file_path="/w/a.py"),
    )
    _bridge(tmp, traces, ("UserPromptSubmit", {"prompt": "clean up"}))
    _bridge(tmp, traces, ("PreToolUse", listing), ("PreToolUse", removal), ("PreToolUse", read))
    _bridge(
        tmp,
        traces,
        ("PostToolUse", {**listing, "tool_response": "a"}),
        ("PostToolUse", {**read, "tool_response": "x"}),
    )
    _bridge(tmp, traces, ("Stop", {"stop_hook_active": False}))
    return traces


def test_a_claude_code_bridge_recording_replays_through_a_command_hook(
    bridge_recording: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(NEW_SETTINGS))
    run = replay_main(
        bridge_recording, "--hooks", settings, "--format", "json", "--fail-on", "deny"
    )
    assert run.code == 1, run.stderr
    trace = format(session_trace_id("sess-1"), "032x")
    listing = run.one("event", event="before_tool_call", change="deny")
    assert listing["trace_id"] == trace
    assert listing["subject"] == "Bash"
    assert listing["agent"] == "claude-code"
    assert listing["now"]["reason"] == "no listings"
    assert listing["recorded"]["decision"] == "allow"
    # The recorded rm -rf denial came from a hook the new policy no longer has.
    removal = run.one("event", event="before_tool_call", change="allow")
    assert removal["recorded"] == {
        "decision": "deny",
        "by": ["no-rm"],
        "reason": "rm -rf is not allowed here",
    }
    tools = {r["tool"]: r for r in run.records() if r["type"] == "tool"}
    assert tools["Bash"]["seen"] == 2
    assert tools["Read"]["changed"] == 0


# -- OTLP protobuf dumps --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_spans() -> list[Any]:
    """Spans as an OpenTelemetry SDK exports them: a run with two tool calls."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("recorder")
    agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "bot"}
    with tracer.start_as_current_span("invoke_agent bot", attributes=agent):
        for tool, args in (("fs/deleteFile", '{"path":"a"}'), ("calc/evaluate", '{"e":"1+1"}')):
            attrs = {
                sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: tool,  # a foreign span: identifier/apiName in the name
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: args,
            }
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attrs):
                pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _dump(spans: list[Any], framing: str) -> bytes:
    chunks = [
        encode_spans(spans[:1]).SerializeToString(),
        encode_spans(spans[1:]).SerializeToString(),
    ]
    if framing == "fixed32":
        return b"".join(len(c).to_bytes(4, "big") + c for c in chunks)
    if framing == "varint":
        out = b""
        for chunk in chunks:
            size, prefix = len(chunk), b""
            while size > 0x7F:
                prefix += bytes([(size & 0x7F) | 0x80])
                size >>= 7
            out += prefix + bytes([size]) + chunk
        return out
    return encode_spans(spans).SerializeToString()


@pytest.mark.parametrize("framing", ["fixed32", "varint", "bare"])
def test_protobuf_dumps_read_as_the_json_lines_of_the_same_spans(
    sdk_spans: list[Any], framing: str, tmp_path: Path
) -> None:
    from otelhooks import OtlpJsonLinesSpanExporter

    jsonl = tmp_path / "spans.jsonl"
    exporter = OtlpJsonLinesSpanExporter(jsonl)
    exporter.export(sdk_spans)  # one line: the OTLP JSON of these spans
    exporter.shutdown()
    dump = tmp_path / "spans.pb"
    dump.write_bytes(_dump(sdk_spans, framing))
    key = lambda s: s["spanId"]  # noqa: E731
    assert read_recording(jsonl) == read_otlp_json_lines(jsonl)
    assert sorted(read_recording(dump), key=key) == sorted(read_recording(jsonl), key=key)


def test_a_protobuf_dump_replays_and_annotates_foreign_spans(
    sdk_spans: list[Any], policy: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "collector.pb"
    dump.write_bytes(_dump(sdk_spans, "fixed32"))
    out = tmp_path / "annotated.jsonl"
    report = replay([dump], [policy], otlp_out=out)
    changes = {e["subject"]: e["now"]["decision"] for e in report.listed()}
    assert changes == {"fs/deleteFile": "deny", "calc/evaluate": "mock"}
    annotated = read_recording(out)
    assert len(annotated) == 3
    decisions = {s["name"]: s["attributes"].get(sc.REPLAY_DECISION) for s in annotated}
    assert decisions["execute_tool fs/deleteFile"] == "deny"
    assert decisions["invoke_agent bot"] == "allow"


def test_a_file_in_no_known_format_is_refused(tmp_path: Path, policy: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x07not a recording at all")
    with pytest.raises(RecordingError, match=r"junk\.bin"):
        list(iter_requests(junk))
    run = replay_main(junk, "--hooks", policy)
    assert run.code == 2
    assert "neither OTLP JSON lines nor an OTLP protobuf" in run.stderr
