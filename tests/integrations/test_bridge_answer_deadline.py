"""The one-process bridge answers within its time, whatever a hook does.

A hook that hangs, or a ``script:`` guard whose module never finishes importing (a policy fetched
from a host that does not answer), used to keep the hook process until the CLI's own timeout,
after which Codex CLI and Gemini CLI run the tool, ``--fail-closed`` or not. The process now
answers at ``$OTELHOOKS_BRIDGE_DAEMON_ANSWER_S`` (default 25 s, the daemon's own limit) as a
bridge problem is answered: a deny under ``--fail-closed``, else exit 1; and a deny whatever
the flag when a guard deciding the event had a longer timeout of its own, so was cut short
(``_guard_time``). Real processes, each CLI's dialect.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    deny_reason,
    finish,
    gone,
    hook,
    one_process,
    runtime_folder,
    start_hook,
    until_gone,
)

pytestmark = pytest.mark.timeout(90)

HOOKS = """\
hooks:
  - id: guard
    type: PreToolUse
    matcher: Bash|run_shell_command
    script: guard.py:guard
"""
HANGS_ON_IMPORT = "import time\ntime.sleep(3600)\n\ndef guard(event):\n    pass\n"
HANGS_IN_THE_CALL = "import time\n\ndef guard(event):\n    time.sleep(3600)\n"
EVENTS = {
    "claude-code": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1"},
    "codex": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1"},
    "gemini": {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"},
}


# how long past its due time a late answer may end the process: the answer's clock is a thread,
# and on a loaded machine it waits its turn. Measured from the time the bridge itself gave, so
# the interpreter's start and the imports before the clock (10-20 s at a load of 20) are not in
# it; a process kept until the CLI's timeout still is.
GRACE_S = 8


def _bridge(
    project: Path, dialect: str, *flags: str, answer_s: str = "2"
) -> tuple[int, str, str, float]:
    """Exit code, stdout, stderr, and how long past its due time the answer came."""
    event = {"session_id": "s1", "tool_input": {"command": "rm -rf build"}, **EVENTS[dialect]}
    done = one_process(
        project,
        event,
        *flags,
        dialect=dialect,
        clocked=True,
        OTELHOOKS_BRIDGE_DAEMON_ANSWER_S=answer_s,
    )
    assert done.past_due is not None
    return done.returncode, done.stdout, done.stderr, done.past_due


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
@pytest.mark.parametrize("guard", [HANGS_ON_IMPORT, HANGS_IN_THE_CALL], ids=["import", "call"])
def test_a_guard_that_hangs_is_denied_in_time_under_fail_closed(
    tmp_path: Path, dialect: str, guard: str
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(HOOKS)
    (tmp_path / "guard.py").write_text(guard)
    code, stdout, stderr, past_due = _bridge(tmp_path, dialect, "--fail-closed")
    assert code == (2 if dialect == "codex" else 0), stderr  # Codex's deny: exit 2 too
    # a guard that hangs in its call was cut short (its 10 s timeout was not up): it says so
    cut = ", hook guard cut short (its timeout: 10 s)" if guard == HANGS_IN_THE_CALL else ""
    assert deny_reason(dialect, stdout) == (
        f"otelhooks could not check this tool call (fail-closed): no answer within 2 s{cut}"
    )
    assert "gave no answer in time" in stderr
    assert 0 <= past_due < GRACE_S  # at its time, not before


def test_without_fail_closed_hooks_that_never_loaded_are_a_failing_hook_in_time(
    tmp_path: Path,
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(HOOKS)
    (tmp_path / "guard.py").write_text(HANGS_ON_IMPORT)
    code, stdout, stderr, past_due = _bridge(tmp_path, "codex")
    assert (code, stdout) == (1, "")  # no guard known to be cut short: a failing hook
    assert "otelhooks codex: no answer within 2 s" in stderr
    assert 0 <= past_due < GRACE_S  # at its time, not before


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
def test_without_fail_closed_a_guard_cut_short_is_denied_in_time(
    tmp_path: Path, dialect: str
) -> None:
    """The answer time (2 s, set outright) ends before the guard's own timeout (10 s): the
    guard never had the time it asked for, so the late answer is a deny that says so. Before,
    it was exit 1, a failing hook, and every CLI ran the tool. The reason claims no
    ``--fail-closed`` (it said "(fail-closed)", a mode that was not on)."""
    (tmp_path / "otelhooks.yaml").write_text(HOOKS)
    (tmp_path / "guard.py").write_text(HANGS_IN_THE_CALL)
    code, stdout, stderr, past_due = _bridge(tmp_path, dialect)
    assert code == (2 if dialect == "codex" else 0), stderr  # Codex's deny: exit 2 too
    assert deny_reason(dialect, stdout) == (
        "otelhooks could not check this tool call, so it is blocked: "
        "no answer within 2 s, hook guard cut short (its timeout: 10 s)"
    )
    assert 0 <= past_due < GRACE_S  # at its time, not before


def test_an_answer_in_time_is_the_guards_and_an_approval_hook_extends_the_time(
    tmp_path: Path,
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(
        HOOKS
        + "  - id: ask\n    type: PreToolUse\n    matcher: Read\n"
        + "    approval: {timeout: 30, default: deny}\n"
    )
    (tmp_path / "guard.py").write_text(
        "import time\n\ndef guard(event):\n    time.sleep(3)\n    event.deny('no rm')\n"
    )
    # 3 s is past the 2 s answer time, but an approval hook of 30 s is configured: it waits
    code, stdout, stderr, _ = _bridge(tmp_path, "claude-code", "--fail-closed")
    assert code == 0, stderr
    assert deny_reason("claude-code", stdout) == "no rm"


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
def test_an_answer_in_time_is_in_the_clis_own_words(tmp_path: Path, dialect: str) -> None:
    (tmp_path / "otelhooks.yaml").write_text(HOOKS)
    (tmp_path / "guard.py").write_text("def guard(event):\n    event.deny('no rm')\n")
    code, stdout, stderr, _ = _bridge(tmp_path, dialect, "--fail-closed")
    assert code == (2 if dialect == "codex" else 0), stderr  # Codex's deny: exit 2 too
    assert deny_reason(dialect, stdout) == "no rm"
    if dialect == "gemini":
        assert set(json.loads(stdout)) == {"decision", "reason"}


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
def test_what_a_guard_prints_never_joins_the_answer(tmp_path: Path, dialect: str) -> None:
    """A CLI reads stdout as the answer only when it is the answer alone: a guard's ``print``
    (or a shell it starts) in front of the deny made it plain text to Claude Code, and the tool
    ran (``tests/claude_code_cli/test_guard_prints.py``). What a hook prints goes to stderr."""
    (tmp_path / "otelhooks.yaml").write_text(HOOKS)
    (tmp_path / "guard.py").write_text(
        "import os\n\ndef guard(event):\n    print('checking', end='')\n"
        "    os.system('printf shell')\n    event.deny('no rm')\n"
    )
    code, stdout, stderr, _ = _bridge(tmp_path, dialect)
    assert code == (2 if dialect == "codex" else 0), stderr  # Codex's deny: exit 2 too
    assert deny_reason(dialect, stdout) == "no rm"  # stdout is the answer's JSON, whole
    assert "checking" in stderr
    assert "shell" in stderr


# Hooks run one after another: two slow audit hooks use up the answer time before the guard,
# which blocks when it fails, has had its own timeout.
SLOW_NEIGHBOURS = """\
hooks:
  - id: audit-a
    type: PreToolUse
    matcher: Bash|run_shell_command
    command: sleep 60
    timeout: 10
  - id: audit-b
    type: PreToolUse
    matcher: Bash|run_shell_command
    command: sleep 60
    timeout: 10
  - id: policy
    type: PreToolUse
    matcher: Bash|run_shell_command
    script: guard.py:guard
    on_error: ON_ERROR
