"""The Claude Code bridge daemon (through the real hook client): a ``PreToolUse`` whose guard
never ran before the daemon's answer time (its call waited behind two slow calls of its
session) is denied, naming the guard, where before it was the bridge's failure (exit 1, a
non-blocking error: Claude Code ran ``rm -rf``). The time a call waited for a thread is not
time its guards had. Real processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    bash,
    client_env,
    daemon_pid,
    finish,
    hook,
    runtime_folder,
    start_hook,
)

pytestmark = pytest.mark.timeout(120)

HOOKS = """\
hooks:
  - id: slow-read-audit
    type: PreToolUse
    matcher: Read
    timeout: 8
    command: echo started >> STARTED; sleep 8
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    timeout: 1
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def _read(use_id: str) -> dict[str, object]:
    return {
        "session_id": "s-busy",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": f"/tmp/{use_id}"},
        "tool_use_id": use_id,
    }


def test_a_guard_that_never_ran_in_the_daemon_is_a_deny(tmp_path: Path) -> None:
    started = tmp_path / "started"
    (tmp_path / "otelhooks.yaml").write_text(HOOKS.replace("STARTED", str(started)))
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="3")
        # the first event starts the daemon (answered by the one-process bridge)
        assert hook(env, bash("t0", "ls", session="s-busy")).returncode == 0
        daemon_pid(runtime)
        reads = [start_hook(env, _read(f"toolu_read_{n}")) for n in range(2)]
        deadline = time.monotonic() + 30
        while not (started.exists() and started.read_text().count("started") == 2):
            assert time.monotonic() < deadline, "the reads' guards did not start"
            time.sleep(0.02)
        rm = hook(env, bash("toolu_rm", "rm -rf ~/work", session="s-busy"))
        for read in reads:
            finish(read)
    # before: exit 1, "no answer within 3 s", and Claude Code ran the tool
    reason = rm.deny_reason()
    assert "no-rm" in reason, (rm.returncode, rm.stdout, rm.stderr)
    assert "never ran" in reason, reason
