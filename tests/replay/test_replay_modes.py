"""``otelhooks replay`` with a policy whose hook is in ``mode: permissive``: the report says what
it would have done, and its decisions are not the policy's (#27 pt 5)."""

from __future__ import annotations

from pathlib import Path

from tests.replay.conftest import replay_main

POLICY = """
hooks:
  - id: no-delete
    type: beforeToolCall
    matcher: "^fs/deleteFile$"
    mode: permissive
    command: "echo 'deleting is off' >&2; exit 2"
"""


def write(tmp_path: Path) -> Path:
    policy = tmp_path / "permissive.yaml"
    policy.write_text(POLICY)
    return policy


def test_the_json_report_lists_what_a_permissive_hook_would_do(
    captured_demo: Path, tmp_path: Path
) -> None:
    run = replay_main(captured_demo, "--hooks", write(tmp_path), "--format", "json")
    assert run.code == 0, run.stderr
    deletes = [
        e
        for e in run.events()
        if e["subject"] == "fs/deleteFile" and e["event"] == "before_tool_call"
    ]
    assert deletes
    for event in deletes:
        assert event["permissive"] == ["no-delete would deny: deleting is off"]
        assert event["now"]["decision"] == "allow"  # not enforced: not the policy's decision
    assert run.one("hook", hook="no-delete")["deny"] == 0


def test_the_table_has_a_permissive_section(captured_demo: Path, tmp_path: Path) -> None:
    run = replay_main(captured_demo, "--hooks", write(tmp_path))
    assert run.code == 0, run.stderr
    assert "Permissive, not enforced (" in run.stdout
    assert "    permissive: no-delete would deny: deleting is off" in run.stdout
