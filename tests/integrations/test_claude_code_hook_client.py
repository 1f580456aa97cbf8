"""The fast command form: the standard-library hook client and the bridge daemon it starts.

Real processes: the client run by path with ``python -I -S`` as ``install`` writes it, the
daemon it spawns, the ``no-rm`` command hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import hook_client, session_trace_id
from tests.integrations._daemon_procs import NO_RM

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    return tmp_path


def _env(project: Path, runtime_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "CLAUDE_PROJECT_DIR": str(project),
        "OTELHOOKS_CLAUDE_STATE": str(project / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "10",  # the daemon leaves soon after the test
    }


def _hook(env: dict[str, str], event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-I", "-S", hook_client.__file__, "--hooks", "otelhooks.yaml"]
    argv += ["--traces-out", "traces.jsonl"]
    return subprocess.run(
        argv, input=json.dumps(event), env=env, capture_output=True, text=True, timeout=30
    )


def _bash(name: str, use_id: str, command: str) -> dict[str, Any]:
    return {
        "session_id": "s-client",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use_id,
        "tool_response": "ok",
    }


def _wait_for_socket(runtime_dir: Path) -> Path:
    deadline = time.monotonic() + 90  # the daemon starts in the background: seconds under load
    while time.monotonic() < deadline:
        sockets = list(runtime_dir.glob("cc-*.sock"))
        if sockets:
            return sockets[0]
        time.sleep(0.1)
    raise AssertionError("the bridge daemon never listened")


def _deny_reason(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    reason: str = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    return reason


def test_the_client_starts_a_daemon_and_both_answer_like_the_bridge(
    project: Path, runtime_dir: Path
) -> None:
    env = _env(project, runtime_dir)
    first = _hook(env, _bash("PreToolUse", "toolu_a", "rm -rf /"))  # no daemon yet
    assert _deny_reason(first) == "rm -rf is not allowed here"
    sock = _wait_for_socket(runtime_dir)
    assert sock.stat().st_mode & 0o777 == 0o600
    second = _hook(env, _bash("PreToolUse", "toolu_b", "rm -rf /home"))  # through the daemon
    assert _deny_reason(second) == "rm -rf is not allowed here"
    allowed = _hook(env, _bash("PreToolUse", "toolu_c", "ls"))
    assert allowed.returncode == 0
    assert allowed.stdout.strip() == ""


def test_a_tool_span_started_by_one_form_is_ended_by_the_other(
    project: Path, runtime_dir: Path
) -> None:
    env = _env(project, runtime_dir)
    assert _hook(env, _bash("PreToolUse", "toolu_x", "ls")).returncode == 0  # one-process
    _wait_for_socket(runtime_dir)
    assert _hook(env, _bash("PostToolUse", "toolu_x", "ls")).returncode == 0  # the daemon
    lines = [json.loads(line) for line in (project / "traces.jsonl").read_text().splitlines()]
    spans = [
        span
        for line in lines
        for rs in line["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if span["name"] == "execute_tool Bash"
    ]
    assert len(spans) == 1
    assert spans[0]["traceId"] == format(session_trace_id("s-client"), "032x")


def test_a_socket_folder_others_can_write_to_is_not_trusted(
    project: Path, runtime_dir: Path
) -> None:
    runtime_dir.chmod(0o777)
    env = _env(project, runtime_dir)
    result = _hook(env, _bash("PreToolUse", "toolu_d", "rm -rf /"))
    assert _deny_reason(result) == "rm -rf is not allowed here"  # the one-process bridge
    time.sleep(0.5)
    assert not list(runtime_dir.glob("cc-*"))
