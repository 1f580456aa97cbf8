"""A span recorded twice (the same trace id and span id) is replayed once: an exporter that
retried a batch after a timeout wrote it again, or two recordings given both hold it. Real
``otelhooks demo`` recordings, real ``otelhooks replay`` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.replay import replay
from tests.replay.conftest import run_replay

pytestmark = pytest.mark.timeout(300)


def _summary(stdout: str) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(stdout.splitlines()[-1])
    assert summary["type"] == "summary"
    return summary


def test_a_batch_exported_twice_is_replayed_once_and_said_on_stderr(
    captured_demo: Path, policy: Path, tmp_path: Path
) -> None:
    lines = captured_demo.read_text().splitlines()
    retried = tmp_path / "retried.jsonl"
    # each batch written again right after it, as an exporter that retried after a timeout does
    retried.write_text("".join(f"{line}\n{line}\n" for line in lines))
    once = run_replay(captured_demo, "--hooks", policy, "--format", "json")
    twice = run_replay(retried, "--hooks", policy, "--format", "json")
    assert (once.code, twice.code) == (0, 0), twice.stderr
    first, second = _summary(once.stdout), _summary(twice.stdout)
    assert second["events"] == first["events"] > 0
    assert second["by_event"] == first["by_event"]
    assert second["changes"] == first["changes"]
    assert second["spans"] == first["spans"]
    assert (first["duplicate_spans"], second["duplicate_spans"]) == (0, first["spans"])
    assert f"{first['spans']} duplicate span(s) skipped" in twice.stderr
    assert "duplicate" not in once.stderr
    # the events listed are the same events, each once
    assert twice.stdout.splitlines()[:-1] == once.stdout.splitlines()[:-1]


def test_two_recordings_that_both_hold_a_run_count_it_once(
    captured_demo: Path, policy: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(captured_demo.read_bytes())
    alone = replay([captured_demo], [policy])
    both = replay([captured_demo, copy], [policy])
    assert both.events == alone.events > 0
    assert both.changes == alone.changes
    assert both.spans == alone.spans
    assert both.duplicates == alone.spans
    assert f"{alone.spans} duplicate spans skipped" in both.table()


def _orphan_line(first: int, count: int) -> str:
    """One request of ``count`` tool spans whose parent (the agent's run) was never recorded."""
    spans = [
        {
            "traceId": "ab" * 16,
            "spanId": f"{n:016x}",
            "parentSpanId": "ff" * 8,
            "name": "execute_tool deleteFile",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "status": {},
            "attributes": [
                {"key": key, "value": {"stringValue": value}}
                for key, value in (
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "deleteFile"),
                    ("otelhooks.tool.identifier", "fs"),
                    ("gen_ai.tool.call.id", f"call_{n}"),
                    ("gen_ai.tool.call.arguments", json.dumps({"path": f"f{n}"})),
                    ("gen_ai.tool.call.result", "ok"),
                )
            ],
        }
        for n in range(first, first + count)
    ]
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]})


def test_spans_read_again_after_the_ancestry_was_read_first_count_once(
    policy: Path, tmp_path: Path
) -> None:
    # 6,000 spans wait for a parent that never comes: past the spans held back, the replay
    # reads the ancestry of both files first, and every span is then known before it is read
    # for replay; the second file holds the first one's spans again, and one of its own.
    first = tmp_path / "first.jsonl"
    first.write_text("".join(_orphan_line(n, 500) + "\n" for n in range(0, 6_000, 500)))
    second = tmp_path / "second.jsonl"
    second.write_text(first.read_text() + _orphan_line(6_000, 1) + "\n")
    alone = replay([second], [policy])
    both = replay([first, second], [policy])
    assert both.events == alone.events
    assert both.changes == alone.changes == {"deny": 6_001}
    assert both.spans == alone.spans == 6_001
    assert (alone.duplicates, both.duplicates) == (0, 6_000)


def test_spans_without_ids_are_each_replayed(policy: Path, tmp_path: Path) -> None:
    # Nothing tells two spans without a span id apart (a hand-made or converted recording):
    # neither is taken for the other's copy.
    spans = json.loads(_orphan_line(0, 3))
    for span in spans["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        del span["spanId"]
    recording = tmp_path / "no-ids.jsonl"
    recording.write_text(json.dumps(spans) + "\n")
    report = replay([recording], [policy])
    assert report.changes == {"deny": 3}
    assert (report.spans, report.duplicates) == (3, 0)
