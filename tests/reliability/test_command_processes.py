"""Command hooks that hang, crash, flood their output or start children: nothing they started
outlives the event (unless deliberately detached), and no zombie of this process is left.

Checked from ``/proc``: every process a command started writes its pid to a file; afterwards
none of them runs, and this process has no new zombie child. Each case runs as an interceptor
(``PreToolUse``, on the agent's path) and as an observer (``PostToolUse``, on the worker).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import Pipeline
from tests.reliability._parts import is_running, zombie_children

TIMEOUT_S = 0.5

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


def run_tool(pipe: Pipeline) -> None:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        step.run_tool("fs", "readFile", {"path": "a.txt"}, lambda path: "text")
    pipe.flush()


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
@pytest.mark.parametrize("behaviour", sorted(COMMANDS))
def test_nothing_a_command_started_outlives_the_event_and_no_zombie_is_left(
    pipe: Pipeline,
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


def test_a_deliberately_detached_child_keeps_running_but_is_never_our_zombie(
    pipe: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pid_file))
    zombies_before = set(zombie_children())
    # Output detached from the hook: documented to be left running, as the shell's `&` does.
    command = 'sleep 60 >/dev/null 2>&1 </dev/null & echo $! >> "$PIDS"; exit 0'
    pipe.register({"id": "detach", "type": "PostToolUse", "command": command, "timeout": 5})
    run_tool(pipe)
    (child,) = pids_in(pid_file)
    try:
        assert is_running(child)
        ppid = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert ppid != os.getpid()  # reparented: its exit is reaped by its new parent
    finally:
        os.kill(child, signal.SIGKILL)
    assert wait_until_gone([child]) == []
    assert set(zombie_children()) - zombies_before == set()
