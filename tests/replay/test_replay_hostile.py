"""Hostile recordings: ``otelhooks replay`` reads what it can, names what it cannot (exit 2), keeps
the report for the rest, and holds one line or frame at a time (real ``otelhooks replay``
processes; peak memory from the kernel's accounting of the child)."""

from __future__ import annotations

import json
import resource
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
DENY_RM = """
hooks:
  - id: no-rm
    type: beforeToolCall
    matcher: "shell/exec"
    script: hooks.py:deny
"""
DENY_SCRIPT = """
from otelhooks import Block

def deny(event):
    if "rm -rf" in str(event.args):
        return Block("no rm -rf")
"""


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _tool_span(span_id: str, arguments: str) -> dict[str, Any]:
    return {
        "traceId": "ab" * 16,
        "spanId": span_id,
        "name": "execute_tool exec",
        "kind": 1,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "status": {},
        "attributes": [
            _kv("gen_ai.operation.name", "execute_tool"),
            _kv("gen_ai.tool.name", "exec"),
            _kv("otelhooks.tool.identifier", "shell"),
            _kv("gen_ai.tool.call.arguments", arguments),
        ],
    }


def _line(*spans: dict[str, Any]) -> str:
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}
    return json.dumps(request)


def _replay(tmp_path: Path, recording: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hooks.py").write_text(DENY_SCRIPT)
    (tmp_path / "policy.yaml").write_text(DENY_RM)
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "replay", str(recording), "--hooks", "policy.yaml",
         *extra],
        capture_output=True, text=True, cwd=tmp_path, timeout=150,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_arguments_600_deep_reach_the_policy_as_data(tmp_path: Path) -> None:
    deep = '{"cmd": ' + "[" * 600 + '"rm -rf /"' + "]" * 600 + "}"
    recording = tmp_path / "deep.jsonl"
    recording.write_text(_line(_tool_span("01" * 8, deep), _tool_span("02" * 8, '{"cmd": "ls"}')))
    done = _replay(tmp_path, recording, "--format", "json", "--fail-on", "deny")
    assert done.returncode == 1, done.stderr  # the deny the policy makes, not a crash
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["events"] == 4
    assert summary["changes"] == {"deny": 1}


@pytest.mark.parametrize(
    "bad",
    ['{"resourceSpans": [', '{"n": ' + "7" * 5000 + "}", "[" * 5000],
    ids=["cut short", "a 5,000-digit integer", "5,000 brackets"],
)
def test_an_unreadable_line_is_named_exit_2_and_the_rest_is_reported(
    tmp_path: Path, bad: str
) -> None:
    recording = tmp_path / "mixed.jsonl"
    good = _line(_tool_span("01" * 8, '{"cmd": "rm -rf /"}'))
    recording.write_text("\n".join([good, bad, good.replace("01" * 8, "03" * 8)]) + "\n")
    done = _replay(tmp_path, recording, "--format", "json")
    assert done.returncode == 2
    assert f"{recording}:2" in done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["spans"] == 2
    assert summary["changes"] == {"deny": 2}
    assert summary["unreadable"] == 1


def _frames(count: int, *, broken: int | None = None, orphans: bool = False) -> bytes:
    """``count`` requests of one tool span each, 4-byte framed; frame ``broken`` is garbage;
    ``orphans``: each span's parent was never recorded."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"T" * 16, b"SPANID!!", "execute_tool exec"
    if orphans:
        span.parent_span_id = b"NOPARENT"
    for key, value in (("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "exec"),
                       ("otelhooks.tool.identifier", "shell"),
                       ("gen_ai.tool.call.arguments", '{"cmd": "ls"}')):  # fmt: skip
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    frame = request.SerializeToString()
    at = frame.index(b"SPANID!!")
    out = bytearray()
    for n in range(1, count + 1):
        data = frame[:at] + struct.pack(">Q", n) + frame[at + 8 :]
        if n == broken:
            data = b"\x0a" + b"\xff" * (len(data) - 1)  # opens as a request, parses as none
        out += struct.pack(">I", len(data)) + data
    return bytes(out)


def test_an_unreadable_protobuf_frame_is_named_and_the_others_are_replayed(
    tmp_path: Path,
) -> None:
    recording = tmp_path / "dump.pb"
    recording.write_bytes(_frames(5, broken=3))
    done = _replay(tmp_path, recording, "--format", "json")
    assert done.returncode == 2, done.stderr
    assert "message 3" in done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["spans"] == 4
    assert summary["by_event"]["before_tool_call"] == 4


@pytest.mark.parametrize("orphans", [False, True], ids=["roots", "parents-never-recorded"])
def test_memory_does_not_grow_with_a_recording_of_small_frames(
    tmp_path: Path, orphans: bool
) -> None:
    # Spans whose parent never comes wait for it (HELD_BACK at most, then the ancestry of the
    # whole recording is read first): that bound, not the recording, is what they may hold.
    def peak_mib(frames: int) -> float:
        recording = tmp_path / f"frames-{frames}.pb"
        recording.write_bytes(_frames(frames, orphans=orphans))
        script = (
            "import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        )
        (tmp_path / "hooks.py").write_text(DENY_SCRIPT)
        (tmp_path / "policy.yaml").write_text(DENY_RM.replace("shell/exec", "nothing/here"))
        done = subprocess.run(
            [sys.executable, "-c", script, sys.executable, "-m", "otelhooks", "replay",
             str(recording), "--hooks", "policy.yaml"],
            capture_output=True, text=True, cwd=tmp_path, timeout=150,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return int(done.stdout) / 1024

    small, large = peak_mib(1_000), peak_mib(8_000)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0
    # 8x the recording (1.5 MB of frames, 8,000 spans): what grows is the ancestry kept per
    # span (~0.3 KB), not the spans (holding them all grew ~40 MB here)
    assert large - small < 12, (small, large)


def test_what_cannot_be_read_is_listed_before_what_cannot_be_replayed(tmp_path: Path) -> None:
    from otelhooks.replay import replay

    unbuildable = {**_tool_span("01" * 8, '{"cmd": "ls"}'), "traceId": 5}  # not a string
    keyless = _tool_span("02" * 8, '{"cmd": "ls"}')
    keyless["attributes"].append({"value": {"stringValue": "no key"}})  # a request, not OTLP
    recording = tmp_path / "mixed.jsonl"
    good = _tool_span("03" * 8, '{"cmd": "rm -rf /"}')
    recording.write_text("\n".join([_line(unbuildable), _line(keyless), _line(good)]) + "\n")
    (tmp_path / "hooks.py").write_text(DENY_SCRIPT)
    (tmp_path / "policy.yaml").write_text(DENY_RM.replace("hooks.py", str(tmp_path / "hooks.py")))
    report = replay([recording], [tmp_path / "policy.yaml"])
    problems = list(report.unreadable)
    assert report.unreadable.total == 2, problems
    assert problems[0].startswith(f"{recording}:2: not an OTLP trace request")
    assert "cannot be replayed" in problems[1]
    assert report.changes == {"deny": 1}