"""


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
def test_a_guard_that_blocks_when_it_fails_is_a_deny_when_no_answer_came_in_time(
    tmp_path: Path, dialect: str
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SLOW_NEIGHBOURS.replace("ON_ERROR", "block"))
    (tmp_path / "guard.py").write_text("def guard(event):\n    pass\n")
    code, stdout, stderr, past_due = _bridge(tmp_path, dialect)  # no --fail-closed
    assert code == (2 if dialect == "codex" else 0), stderr  # Codex's deny: exit 2 too
    assert deny_reason(dialect, stdout) == (
        "otelhooks could not check this tool call, so it is blocked: "
        "no answer within 2 s (hook policy blocks when it fails)"
    )
    assert 0 <= past_due < GRACE_S  # at its time, not before


def test_guards_that_continue_when_they_fail_but_were_cut_short_are_a_deny(
    tmp_path: Path,
) -> None:
    """Their timeouts (32 s, one after another) were not up at the 2 s answer time: the late
    answer blocks, naming them. Before, exit 1, and Claude Code ran the tool."""
    (tmp_path / "otelhooks.yaml").write_text(SLOW_NEIGHBOURS.replace("ON_ERROR", "continue"))
    (tmp_path / "guard.py").write_text("def guard(event):\n    pass\n")
    code, stdout, stderr, _ = _bridge(tmp_path, "claude-code")
    assert code == 0, stderr
    assert deny_reason("claude-code", stdout) == (
        "otelhooks could not check this tool call, so it is blocked: no answer within 2 s, "
        "hook audit-a, audit-b, policy cut short (their timeouts: 32 s)"
    )


def test_the_daemon_answers_late_as_the_one_process_bridge_does(tmp_path: Path) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SLOW_NEIGHBOURS.replace("ON_ERROR", "block"))
    (tmp_path / "guard.py").write_text("def guard(event):\n    pass\n")
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="2")
        assert hook(env, bash("t0", "ls", session="s0")).returncode == 0
        daemon_pid(runtime)
        answered = hook(env, bash("t1", "rm -rf build"))
    assert answered.deny_reason() == (
        "otelhooks could not check this tool call, so it is blocked: "
        "no answer within 2 s (hook policy blocks when it fails)"
    )
    assert answered.seconds < 15


# A guard whose regular expression backtracks for minutes: ``re`` holds the interpreter's lock
# for the whole match, so no thread of the process (the answer's clock, the daemon's event loop)
# runs until it ends.
HOLDS_THE_LOCK = """\
import re


