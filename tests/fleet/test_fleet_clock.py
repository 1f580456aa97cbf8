"""A tool use started on one instance of a fleet and ended on another whose clock is behind."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability._serve_proc import INGEST, ServeProc

ROUTE = "/v1/hooks/claude-code"
SKEW_S = 5


def _bash(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-clock",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": "sleep 1"},
        "tool_use_id": "toolu_clock",
        **fields,
    }


def _spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                found.extend(ss["spans"])
    return found


def test_a_tool_use_and_a_turn_ended_on_an_instance_whose_clock_is_behind_last_what_they_lasted(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PreToolUse (and the turn's UserPromptSubmit) answered by one instance, the PostToolUse
    # (and Stop) by another whose clock is 5 s behind: the spans ended before they started,
    # clamped to zero length, and the after_tool_call event said -4 s.
    skewed = tmp_path / "skewed"
    skewed.mkdir()
    (skewed / "sitecustomize.py").write_text(
        "import time\n"
        "_ns, _s = time.time_ns, time.time\n"
        f"time.time_ns = lambda: _ns() - {SKEW_S}_000_000_000\n"
        f"time.time = lambda: _s() - {SKEW_S}.0\n"
    )
    right_out, behind_out = tmp_path / "right.jsonl", tmp_path / "behind.jsonl"
    right = ServeProc(tmp_path, "--store", pg_url, "--no-web", "--traces-out", str(right_out))
    monkeypatch.setenv("PYTHONPATH", f"{skewed}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    behind = ServeProc(tmp_path, "--store", pg_url, "--no-web", "--traces-out", str(behind_out))
    auth = {"Authorization": f"Bearer {INGEST}"}
    try:
        began = time.time_ns()
        prompt = _bash("UserPromptSubmit", prompt="list")
        assert (
            httpx.post(right.url + ROUTE, json=prompt, headers=auth, timeout=30).status_code == 200
        )
        pre = httpx.post(right.url + ROUTE, json=_bash("PreToolUse"), headers=auth, timeout=30)
        assert pre.status_code == 200, pre.text
        time.sleep(1.0)
        post = httpx.post(
            behind.url + ROUTE,
            json=_bash("PostToolUse", tool_response={"stdout": ""}),
            headers=auth,
            timeout=30,
        )
        assert post.status_code == 200, post.text
        stop = httpx.post(behind.url + ROUTE, json=_bash("Stop"), headers=auth, timeout=30)
        assert stop.status_code == 200, stop.text
        ended = time.time_ns()
    finally:
        right.stop()
        behind.stop()
    lasted = {
        s["name"]: (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e9
        for s in _spans(behind_out)
    }
    # before: both 0 (the end, 5 s behind the start, was clamped to it)
    assert 0.9 < lasted["execute_tool Bash"] < (ended - began) / 1e9, lasted
    assert 0.9 < lasted["invoke_agent claude-code"] < (ended - began) / 1e9, lasted
