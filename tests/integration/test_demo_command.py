"""`otelhooks demo` end to end: a real process, a real file, real OTLP receivers over the wire."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks._demo import LOBEHUB_TYPES
from tests._realparts import OtlpHttpSink, OtlpReceiver, rotel_collector

DEMO_SPANS = {
    "invoke_agent research-assistant",
    "invoke_agent summarizer",
    "invoke_agent translator",
    "invoke_agent flaky-agent",
    "invoke_agent ops-bot",
    "invoke_agent brittle-bot",
    "invoke_agent looping-bot",
    "compress_context",
    "request_human_approve",
    "call_agent summarizer",
    "send_message chat",
}


def run_demo(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
        cwd=cwd,
    )


def test_demo_writes_one_export_request_per_line(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    proc = run_demo("--traces-out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert lines
    for line in lines:
        request = json.loads(line)
        assert set(request) == {"resourceSpans"}
        for rs in request["resourceSpans"]:
            service = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            assert service["service.name"] == {"stringValue": "otelhooks-demo"}
    names = {s["name"] for s in read_otlp_json_lines(out)}
    assert names >= DEMO_SPANS


def test_demo_verbose_shows_every_lobehub_hook_type_fired_and_every_tree(tmp_path: Path) -> None:
    proc = run_demo("--verbose", "--traces-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 0, proc.stderr
    fired = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in LOBEHUB_TYPES:
            fired[parts[0]] = int(parts[1])
    assert set(fired) == set(LOBEHUB_TYPES)
    assert all(count > 0 for count in fired.values()), fired
    for point in (
        "before_agent_start",
        "message_sending",
        "before_tool_call",
        "tool_result_persist",
    ):
        assert any(
            line.split()[:1] == [point] and int(line.split()[1]) > 0
            for line in proc.stdout.splitlines()
        )
    assert "MOCKED by offline-web" in proc.stdout
    assert "DENIED by no-shell" in proc.stdout
    assert "reason=interrupted" in proc.stdout
    assert "├─ " in proc.stdout
    assert "agent_lifecycle" not in proc.stdout  # named in one explained line instead
    assert "Lifecycle events outside any operation" in proc.stdout


def test_demo_prints_one_screen_by_default_with_nothing_unexplained(tmp_path: Path) -> None:
    proc = run_demo("--traces-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) <= 50
    assert lines[1].startswith("  invoke_agent research-assistant")
    assert "agent_lifecycle" not in proc.stdout
    assert "None" not in proc.stdout  # a failed model call has no token counts, not None/None
    assert "4 operations, 63 spans in all:" in lines
    assert "Delivery:" in lines
    assert "Next:" in lines


def test_replaying_the_demo_against_its_own_hook_file_changes_nothing(tmp_path: Path) -> None:
    from otelhooks._demo_hooks import demo_hooks_file

    traces = tmp_path / "t.jsonl"
    assert run_demo("--quiet", "--traces-out", str(traces)).returncode == 0
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "replay", str(traces), "--hooks",
         str(demo_hooks_file()), "--fail-on", "deny,mock,rewrite"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changes: none" in proc.stdout.splitlines()[0]


def test_demo_default_file_is_written_in_the_working_directory(tmp_path: Path) -> None:
    proc = run_demo("--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "otelhooks-demo-traces.jsonl").stat().st_size > 0


def test_demo_leaves_no_folder_of_its_own_behind(tmp_path: Path) -> None:
    """The file tools' workspace (notes.md, old.log, big.log) is in the temporary folder while
    the agents run (a guard sees it), and removed with the files in it when the demo ends."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    seen = tmp_path / "seen.txt"
    # a guard on readFile writes what the temporary folder holds, one line per call
    (tmp_path / "demo_listing.py").write_text(
        textwrap.dedent(
            f"""
            import os

            def listing(event):
                names = [
                    " ".join(sorted(os.listdir(os.path.join({str(scratch)!r}, folder))))
                    for folder in os.listdir({str(scratch)!r})
                ]
                with open({str(seen)!r}, "a") as f:
                    f.write(" | ".join(names) + "\\n")
            """
        )
    )
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - id: workspace-listing\n"
        "    type: PreToolUse\n"
        "    matcher: readFile\n"
        "    handler: demo_listing:listing\n"
    )
    env = {"TMPDIR": str(scratch), "PYTHONPATH": str(tmp_path)}
    proc = run_demo("--quiet", "--hooks", str(hooks), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text().splitlines()[0] == "big.log notes.md old.log"
    assert list(scratch.iterdir()) == []


def test_demo_loads_extra_hooks_from_files(tmp_path: Path) -> None:
    marker = tmp_path / "seen.txt"
    (tmp_path / "demo_extra_hooks.py").write_text(
        "import os\n"
        "def record(event):\n"
        f"    with open({str(marker)!r}, 'a') as f:\n"
        "        f.write(event.apiName + '\\n')\n"
    )
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - id: extra-audit\n"
        "    type: PostToolUse\n"
        "    matcher: evaluate\n"
        "    handler: demo_extra_hooks:record\n"
    )
    proc = run_demo(
        "--quiet",
        "--traces-out",
        str(tmp_path / "t.jsonl"),
        "--hooks",
        str(hooks),
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert set(marker.read_text().split()) == {"evaluate"}


def test_demo_rejects_an_invalid_hook_file_naming_file_hook_and_field(tmp_path: Path) -> None:
    hooks = tmp_path / "bad.json"
    hooks.write_text(json.dumps([{"id": "oops", "type": "beforeToolcall", "handler": "os:getcwd"}]))
    proc = run_demo("--quiet", "--hooks", str(hooks), cwd=tmp_path)
    assert proc.returncode == 2
    assert str(hooks) in proc.stderr
    assert "hook 'oops'" in proc.stderr
    assert "field 'type'" in proc.stderr
    assert "Did you mean 'beforeToolCall'?" in proc.stderr


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    tap = OtlpReceiver()
    try:
        yield tap
    finally:
        tap.stop()


def test_demo_exports_spans_and_metrics_over_otlp_http(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    span = receiver.expect_span("invoke_agent research-assistant")
    metric = receiver.expect_metric("otelhooks.agent.operations")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    proc = run_demo("--quiet", "--traces-out", str(tmp_path / "t.jsonl"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert span.result(30)
    assert metric.result(30)


def test_demo_exports_over_otlp_grpc_through_a_real_collector(tmp_path: Path) -> None:
    sink = OtlpHttpSink()
    try:
        with rotel_collector(sink.endpoint, tmp_path) as (grpc_port, _):
            env = {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{grpc_port}",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            }
            proc = run_demo("--quiet", "--traces-out", str(tmp_path / "t.jsonl"), env=env)
            assert proc.returncode == 0, proc.stderr
            assert sink.wait_for_span("invoke_agent ops-bot")
        assert "execute_tool search" in sink.span_names
    finally:
        sink.stop()


def _normalised(text: str) -> list[str]:
    """Demo output with what differs between runs and machines taken out: ids, durations,
    and the folders of the files it names."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "<trace>", text)
    text = re.sub(r"span [0-9a-f]{8}\b", "span <id>", text)
    text = re.sub(r"\b\d+\.\d ms\b", "<t> ms", text)
    text = re.sub(
        r"/\S*/(otelhooks-demo-traces\.jsonl|otelhooks/demo-hooks\.yaml)", r"<dir>/\1", text
    )
    return [line.rstrip() for line in text.strip().splitlines()]


def test_the_readme_sample_is_what_the_demo_prints(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(
        r"<!-- demo-output -->\n```\n(.*?)```\n<!-- end of demo-output -->", readme, re.S
    )
    assert block is not None
    proc = run_demo(cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _normalised(proc.stdout) == _normalised(block.group(1))


def test_the_replay_guides_policy_changes_exactly_its_own_decisions(tmp_path: Path) -> None:
    from otelhooks._demo_hooks import demo_hooks_file

    root = Path(__file__).resolve().parents[2]
    traces = tmp_path / "t.jsonl"
    capture = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert run_demo("--quiet", "--traces-out", str(traces), env=capture).returncode == 0
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "replay", str(traces), "--format", "json",
         "--hooks", str(demo_hooks_file()), "--hooks", str(root / "examples/replay/policy.yaml")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["changes"] == {"deny": 1, "mock": 5, "rewrite": 2}