def guard(event):
    re.match(r"(a+)+$", "a" * 40 + "b")
"""
LOCKING_GUARD = """\
hooks:
  - id: policy
    type: PreToolUse
    matcher: Bash
    script: guard.py:guard
    on_error: block
"""


def _bridges_of(project: Path) -> list[int]:
    """One-process bridges (not daemons) running the hooks of ``project``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = any(str(project).encode() in arg for arg in argv)
        if ours and b"claude-code" in argv and b"daemon" not in argv and not gone(int(proc.name)):
            found.append(int(proc.name))
    return found


# Claude Code's timeout for the hook (``install`` writes it into the command as
# ``--hook-timeout``): the bound that matters, for past it Claude Code ends the client and runs
# the tool. The bridge's time is that less the margin, 7 s, counted from the client's start.
HOOK_TIMEOUT = 12
NOT_CHECKED = "otelhooks could not check this tool call (fail-closed): no answer within 7 s"


def _denied(done: Hooked) -> str:
    """The reason of a deny: the bridge's (its JSON), or the hook client's own when the bridge
    had not started in time (exit 2 and the reason on stderr, a block in each CLI)."""
    if done.returncode == 2 and not done.stdout:
        return next(line for line in done.stderr.splitlines() if "could not check" in line)
    return done.deny_reason()


