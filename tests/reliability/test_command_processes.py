"""Command hooks that hang, crash, flood their output or start children: nothing they started
outlives the hook (``&``, ``nohup``, ``setsid`` and double-forked children included), a deny
it printed stands at once whatever its children do, and no zombie of this process is left.

Checked from ``/proc``: every process a command started writes its pid to a file; afterwards
none of them runs, and this process has no new zombie child. Each case runs as an interceptor
(``PreToolUse``, on the agent's path) and as an observer (``PostToolUse``, on the worker).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otelhooks.testing import TestPipeline
from tests.reliability._parts import is_running, zombie_children

TIMEOUT_S = 1.0  # a Python reaper starts first: room for it on a loaded machine

# Each command writes the pid of every process it starts, one a line, to $PIDS.
COMMANDS = {
    "hangs-with-a-child": 'sleep 60 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; sleep 60',
    "crashes": 'echo $$ >> "$PIDS"; kill -SEGV $$',
    "floods-stdout": 'echo $$ >> "$PIDS"; head -c 8000000 /dev/zero | tr "\\0" x',
    "leaves-a-child-holding-stdout": 'sleep 60 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; exit 0',
    "child-of-a-child": (
        'sh -c \'sleep 60 & echo $! >> "$PIDS"; sleep 60\' & echo $! >> "$PIDS"; wait'
    ),
}


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def wait_until_gone(pids: list[int], within_s: float = 2.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while True:
        alive = [pid for pid in pids if is_running(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def run_tool(pipe: TestPipeline) -> None:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        step.run_tool("fs", "readFile", {"path": "a.txt"}, lambda path: "text")
    pipe.flush()


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
@pytest.mark.parametrize("behaviour", sorted(COMMANDS))
def test_nothing_a_command_started_outlives_the_event_and_no_zombie_is_left(
    pipe: TestPipeline,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    event: str,
    behaviour: str,
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    zombies_before = set(zombie_children())
    pipe.register(
        {"id": behaviour, "type": event, "command": COMMANDS[behaviour], "timeout": TIMEOUT_S}
    )
    started = time.monotonic()
    run_tool(pipe)
    assert time.monotonic() - started < TIMEOUT_S + 3
    pids = pids_in(pid_file)
    assert pids, "the command did not start"
    try:
        assert wait_until_gone(pids) == []
        assert set(zombie_children()) - zombies_before == set()
    finally:
        for pid in pids:  # only if the assertion failed: they are ours to end
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


DENY = (
    'printf \'%s\' \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
    '"permissionDecision": "deny", "permissionDecisionReason": "no reads"}}\''
)

# A child that keeps the hook's stdout open, started each way a shell script starts one.
CHILDREN = {
    "ampersand": 'sleep 60 & echo $! >> "$PIDS"',
    "nohup": 'nohup sleep 60 & echo $! >> "$PIDS"',
    "setsid": 'setsid sleep 60 & echo $! >> "$PIDS"',
    # the grandchild writes its own pid: the hook waits for it (else the reaper may end the
    # grandchild before it wrote, and the test could not tell it ever ran)
    "setsid-double-fork": "(setsid sh -c 'echo $$ >> \"$PIDS\"; exec sleep 60' &); "
    'until [ -s "$PIDS" ]; do sleep 0.01; done',
}


def run_tool_seen(pipe: TestPipeline) -> tuple[str, list[str]]:
    """One tool call: what the agent saw, and whether the tool ran."""
    ran: list[str] = []

    def tool(path: str) -> str:
        ran.append(path)
        return "text"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("fs", "readFile", {"path": "a.txt"}, tool)
    pipe.flush()
    return result.content, ran


def wait_for_pids(path: Path, count: int, within_s: float = 2.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while len(pids := pids_in(path)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return pids


@pytest.mark.parametrize("child", sorted(CHILDREN))
def test_a_deny_stands_at_once_whatever_a_child_holding_stdout_does(
    pipe: TestPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child: str
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    command = f"{CHILDREN[child]}; {DENY}; exit 0"
    pipe.register({"id": "guard", "type": "PreToolUse", "command": command, "timeout": 10})
    started = time.monotonic()
    content, ran = run_tool_seen(pipe)
    took = time.monotonic() - started
    pids = wait_for_pids(pid_file, 1)
    try:
        assert ran == [], "the denied tool ran"
        assert content == "no reads"
        assert took < 5, f"the deny waited {took:.1f}s for the child (timeout 10 s)"
        assert pids, "the child did not start"
        assert wait_until_gone(pids) == [], "a child of the hook outlived it"
    finally:
        for pid in pids:  # only if an assertion failed: they are ours to end
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("child", sorted(CHILDREN))
def test_a_child_with_its_output_detached_is_gone_with_the_hook_and_never_our_zombie(
    pipe: TestPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child: str
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    zombies_before = set(zombie_children())
    detached = f"{{ {CHILDREN[child]}; }} >/dev/null 2>&1 </dev/null"
    command = f'{detached}; while [ ! -s "$PIDS" ]; do sleep 0.01; done; exit 0'
    pipe.register({"id": "detach", "type": "PostToolUse", "command": command, "timeout": 5})
    run_tool(pipe)
    pids = pids_in(pid_file)
    try:
        assert pids, "the child did not start"
        assert wait_until_gone(pids) == [], "a detached child of the hook outlived it"
        assert set(zombie_children()) - zombies_before == set()
    finally:
        for pid in pids:
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_setsid_child_of_a_hook_that_times_out_is_gone_too(
    pipe: TestPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    command = f"{CHILDREN['setsid']}; sleep 60"
    pipe.register({"id": "slow", "type": "PreToolUse", "command": command, "timeout": TIMEOUT_S})
    _, ran = run_tool_seen(pipe)
    pids = pids_in(pid_file)
    try:
        assert ran == ["a.txt"]  # a timeout is a non-blocking error
        assert pids
        assert wait_until_gone(pids) == []
    finally:
        for pid in pids:
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_without_the_reaper_a_deny_still_stands_at_once_and_the_group_is_killed(
    pipe: TestPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    # Where the reaper cannot run (not Linux): the process group is killed when the hook
    # exits, and a child holding stdout is drained for DRAIN_S, never waited for; where no
    # pidfd can be opened, the exit is polled for.
    from otelhooks._actions import _command_process

    monkeypatch.setattr(_command_process, "_reaper_argv", lambda: None)
    if not pidfd:
        monkeypatch.setattr(_command_process, "_pidfd", lambda proc: None)
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    command = f"{CHILDREN['ampersand']}; {DENY}; exit 0"
    pipe.register({"id": "guard", "type": "PreToolUse", "command": command, "timeout": 10})
    started = time.monotonic()
    content, ran = run_tool_seen(pipe)
    pids = pids_in(pid_file)
    try:
        assert (content, ran) == ("no reads", [])
        assert time.monotonic() - started < 5
        assert wait_until_gone(pids) == []
    finally:
        for pid in pids:
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_hook_runs_with_the_default_signal_dispositions(tmp_path: Path) -> None:
    # Python ignores SIGPIPE and SIGXFSZ; the reaper, a Python process, must not pass that on
    # (a `yes | head -1` in a guard would then fail with EPIPE instead of ending quietly).
    from otelhooks import ToolCallEvent
    from otelhooks._actions import build_hook

    hook = build_hook({"id": "sig", "type": "PreToolUse", "command": "grep SigIgn /proc/$$/status"})
    event = ToolCallEvent(toolCallId="c", identifier="fs", apiName="readFile")
    outcome = hook.action.run(event)  # type: ignore[attr-defined]
    ignored = int(outcome.stdout.split()[1], 16)
    assert ignored & (1 << (signal.SIGPIPE - 1)) == 0
    assert ignored & (1 << (signal.SIGXFSZ - 1)) == 0


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_a_hook_does_not_outlive_the_bridge_killed_while_it_runs(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """The bridge that ran the hook keeps its timeout; killed (`SIGKILL`: no handler runs), or
    hung up on (a closed terminal), it used to leave the hook and its child running on, here
    for 30 s, unsupervised."""
    pids = tmp_path / "pids"
    command = 'sleep 30 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; sleep 30'
    (tmp_path / "hooks.yaml").write_text(
        "hooks:\n  - id: slow\n    type: PreToolUse\n    timeout: 30\n"
        f"    command: {json.dumps(command)}\n"
    )
    event = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_use_id": "t1", "cwd": str(tmp_path),
             "tool_input": {"command": "ls"}}  # fmt: skip
    bridge = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "hooks.yaml",
         "--state", str(tmp_path / "state.sqlite3")],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=tmp_path, env={**os.environ, "PIDS": str(pids)},
    )  # fmt: skip
    try:
        assert bridge.stdin is not None
        bridge.stdin.write(json.dumps(event).encode())
        bridge.stdin.close()
        started = wait_for_pids(pids, 2, within_s=30)
        assert len(started) == 2, "the hook did not start"
        bridge.send_signal(sig)
        bridge.wait(10)
        assert wait_until_gone(started, within_s=5) == []
    finally:
        bridge.kill()
        bridge.wait()
        for pid in pids_in(pids):  # what a failing run left, by its pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
