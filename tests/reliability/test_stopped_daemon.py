"""A bridge daemon that stops answering never silences a guard: real hook client processes, a
real daemon, ``SIGSTOP``.

A stopped daemon (or one whose event loop is blocked) still accepts connections, so the hook
client used to wait for it until the CLI killed the hook, and Codex CLI and Gemini CLI then run
the tool. The client now asks the daemon ``GET /alive`` after each second without an answer;
no answer within 2 s: it kills the daemon and the one-process bridge answers (the guard's deny),
a fresh daemon taking the next events."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    bash,
    client_env,
    daemon_pid,
    finish,
    gone,
    hook,
    serving,
    start_hook,
    until_gone,
)

pytestmark = pytest.mark.timeout(120)

# the probe's slice and timeout (3 s) and the one-process bridge (about 1 s of CPU) on a runner
# the client finds a stopped daemon in about 3 s and the one-process bridge answers in about
# 1 s; the margin is a loaded runner's, well under the CLIs' 30 s hook timeout
ANSWERED_WITHIN_S = 12.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    return tmp_path


def _stopped_daemon(env: dict[str, str], runtime_dir: Path, *flags: str) -> int:
    first = hook(env, bash("toolu_1", "ls"), *flags)  # answered meanwhile, starts the daemon
    assert first.returncode == 0, first.stderr
    pid = daemon_pid(runtime_dir)
    through = hook(env, bash("toolu_2", "rm -rf /"), *flags)  # the daemon answers
    assert through.deny_reason() == "rm -rf is not allowed here"
    assert NO_ANSWER not in through.stderr
    os.kill(pid, signal.SIGSTOP)
    return pid


@pytest.mark.parametrize("flags", [(), ("--fail-closed",)], ids=["default", "fail-closed"])
def test_a_stopped_daemon_is_killed_and_the_guard_still_denies(
    project: Path, runtime_dir: Path, flags: tuple[str, ...]
) -> None:
    env = client_env(project, runtime_dir)
    pid = _stopped_daemon(env, runtime_dir, *flags)
    denied = hook(env, bash("toolu_3", "rm -rf /home"), *flags)
    assert denied.deny_reason() == "rm -rf is not allowed here"  # the one-process bridge's
    assert NO_ANSWER in denied.stderr
    assert denied.seconds < ANSWERED_WITHIN_S
    assert until_gone(pid)
    # killed, the daemon cannot say what it leaves undone: the client says it in its log
    (log,) = runtime_dir.glob("cc-*.log")
    killed = [line for line in log.read_text().splitlines() if "killed the bridge daemon" in line]
    assert len(killed) == 1
    assert "no answer to GET /alive within 2 s" in killed[0]
    assert "their hooks run again" in killed[0]
    assert killed[0].endswith(f" pid={pid}")
    # the next events: a fresh daemon, no probe to wait for
    fresh = daemon_pid(runtime_dir)
    assert fresh != pid
    again = hook(env, bash("toolu_4", "rm -rf /srv"), *flags)
    assert again.deny_reason() == "rm -rf is not allowed here"
    assert NO_ANSWER not in again.stderr
    assert again.seconds < 3.0


def test_two_clients_at_once_with_a_stopped_daemon_both_get_the_guards_answer(
    project: Path, runtime_dir: Path
) -> None:
    env = client_env(project, runtime_dir)
    pid = _stopped_daemon(env, runtime_dir)
    both = [start_hook(env, bash(f"toolu_{n}", "rm -rf /")) for n in (5, 6)]
    for done in [finish(started) for started in both]:
        assert done.deny_reason() == "rm -rf is not allowed here"
        assert NO_ANSWER in done.stderr
        assert done.seconds < ANSWERED_WITHIN_S
    assert until_gone(pid)
    daemon_pid(runtime_dir)
    time.sleep(2)  # a second fresh daemon finds the lock taken and leaves
    assert len(serving(runtime_dir)) == 1


def test_a_daemon_continued_while_the_client_probes_answers_and_lives(
    project: Path, runtime_dir: Path
) -> None:
    env = client_env(project, runtime_dir)
    pid = _stopped_daemon(env, runtime_dir)
    started = start_hook(env, bash("toolu_7", "rm -rf /"))
    time.sleep(1.5)  # past the first slice: the client's probe is waiting
    os.kill(pid, signal.SIGCONT)
    done = finish(started)
    assert done.deny_reason() == "rm -rf is not allowed here"
    assert NO_ANSWER not in done.stderr  # answered by the daemon
    assert not gone(pid)


LOCKER = '''\
import os, sqlite3, time


def hold(event):
    """Takes the state file's write lock and keeps it, once (in the daemon)."""
    marker = os.environ["LOCKED_MARKER"]
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return None
    db = sqlite3.connect(os.environ["OTELHOOKS_BRIDGE_STATE"], isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    with open(marker, "w") as out:
        out.write("locked")
    time.sleep(600)
'''


def test_a_daemon_stopped_holding_the_state_files_lock_does_not_hold_the_guard(
    project: Path, runtime_dir: Path
) -> None:
    """The one-process bridge waits 30 s for a locked state file (past the CLI's timeout): the
    stopped daemon's lock goes with it when the client kills it."""
    (project / "locker.py").write_text(LOCKER)
    rule = "  - {id: lock, type: PreToolUse, matcher: Lock, script: locker.py:hold, timeout: 600}\n"
    (project / "otelhooks.yaml").write_text(NO_RM + rule)
    marker = project / "locked"
    env = client_env(project, runtime_dir, LOCKED_MARKER=str(marker))
    assert hook(env, bash("toolu_1", "ls")).returncode == 0
    pid = daemon_pid(runtime_dir)
    locking = start_hook(env, {**bash("toolu_2", "x"), "tool_name": "Lock"})
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text() == "locked"):
        assert time.monotonic() < deadline, "the daemon never took the lock"
        time.sleep(0.05)
    os.kill(pid, signal.SIGSTOP)
    denied = hook(env, bash("toolu_3", "rm -rf /"))
    assert denied.deny_reason() == "rm -rf is not allowed here"
    assert denied.seconds < ANSWERED_WITHIN_S
    assert NO_ANSWER in finish(locking).stderr


def test_a_daemon_stopped_late_in_an_event_leaves_the_one_process_bridge_only_the_time_left(
    project: Path, runtime_dir: Path
) -> None:
    """The CLI's timeout runs from when it started the hook, not from when the daemon was found
    stopped: the one-process bridge that answers instead has what is left of the answer time.
    Before, it had the whole answer time again: a daemon stopped 20 s into an event was answered
    at 48 s, past the 30 s ``install`` gives the hook, and the CLI ran the tool."""
    started = project / "started"
    slow = f"""\
  - id: slow-check
    type: PreToolUse
    matcher: Bash
    on_error: block
    timeout: 30
    command: >-
      case "$HOOK_TOOL_INPUT" in *slow*) touch {started}; sleep 20;; esac
"""
    (project / "otelhooks.yaml").write_text(NO_RM + slow)
    answer_s = 8.0  # the client knows the late answer once the bridge started: 3-4 s loaded
    env = client_env(project, runtime_dir, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S=f"{answer_s:g}")
    # --fail-closed: the late answer is a deny even when the one-process bridge, given what is
    # left, has not loaded the hooks yet (on a loaded runner) and cannot know one blocks
    flag = "--fail-closed"
    assert hook(env, bash("toolu_1", "ls"), flag).returncode == 0  # starts the daemon
    pid = daemon_pid(runtime_dir)
    denied = hook(env, bash("toolu_2", "rm -rf /"), flag)
    assert denied.deny_reason() == "rm -rf is not allowed here"
    asked = start_hook(env, bash("toolu_3", "slow"), flag)
    deadline = time.monotonic() + 30
    while not started.exists():  # the daemon runs the hook
        assert time.monotonic() < deadline, "the daemon never ran the slow hook"
        time.sleep(0.02)
    os.kill(pid, signal.SIGSTOP)
    late = finish(asked)
    assert NO_ANSWER in late.stderr  # 3 s to find the daemon stopped, then the bridge
    assert f"no answer within {answer_s:g} s" in late.deny_reason()
    # the answer time and the client's check (0.25 s and 0.5 s of grace); before, 12 s and more
    assert late.seconds < answer_s + 2.5
