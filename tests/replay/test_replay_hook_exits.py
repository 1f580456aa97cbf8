"""A hook's ``sys.exit()`` on the main thread (``otelhooks replay`` calls Python hooks there) is
that hook's failure, not the end of the replay; a signal handler's ``SystemExit`` still is the
application's (real ``otelhooks replay`` and Python processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
EXITS = """
import sys

def leave(event):
    sys.exit(0)
"""
POLICY = """
hooks:
  - id: leaves
    type: beforeToolCall
    script: hooks.py:leave
"""


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _recording(path: Path) -> Path:
    span = {
        "traceId": "ab" * 16,
        "spanId": "01" * 8,
        "name": "execute_tool exec",
        "kind": 1,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "status": {},
        "attributes": [
            _kv("gen_ai.operation.name", "execute_tool"),
            _kv("gen_ai.tool.name", "exec"),
            _kv("otelhooks.tool.identifier", "shell"),
            _kv("gen_ai.tool.call.arguments", '{"cmd": "rm -rf build"}'),
        ],
    }
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    path.write_text(json.dumps(request) + "\n")
    return path


def test_a_script_hook_calling_sys_exit_fails_the_replay_gate_instead_of_ending_it(
    tmp_path: Path,
) -> None:
    # Before: the hook's SystemExit was taken for the application's (main thread) and ended
    # the replay at exit 0 with no report: a CI gate with --fail-on error passed.
    (tmp_path / "hooks.py").write_text(EXITS)
    (tmp_path / "policy.yaml").write_text(POLICY)
    recording = _recording(tmp_path / "rec.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "replay", str(recording), "--hooks", "policy.yaml",
         "--format", "json", "--fail-on", "error"],
        capture_output=True, text=True, cwd=tmp_path, timeout=150,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert any("leaves: SystemExit: 0" in json.dumps(e) for e in events), done.stdout


DRY_RUN_UNDER_SIGTERM = """
import os, signal, sys, time
from otelhooks import HooksEngine
from otelhooks.events import ToolCallEvent

def on_term(signum, frame):
    raise SystemExit(3)

signal.signal(signal.SIGTERM, on_term)

def slow(event):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)

engine = HooksEngine([{"id": "slow", "type": "beforeToolCall", "handler": slow}])
event = ToolCallEvent(toolCallId="c1", identifier="shell", apiName="exec", args={})
engine.dry_run("before_tool_call", event, inline=True)
print("went on")
"""


def test_a_sigterm_handlers_system_exit_during_an_inline_hook_still_ends_the_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DRY_RUN_UNDER_SIGTERM],
        capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "went on" not in done.stdout