def test_a_guard_holding_the_interpreter_lock_is_denied_in_time_through_the_hook_client(
    tmp_path: Path,
) -> None:
    """The bridge's own clock is a thread and stops with the rest; the hook client, which holds
    no such lock, prints the late answer the bridge told it, at the time it told, and kills the
    bridge. Before, the client waited for the bridge until the CLI's timeout (the tool ran).
    The time counts from the client's start, and on a loaded machine the bridge's start
    (interpreter, imports: 20 s at a load of 30) may not end in it: the client then answers on
    its own. Before, it waited for the bridge to tell it anything, and answered 15-20 s late."""
    (tmp_path / "otelhooks.yaml").write_text(LOCKING_GUARD)
    (tmp_path / "guard.py").write_text(HOLDS_THE_LOCK)
    flags = ("--fail-closed", "--hook-timeout", str(HOOK_TIMEOUT))
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="7")
        # no daemon yet: the one-process bridge answers (and a daemon starts for what follows)
        first = hook(env, bash("t1", "rm -rf build", session="s1"), *flags)
        assert _denied(first).startswith(NOT_CHECKED), first.stderr
        assert first.seconds < HOOK_TIMEOUT
        daemon = daemon_pid(runtime)
        # the daemon's event loop stops too: the client kills it (3 s of the 7) and the
        # one-process bridge answers late the same way
        second = hook(env, bash("t2", "rm -rf build", session="s2"), *flags)
        assert _denied(second).startswith(NOT_CHECKED), second.stderr
        assert NO_ANSWER in second.stderr
        assert second.seconds < HOOK_TIMEOUT
        assert until_gone(daemon)
    deadline = time.monotonic() + 30
    while _bridges_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _bridges_of(tmp_path) == []  # killed, not left matching for minutes


