"""``otelhooks replay`` on a real demo recording (content capture on) with a policy that denies
one tool, mocks one and rewrites one, and keeps shell calls denied through a command hook."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks import semconv as sc
from tests.replay.conftest import Run, replay_main, run_replay


@pytest.fixture(scope="module")
def replayed(
    captured_demo: Path, policy: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Run, Path]:
    out = tmp_path_factory.mktemp("replayed") / "annotated.jsonl"
    run = run_replay(captured_demo, "--hooks", policy, "--format", "json", "--otlp-out", out)
    assert run.code == 0, run.stderr
    return run, out


def _recorded_tool_spans(recording: Path, api: str) -> list[dict[str, Any]]:
    return [
        s
        for s in read_otlp_json_lines(recording)
        if s["attributes"].get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
        and s["attributes"].get(sc.GEN_AI_TOOL_NAME) == api
    ]


def test_a_newly_denied_tool_is_reported_with_reason_hook_and_ids(
    replayed: tuple[Run, Path], captured_demo: Path
) -> None:
    run, _ = replayed
    (span,) = _recorded_tool_spans(captured_demo, "deleteFile")
    event = run.one("event", event="before_tool_call", subject="fs/deleteFile")
    assert event["trace_id"] == span["traceId"]
    assert event["span_id"] == span["spanId"]
    assert event["agent"] == "research-assistant"
    assert event["change"] == "deny"
    assert event["recorded"] == {"decision": "allow", "by": [], "reason": None}
    fingerprint = span["attributes"][sc.TOOL_ARGS_FINGERPRINT]
    assert event["now"] == {
        "decision": "deny",
        "by": ["no-delete"],
        "reason": f"deleting is off (args {fingerprint})",
    }
    assert event["content_recorded"] is True


def test_a_mocked_tool_is_reported_for_every_call(replayed: tuple[Run, Path]) -> None:
    run, _ = replayed
    mocked = [e for e in run.events() if e["subject"] == "calc/evaluate" and e["change"] == "mock"]
    assert len(mocked) == 5  # research-assistant once, looping-bot four times
    assert {e["now"]["by"][0] for e in mocked} == {"offline-calc"}
    assert {e["agent"] for e in mocked} == {"research-assistant", "looping-bot"}


def test_a_rewrite_is_reported_with_a_diff_of_the_recorded_arguments(
    replayed: tuple[Run, Path],
) -> None:
    run, _ = replayed
    rewrites = [e for e in run.events() if e["change"] == "rewrite"]
    assert sorted(e["diff"][0]["from"] for e in rewrites) == ["big.log", "notes.md"]
    notes = next(e for e in rewrites if e["diff"][0]["from"] == "notes.md")
    assert notes["subject"] == "fs/readFile"
    assert notes["now"]["by"] == ["sandbox-reads"]
    assert notes["diff"] == [
        {"path": "args.path", "op": "replace", "from": "notes.md", "to": "sandbox/notes.md"}
    ]


def test_a_command_hook_decides_as_live_and_an_unchanged_denial_is_not_reported(
    replayed: tuple[Run, Path],
) -> None:
    run, _ = replayed
    # Recorded: denied by the demo's no-shell handler; now: denied by the policy's command.
    assert not [e for e in run.events() if e["subject"] == "shell/exec"]
    tool = run.one("tool", tool="shell/exec")
    assert (tool["seen"], tool["deny"], tool["changed"]) == (1, 1, 0)
    hook = run.one("hook", hook="no-shell")
    assert (hook["seen"], hook["deny"], hook["errors"]) == (1, 1, 0)


def test_decisions_of_hooks_the_policy_drops_are_reported_as_allow(
    replayed: tuple[Run, Path],
) -> None:
    run, _ = replayed
    allowed = Counter((e["event"], tuple(e["recorded"]["by"])) for e in run.events()
                      if e["change"] == "allow")  # fmt: skip
    assert allowed == {
        ("before_tool_call", ("offline-web",)): 1,
        ("tool_result_persist", ("redact-secrets",)): 8,
        ("message_sending", ("sign-messages",)): 3,
        ("before_agent_start", ("add-context",)): 7,
    }


def test_summary_counts_every_replayed_event_and_change(replayed: tuple[Run, Path]) -> None:
    run, _ = replayed
    summary = run.one("summary")
    assert summary["by_event"] == {
        "before_tool_call": 11,
        "tool_result_persist": 8,
        "message_sending": 3,
        "before_agent_start": 7,
    }
    assert summary["changes"] == {"allow": 19, "deny": 1, "mock": 5, "rewrite": 2}
    # Message texts are never recorded, but no hook of this policy looks at messages.
    assert summary["content_not_recorded"] == 0
    hooks = {r["hook"]: r for r in run.records() if r["type"] == "hook"}
    assert list(hooks) == ["no-delete", "offline-calc", "sandbox-reads", "no-shell"]
    assert hooks["offline-calc"]["mock"] == 5
    assert hooks["offline-calc"]["changed"] == 5
    assert hooks["sandbox-reads"]["rewrite"] == 2
    tools = {r["tool"]: r for r in run.records() if r["type"] == "tool"}
    assert tools["fs/readFile"]["seen"] == 2
    assert tools["fs/readFile"]["rewrite"] == 2
    assert tools["web/search"]["changed"] == 1


def test_the_annotated_otlp_file_is_the_recording_plus_the_new_verdicts(
    replayed: tuple[Run, Path], captured_demo: Path, policy: Path
) -> None:
    _, out = replayed
    recorded = read_otlp_json_lines(captured_demo)
    annotated = read_otlp_json_lines(out)
    assert [(s["traceId"], s["spanId"]) for s in annotated] == [
        (s["traceId"], s["spanId"]) for s in recorded
    ]
    for before, after in zip(recorded, annotated, strict=True):
        kept = {
            k: v for k, v in after["attributes"].items() if not k.startswith("otelhooks.replay")
        }
        assert kept == before["attributes"]
        assert after["resource"][sc.REPLAY_POLICY] == [str(policy)]
    (delete,) = [s for s in annotated if s["name"] == "execute_tool deleteFile"]
    attrs = delete["attributes"]
    assert attrs[sc.REPLAY_DECISION] == "deny"
    assert attrs[sc.REPLAY_DECIDED_BY] == ["no-delete"]
    assert attrs[sc.REPLAY_RECORDED_DECISION] == "allow"
    assert attrs[sc.REPLAY_CHANGED] is True
    replays = [e for e in delete["events"] if e["name"] == sc.REPLAY_EVENT]
    assert [e["attributes"][sc.REPLAY_LIFECYCLE_EVENT] for e in replays] == [
        "before_tool_call",
        "tool_result_persist",
    ]
    (read,) = [s for s in annotated if s["spanId"] == _span_of(annotated, "notes.md")]
    assert '"to": "sandbox/notes.md"' in read["attributes"][sc.REPLAY_DIFF]
    unchanged = [s for s in annotated if s["name"] == "execute_tool exec"]
    assert unchanged[0]["attributes"][sc.REPLAY_CHANGED] is False


def _span_of(spans: list[dict[str, Any]], path: str) -> str:
    return next(
        s["spanId"]
        for s in spans
        if s["attributes"].get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) == f'{{"path":"{path}"}}'
    )


def test_the_table_names_changes_hooks_and_tools(captured_demo: Path, policy: Path) -> None:
    run = replay_main(captured_demo, "--hooks", policy)
    assert run.code == 0, run.stderr
    text = run.stdout
    assert text.startswith("otelhooks replay: 63 spans, 29 events replayed")
    assert "Would change (27)" in text
    assert "now:  deny by no-delete: deleting is off" in text
    assert 'diff: args.path: "notes.md" -> "sandbox/notes.md"' in text
    assert "Per hook" in text
    assert "Per tool" in text
    assert "Content not recorded" not in text


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("deny", 1), ("mock,rewrite", 1), ("error", 0)],  # without --fail-on: the fixture
)
def test_fail_on_sets_the_exit_status(
    captured_demo: Path, policy: Path, fail_on: str, code: int
) -> None:
    run = replay_main(captured_demo, "--hooks", policy, "--format", "json", "--fail-on", fail_on)
    assert run.code == code, run.stderr
    if code:
        assert "the policy changes recorded decisions" in run.stderr


def test_an_unknown_fail_on_kind_is_a_usage_error(captured_demo: Path, policy: Path) -> None:
    run = replay_main(captured_demo, "--hooks", policy, "--fail-on", "deny,explode")
    assert run.code == 2
    assert "unknown change explode" in run.stderr


def test_several_policy_files_after_one_hooks_flag(
    captured_demo: Path, policy: Path, tmp_path: Path
) -> None:
    (tmp_path / "msg.py").write_text("def quiet(event):\n    return None\n")
    messages = tmp_path / "messages.yaml"
    messages.write_text(
        "hooks:\n  - {id: quiet, type: message_sending, intercept: true, script: msg.py:quiet}\n"
    )
    run = replay_main(captured_demo, "--hooks", policy, messages, "--format", "json")
    assert run.code == 0, run.stderr
    assert [r["hook"] for r in run.records() if r["type"] == "hook"][-1] == "quiet"
    # Returning None blocks under the kernel's contract: every recorded message would be dropped,
    # decided without its text, which otelhooks never records.
    dropped = [e for e in run.events() if e["event"] == "message_sending"]
    assert len(dropped) == 3
    for event in dropped:
        assert event["change"] == "deny"
        assert event["now"]["by"] == ["quiet"]
        assert event["content_recorded"] is False
        assert event["subject"] == "chat -> user-1"
    assert run.one("summary")["content_not_recorded"] == 3


def test_a_reader_that_stops_early_leaves_the_exit_status_to_fail_on(
    captured_demo: Path, policy: Path, tmp_path: Path
) -> None:
    import os
    import re
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # The same run 12 times over, each copy its own traces (a span read twice is replayed
    # once): a report larger than the pipe's buffer.
    text = captured_demo.read_text()
    copies = []
    for n in range(12):
        copy = tmp_path / f"run-{n}.jsonl"
        copy.write_text(re.sub(r'("traceId":\s*")[0-9a-f]', rf"\g<1>{n:x}", text))
        copies.append(str(copy))
    args = [*copies, "--hooks", str(policy), "--fail-on", "deny"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "replay", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    assert proc.stdout.readline().startswith(b"otelhooks replay:")
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(60) == 1
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert "Traceback" not in stderr
    assert "the policy changes recorded decisions: 12 deny" in stderr
