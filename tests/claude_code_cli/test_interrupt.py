"""A turn a person stops, with the real Claude Code CLI: its spans end then, not at the next prompt.

Claude Code 2.1.337 fires ``Interrupt`` when a person stops the turn (here an SDK host's
``interrupt`` control request while a ``Bash`` call runs: ``source`` ``user``, ``reason`` ``stop``)
and sends no ``Stop``, nor a ``PostToolUse`` for the call it stopped. Before, otelhooks did not
map the event: the turn and the call stayed open until the session ended (or the next prompt
came, minutes later in a person's session), and the call then ended as an error,
``SessionEnded``. The session here goes on for a few seconds after the interrupt, so a span ended
by the session's end is told from one ended by the interrupt.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks import semconv as sc
from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import (
    CLAUDE,
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
    session_env,
)

pytestmark = pytest.mark.timeout(150)

SLOW = "sleep 20; echo slept"  # (Claude Code refuses a sleep of 60 s as a way to wait)


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message) + "\n"


def _wait_for(path: Path, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never reached {path}")


def _interrupted_session(project: Path, tmp_path: Path, started: Path) -> int:
    """One stream-json session whose model runs ``SLOW``; once its ``PreToolUse`` is seen (in
    ``started``), the host interrupts, waits 4 s and ends the session. The time (ns) it ended
    the session at."""
    api = MessagesApi([ToolStep("toolu_slow", "Bash", {"command": SLOW})])
    argv = [str(CLAUDE), "-p", "--permission-mode", "bypassPermissions", "--verbose"]
    argv += ["--input-format", "stream-json", "--output-format", "stream-json"]
    with serve_messages_api(api) as url:
        env = {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": url, **session_env(tmp_path)}
        with subprocess.Popen(
            argv, cwd=project, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ) as cli:  # fmt: skip
            assert cli.stdin is not None
            cli.stdin.write(_line({"type": "user", "message": {"role": "user", "content": "go"}}))
            cli.stdin.flush()
            _wait_for(started, "toolu_slow", 60)
            interrupt = {"type": "control_request", "request_id": "i1"}
            cli.stdin.write(_line({**interrupt, "request": {"subtype": "interrupt"}}))
            cli.stdin.flush()
            time.sleep(4)
            ended_at = time.time_ns()
            out, err = cli.communicate(timeout=60)
    answers = [json.loads(x) for x in out.splitlines() if '"control_response"' in x]
    assert [a["response"]["subtype"] for a in answers] == ["success"], err[-2000:]
    return ended_at


def test_an_interrupt_ends_the_turn_and_the_call_it_stopped_then(tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    started, stopped = tmp_path / "started.jsonl", tmp_path / "stopped.json"
    (project / ".claude" / "otelhooks.yaml").write_text(
        "hooks:\n"
        f"  - {{id: started, type: PreToolUse, matcher: Bash, command: 'cat >> {started}'}}\n"
        f"  - {{id: stopped, type: Interrupt, matcher: user, command: 'cat > {stopped}'}}\n"
    )
    traces = tmp_path / "traces.jsonl"
    install(project / ".claude" / "settings.local.json", traces_out=str(traces))
    ended_at = _interrupted_session(project, tmp_path, started)

    spans = {s["name"]: s for s in read_otlp_json_lines(traces)}
    turn, call = spans["invoke_agent claude-code"], spans["execute_tool Bash"]
    assert turn["attributes"][sc.COMPLETE_REASON] == "interrupted"
    assert call["attributes"][sc.TOOL_OUTCOME] == "interrupted"
    assert "code" not in call.get("status", {})  # a person's stop is not the tool's error
    for span in (turn, call):
        assert int(span["endTimeUnixNano"]) < ended_at  # not the session's end
        (marker,) = [e for e in span["events"] if e["name"] == "claude_code.Interrupt"]
        said = marker["attributes"]
        assert (said["claude_code.source"], said["claude_code.reason"]) == ("user", "stop")
    # the observer on Interrupt heard which call was stopped, and why
    heard = json.loads(stopped.read_text())
    assert (heard["event"], heard["toolCallId"], heard["rejectionReason"]) == (
        "on_stop_by_human_intervention",
        "toolu_slow",
        "stop",
    )