@pytest.mark.timeout(150)
def test_a_guard_holding_the_interpreter_lock_ends_with_its_bridge_when_the_client_is_killed(
    tmp_path: Path,
) -> None:
    """The CLI kills the hook client (SIGKILL) while its one-process bridge runs a guard holding
    the interpreter's lock. Nobody is left to end the bridge: its own clock is a thread that
    cannot run. Before, it spun on a core for good (still there minutes later); now the kernel
    ends it (``SIGALRM``) its answer time and the exports' time and 30 s after it began."""
    (tmp_path / "otelhooks.yaml").write_text(LOCKING_GUARD)
    (tmp_path / "guard.py").write_text(HOLDS_THE_LOCK)
    with runtime_folder() as runtime:
        env = client_env(
            tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="3", OTELHOOKS_SHUTDOWN_TIMEOUT="0"
        )
        client, began = start_hook(env, bash("t1", "rm -rf build", session="s1"), "--fail-closed")
        try:
            deadline = time.monotonic() + 30
            while not _bridges_of(tmp_path) and time.monotonic() < deadline:
                time.sleep(0.05)
            (bridge,) = _bridges_of(tmp_path)
            client.kill()
            client.communicate()
            assert until_gone(bridge, 3 + 30 + 30)  # its time, the margin, a loaded machine's
            assert time.monotonic() - began > 3 + 30 - 1  # by the kernel's alarm, not earlier
        finally:
            for pid in _bridges_of(tmp_path):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _cpu_s(pid: int) -> float:
    """The CPU time ``pid`` has used (user and system, all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.timeout(150)
def test_a_daemon_a_lock_holding_guard_froze_ends_when_its_client_is_killed(
    tmp_path: Path,
) -> None:
    """The same through the bridge daemon: its event loop stops with the guard, and the client
    that would have ended it is killed. Before, the daemon spun on a core for good (its idle
    time is counted by that loop); now the kernel ends it the answer time and 30 s after its
    loop last ran."""
    (tmp_path / "otelhooks.yaml").write_text(LOCKING_GUARD)
    (tmp_path / "guard.py").write_text(HOLDS_THE_LOCK)
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="3")
        read = {**bash("t0", "ls", session="s1"), "tool_name": "Read", "tool_input": {}}
        assert hook(env, read, "--fail-closed").returncode == 0  # no guard on Read: a daemon starts
        daemon = daemon_pid(runtime)
        client, _ = start_hook(env, bash("t1", "rm -rf build", session="s1"), "--fail-closed")
        try:
            spent, deadline = _cpu_s(daemon), time.monotonic() + 30
            while _cpu_s(daemon) - spent < 1.0 and time.monotonic() < deadline:
                time.sleep(0.1)  # until its guard spins (the event reached it)
            assert _cpu_s(daemon) - spent >= 1.0
            client.kill()
            client.communicate()
            spinning = time.monotonic()
            assert until_gone(daemon, 3 + 30 + 30)  # its time, the margin, a loaded machine's
            # by the kernel's alarm (the idle time, 60 s, would have come later)
            assert time.monotonic() - spinning < 50
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(b")")[2].split()[1]) == pid:
            found.append(int(proc.name))
    return found


def _stop_the_bridge(client: int) -> int:
    """Stop (``SIGSTOP``) the one-process bridge ``client`` starts, as soon as it is seen: a
    bridge that gets no CPU, as on a machine so loaded that its imports take longer than the
    hook's time. The daemon the client starts beside it is left alone."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in _children(client):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"claude-code" in argv and b"daemon" not in argv:
                os.kill(pid, signal.SIGSTOP)
                return pid
        time.sleep(0.005)
    raise AssertionError("the hook client started no one-process bridge")


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "not-fail-closed"])
def test_a_bridge_that_gets_no_cpu_is_answered_by_the_hook_client_in_time(
    tmp_path: Path, fail_closed: bool
) -> None:
    """The hook client's time runs from its own start, and it answers on its own when the
    one-process bridge has told it nothing by then (still starting). Before, it waited for the
    bridge to say when its answer was due: with a bridge that got no CPU (its imports take 20 s
    at a load of 30), past Claude Code's timeout, which ended it and ran the tool."""
    (tmp_path / "otelhooks.yaml").write_text(LOCKING_GUARD)
    (tmp_path / "guard.py").write_text(HOLDS_THE_LOCK)
    flags = ("--hook-timeout", str(HOOK_TIMEOUT), *(("--fail-closed",) if fail_closed else ()))
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime)  # the default answer time, 25 s: the limit's 7
        proc, at = start_hook(env, bash("t1", "rm -rf build", session="s1"), *flags)
        bridge = _stop_the_bridge(proc.pid)
        try:
            done = finish((proc, at), HOOK_TIMEOUT + 30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(bridge, signal.SIGKILL)
    assert done.seconds < HOOK_TIMEOUT
    assert done.seconds > 5  # at its time (7 s from its start), not at once
    assert until_gone(bridge)  # killed, not left stopped
    if fail_closed:
        assert (done.returncode, _denied(done)) == (2, f"{NOT_CHECKED}: the bridge had not started")
    else:  # the bridge's answer to hooks it could not load in time: a failing hook, said so
        assert (done.returncode, done.stdout) == (1, "")
        assert "otelhooks hook client: no answer within 7 s: the bridge had not started" in (
            done.stderr
        )


# a guard's code that ends its process, and how the answer says the process ended
CRASHES = {
    "os._exit(0)": ("import os\n\n\ndef guard(event):\n    os._exit(0)\n", "ended (exit 0)"),
    "a segmentation fault": (
        "import os, signal\n\n\ndef guard(event):\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
        "was killed by signal 11",
    ),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("crash", list(CRASHES))
def test_a_guard_that_ends_its_process_is_answered_as_late_through_the_hook_client(
    tmp_path: Path, crash: str
) -> None:
    """A hook that ends the bridge's process before the answer (``os._exit(0)``: exit 0 and no
    output, which the CLI takes for an allow; a fault in a C extension) leaves the late answer
    the bridge told the client: a deny for a guard that blocks when it fails, saying how the
    bridge ended (it said "no answer within 120 s" of a bridge that ended at once). The daemon's
    process ends the same way, and the one-process bridge after it."""
    code, how = CRASHES[crash]
    (tmp_path / "otelhooks.yaml").write_text(LOCKING_GUARD)
    (tmp_path / "guard.py").write_text(code)
    # an answer time far past what a loaded machine takes to start the bridges (20-25 s at a
    # load of 20): the late answer must come as the bridge ends, not when it is due
    expected = (
        "otelhooks could not check this tool call, so it is blocked: "
        f"the bridge {how} before it answered (hook policy blocks when it fails)"
    )
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="120")
        first = finish(start_hook(env, bash("t1", "rm -rf build", session="s1")), 110)
        assert first.deny_reason() == expected
        assert "the bridge ended without an answer" in first.stderr
        daemon_pid(runtime)
        second = finish(start_hook(env, bash("t2", "rm -rf build", session="s2")), 110)
        assert second.deny_reason() == expected
        assert NO_ANSWER in second.stderr
    assert first.seconds < 60  # half the answer time
    assert second.seconds < 60


# A redaction that blocks when it fails and does not answer in time: the tool's output must not
# reach the model (it was exit 1, a non-blocking error: the CLI passed the output on)
SLOW_REDACTION = """\
hooks:
  - id: redact
    type: tool_result_persist
    intercept: true
    on_error: block
    timeout: 60
    script: guard.py:redact
"""
TOOL_ENDS = {
    "claude-code": {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t9"},
    "codex": {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t9"},
    "gemini": {"hook_event_name": "AfterTool", "tool_name": "run_shell_command"},
}


def _slow_redaction(project: Path) -> None:
    (project / "otelhooks.yaml").write_text(SLOW_REDACTION)
    (project / "guard.py").write_text("import time\n\ndef redact(event):\n    time.sleep(3600)\n")


@pytest.mark.parametrize("dialect", ["claude-code", "codex", "gemini"])
def test_a_late_redaction_that_blocks_when_it_fails_withholds_the_output(
    tmp_path: Path, dialect: str
) -> None:
    _slow_redaction(tmp_path)
    event = {
        "session_id": "s1",
        "tool_input": {"command": "cat .env"},
        "tool_response": {"stdout": "KEY=S-42-SECRET", "stderr": ""},
        **TOOL_ENDS[dialect],
    }
    done = one_process(
        tmp_path, event, dialect=dialect, clocked=True, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="2"
    )
    # Codex's block is exit 2 too (read behind a line a BASH_ENV file prints)
    assert done.returncode == (2 if dialect == "codex" else 0), done.stderr
    assert "S-42" not in done.stdout
    assert "blocks when it fails" in done.stdout
    assert done.past_due is not None
    assert 0 <= done.past_due < GRACE_S


def test_the_daemon_withholds_a_late_redactions_output_too(tmp_path: Path) -> None:
    _slow_redaction(tmp_path)
    end = {
        **bash("t1", "cat .env"),
        "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": "KEY=S-42-SECRET", "stderr": ""},
    }
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="2")
        assert hook(env, bash("t0", "ls", session="s0")).returncode == 0
        daemon_pid(runtime)
        answered = hook(env, end)
    assert answered.returncode == 0, answered.stderr
    body = json.loads(answered.stdout)
    assert body["decision"] == "block"
    assert body["hookSpecificOutput"]["updatedToolOutput"]["stdout"].startswith(
        "[tool output withheld"
    )
    assert "S-42" not in answered.stdout
    assert answered.seconds < 15
