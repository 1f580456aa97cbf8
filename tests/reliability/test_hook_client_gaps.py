"""The hook client's and its bridges' last gaps: an event too large, a tuning variable out of
range, an answer nobody heard, a socket folder that is not private, a large event on a guard's
stdin. Real hook client processes (``python -I -S hook_client.py``, as ``install`` writes it),
the real one-process bridge and bridge daemon they start, real command guards."""

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

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    REPO,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    hook,
    one_process,
    start_hook,
)
from tests.reliability.test_hook_client_edges import (
    NO_RM_ON_STDIN,
    SLOW_NO_RM,
    kill_and_read_the_unheard_deny,
)

pytestmark = pytest.mark.timeout(180)


def test_a_30_mb_event_on_a_grep_guards_stdin_is_judged_in_time(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """A guard reading the event on its stdin with ``grep -q`` (the starter guard's way). The
    stdin document holds the tool input three times (``args``, ``toolInput``, ``tool_input``):
    a 30 MB ``Write`` is 94 MB there. GNU grep reads a one-line input from a pipe in 64 KiB
    slices and searches the whole line so far after each: 8 s for those 94 MB (0.8 s from a
    file). Before, the guard's 10 s ran out and the bridge answered that the hook failed and
    did not decide (exit 0: Claude Code ran the tool); its deny came after, not applied. Now
    the command reads the event from a memory file and the guard denies."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir)
    big = "rm -rf / # " + "x" * (30 << 20)
    answer = hook(env, bash("toolu_1", big))  # no daemon yet: the one-process bridge
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr[-2000:]
    assert "timed out" not in answer.stderr


@pytest.mark.parametrize(
    ("tool", "guarded"), [("Bash", True), ("Read", False)], ids=["guarded", "unguarded"]
)
def test_an_event_past_the_daemons_limit_is_refused_saying_its_size(
    tmp_path: Path, runtime_dir: Path, tool: str, guarded: bool
) -> None:
    """An event past the daemon's 64 MiB body limit (a ``Write`` of a 65 MiB file). Before, the
    daemon answered it as a body without the hook client's environment (``the hook client sent
    no environment``, the limit's own word lost) and closed the connection while the client
    still sent: the client said the daemon did not answer and ran the one-process bridge, whose
    guard then ran out of its time on the event. Now the daemon reads the rest of it and
    refuses it saying its size and the limit: a deny naming the guard that could not check it,
    or, when no guard would judge it, the bridge's failure (exit 1) with the same words."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_0", "ls")).returncode == 0  # starts the daemon
    daemon_pid(runtime_dir)
    event = bash("toolu_1", "rm -rf / # " + "x" * (65 << 20))
    event["tool_name"] = tool
    answer = hook(env, event)
    assert NO_ANSWER not in answer.stderr
    assert "over the bridge daemon's limit of 67108864 bytes" in answer.stderr, answer.stderr
    if guarded:
        reason = answer.deny_reason()
        assert "over the bridge daemon's limit of 67108864 bytes" in reason
        assert "hook no-rm could not check it" in reason
    else:
        assert answer.returncode == 1
        assert not answer.stdout


@pytest.mark.parametrize("value", ["1e-300", "0.0001"])
def test_an_answer_time_under_a_second_is_raised_to_it_and_said(
    tmp_path: Path, runtime_dir: Path, value: str
) -> None:
    """``OTELHOOKS_BRIDGE_DAEMON_ANSWER_S`` above 0 but too short for any answer. Before, every
    event was answered late (``no answer within 0.0001 s``, exit 1: the CLI ran the tool),
    through the one-process bridge and the daemon alike. Now it is raised to 1 s, saying so
    with the variable's name on the hook's stderr (the one-process bridge) and in the daemon's
    log, and the guard denies."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S=value)
    first = hook(env, bash("toolu_1", "rm -rf /"))  # the one-process bridge
    assert first.deny_reason() == "rm -rf is not allowed here", first.stderr
    said = [line for line in first.stderr.splitlines() if "below its least" in line]
    assert said, first.stderr
    assert "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S" in said[0]
    daemon_pid(runtime_dir)
    second = hook(env, bash("toolu_2", "rm -rf /srv"))  # the daemon
    assert second.deny_reason() == "rm -rf is not allowed here", second.stderr
    assert NO_ANSWER not in second.stderr
    (log,) = runtime_dir.glob("cc-*.log")
    assert "below its least" in log.read_text()


def test_a_shutdown_time_no_wait_can_take_loses_no_span(tmp_path: Path, runtime_dir: Path) -> None:
    """``OTELHOOKS_SHUTDOWN_TIMEOUT=1e308`` (a number, but past what a wait can take). Before,
    the one-process bridge's shutdown raised ``OverflowError`` in a thread's wait after its
    answer (``closing failed``, a traceback on the hook's stderr) and its spans never reached
    ``--traces-out``. Now it is logged as invalid and the default used."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    traces = tmp_path / "spans.jsonl"
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_SHUTDOWN_TIMEOUT="1e308")
    answer = hook(env, bash("toolu_1", "rm -rf /"), "--traces-out", str(traces))
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr
    assert "OverflowError" not in answer.stderr
    assert "invalid environment variable" in answer.stderr
    assert "OTELHOOKS_SHUTDOWN_TIMEOUT" in answer.stderr
    assert "toolu_1" in traces.read_text()


@pytest.mark.parametrize("how", ["mode-777", "another-users"])
def test_a_socket_folder_that_is_not_private_is_said(
    tmp_path: Path, runtime_dir: Path, how: str
) -> None:
    """A socket folder others can write to, or another user's (a shared ``/tmp/otelhooks-UID``
    made by someone else first, an ``XDG_RUNTIME_DIR`` of another account): no daemon there is
    trusted, and each event starts the one-process bridge, 1-3 s each. Before, nothing said
    so; now the hook client says it on stderr, naming the folder and why, and the guard still
    denies through the one-process bridge."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    folder = runtime_dir / "shared"
    folder.mkdir()
    if how == "mode-777":
        folder.chmod(0o777)
        why = "has mode 777: others can reach it"
    else:
        if os.getuid() != 0:
            pytest.skip("giving a folder to another user takes root")
        os.chown(folder, 65534, 65534)
        folder.chmod(0o700)
        why = "belongs to uid 65534, not to this user"
    env = client_env(tmp_path, folder)
    answer = hook(env, bash("toolu_1", "rm -rf /"))
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr
    said = [line for line in answer.stderr.splitlines() if "socket folder" in line]
    assert len(said) == 1, answer.stderr
    assert str(folder) in said[0]
    assert why in said[0]
    assert not list(folder.glob("cc-*.sock"))  # no daemon started there


def test_an_exit_2_deny_s_reason_comes_before_the_clients_notes(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """An exit-2 deny (Codex's and Gemini CLI's form, Claude Code's with ``--deny-mode exit2``)
    is its reason on stderr, which the CLI gives the model. Before, the client's own note of a
    socket folder it cannot trust came first, and the model read it before the reason."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    folder = runtime_dir / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    env = client_env(tmp_path, folder)
    answer = hook(env, bash("toolu_1", "rm -rf /"), "--deny-mode", "exit2")
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.splitlines()
    assert lines[0] == "rm -rf is not allowed here", answer.stderr
    assert "socket folder" in lines[-1], answer.stderr


def _reason_then_warning(answer: Hooked) -> None:
    """An exit-2 deny whose stderr starts with the guard's reason, the bridge's warning of
    ``OTELHOOKS_SHUTDOWN_TIMEOUT`` after it."""
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.splitlines()
    assert lines[0] == "rm -rf is not allowed here", answer.stderr
    assert any("OTELHOOKS_SHUTDOWN_TIMEOUT" in line for line in lines[1:]), answer.stderr


def test_an_exit_2_deny_s_reason_comes_before_the_bridge_s_own_warnings(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """The same through the one-process bridge the client starts, which itself warns at start
    of a variable it cannot read (``OTELHOOKS_SHUTDOWN_TIMEOUT=soon``). Before, its warning was
    the first line of the reason the model read; now its log lines follow the answer."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    folder = runtime_dir / "shared"
    folder.mkdir()
    folder.chmod(0o777)  # no daemon is trusted there: the one-process bridge answers
    env = client_env(tmp_path, folder, OTELHOOKS_SHUTDOWN_TIMEOUT="soon")
    answer = hook(env, bash("toolu_1", "rm -rf /"), "--deny-mode", "exit2")
    _reason_then_warning(answer)


def test_codex_s_deny_reason_comes_before_the_bridge_s_warnings(tmp_path: Path) -> None:
    """Codex CLI's deny from ``otelhooks codex`` (run by the CLI itself) is exit 2 with the
    reason on stderr: the bridge writes its own warnings after it."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    event = {**bash("call_1", "rm -rf /"), "cwd": str(tmp_path)}
    answer = one_process(tmp_path, event, dialect="codex", OTELHOOKS_SHUTDOWN_TIMEOUT="soon")
    _reason_then_warning(answer)


PRINTING_GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    script: guard.py:guard
"""
PRINTS = """\
import sys


def guard(event):
    print("guard: checking", event.args["command"])
    sys.stdout.write("guard: no newline, ")
    sys.stdout.flush()
    sys.stdout.buffer.write(b"bytes, ")
    print("guard: deciding")
    event.deny("rm -rf is not allowed here")
"""


def _reason_then_prints(answer: Hooked) -> None:
    """An exit-2 deny whose stderr starts with the guard's reason, what it printed after it,
    in the order printed."""
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.splitlines()
    assert lines[0] == "rm -rf is not allowed here", answer.stderr
    printed = [line for line in lines if line.startswith("guard: ")]
    assert printed == [
        "guard: checking rm -rf /",
        "guard: no newline, bytes, guard: deciding",
    ], answer.stderr


def test_a_python_guard_s_prints_come_after_its_exit_2_deny_s_reason(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """A guard's ``print`` goes to the hook process's stderr (its stdout is the answer's), and
    an exit-2 deny's stderr is the reason the model reads. Before, what the guard printed while
    it judged came first, and the model read the guard's debugging as the reason; now it
    follows the answer, as the bridge's log lines do. Through the hook client
    (``--deny-mode exit2``) and ``otelhooks codex`` as Codex CLI runs it."""
    (tmp_path / "otelhooks.yaml").write_text(PRINTING_GUARD)
    (tmp_path / "guard.py").write_text(PRINTS)
    folder = runtime_dir / "shared"
    folder.mkdir()
    folder.chmod(0o777)  # no daemon is trusted there: the one-process bridge answers
    env = client_env(tmp_path, folder)
    _reason_then_prints(hook(env, bash("toolu_1", "rm -rf /"), "--deny-mode", "exit2"))
    event = {**bash("call_1", "rm -rf /"), "cwd": str(tmp_path)}
    _reason_then_prints(one_process(tmp_path, event, dialect="codex"))


LEAVES_A_CHILD = """\
import pathlib, subprocess, time


HERE = pathlib.Path(__file__).parent


def guard(event):
    # a notifier it starts and does not wait for, on the process's stdout and stderr
    said = f"echo 'notifier: started'; touch '{HERE}/started'; exec sleep 120"
    child = subprocess.Popen(["sh", "-c", said])
    (HERE / "child.pid").write_text(str(child.pid))
    while not (HERE / "started").exists():  # what it says is said before the answer
        time.sleep(0.01)
    event.deny("rm -rf is not allowed here")
"""


@pytest.mark.parametrize("through", ["hook-client", "codex"])
def test_a_child_a_guard_leaves_running_holds_no_pipe_of_the_cli(
    tmp_path: Path, runtime_dir: Path, through: str
) -> None:
    """A Python guard starts a child and does not wait for it. The child inherits the hook
    process's descriptors 1 and 2; when those were the CLI's pipes, the hook's output never
    ended while the child ran, and Claude Code, which waits for that, ran the tool at the hook's
    timeout (``tests/claude_code_cli/test_guard_prints.py``). Now the process's own output goes
    to a file of its own, copied after the answer: the pipes end with the process, and what the
    child printed before it is on stderr, after the reason."""
    (tmp_path / "otelhooks.yaml").write_text(PRINTING_GUARD)
    (tmp_path / "guard.py").write_text(LEAVES_A_CHILD)
    try:
        if through == "hook-client":
            folder = runtime_dir / "shared"
            folder.mkdir()
            folder.chmod(0o777)  # no daemon is trusted there: the one-process bridge answers
            env = client_env(tmp_path, folder)
            answer = hook(env, bash("toolu_1", "rm -rf /"), "--deny-mode", "exit2")
        else:
            event = {**bash("call_1", "rm -rf /"), "cwd": str(tmp_path)}
            answer = one_process(tmp_path, event, dialect="codex")
        assert answer.seconds < 30, answer.stderr  # not the child's 120 s
        assert answer.returncode == 2, answer.stderr
        lines = answer.stderr.splitlines()
        assert lines[0] == "rm -rf is not allowed here", answer.stderr
        assert "notifier: started" in lines[1:], answer.stderr
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((tmp_path / "child.pid").read_text()), signal.SIGKILL)


def test_without_a_memory_file_the_answer_is_still_alone_on_stdout(tmp_path: Path) -> None:
    """Where no memory file can be made (no ``memfd_create``: another system, or the process
    out of descriptors), the process's own output goes to the CLI's stderr at once, as before
    it was held: the answer is still alone on stdout, the deny still a deny."""
    (tmp_path / "otelhooks.yaml").write_text(PRINTING_GUARD)
    (tmp_path / "guard.py").write_text(PRINTS)
    event = {**bash("call_1", "rm -rf /"), "cwd": str(tmp_path)}
    no_memfd = "import os, runpy; del os.memfd_create; runpy.run_module('otelhooks')"
    done = subprocess.run(
        [sys.executable, "-c", no_memfd, "codex", "--hooks", "otelhooks.yaml"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "s")},
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", done.stdout
    assert "rm -rf is not allowed here" in done.stderr
    assert "guard: checking rm -rf /" in done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_deny_the_one_process_bridge_gives_after_the_cli_killed_the_client_is_said(
    tmp_path: Path, runtime_dir: Path, signum: int
) -> None:
    """The first event of a session (no daemon yet): the one-process bridge, a child of the hook
    client, answers it. The CLI kills the client at a timeout shorter than the guard takes and
    runs the tool. Before, the bridge's deny went to a pipe nobody read, and nothing said it;
    the daemon, for the same, logs an error and counts it. Now the one-process bridge says it
    the same way, by the same rule, in the daemon's log beside the socket (the client's stderr
    went with it): the event, its ``tool_use_id``, the exit code and the deny, counted
    (``client_gone``)."""
    (tmp_path / "otelhooks.yaml").write_text(SLOW_NO_RM)
    env = client_env(tmp_path, runtime_dir)
    started = start_hook(env, bash("toolu_1", "rm -rf victim"))
    deadline = time.monotonic() + 30
    while not list(runtime_dir.glob("cc-*.log")) and time.monotonic() < deadline:
        time.sleep(0.05)  # the client chose the one-process bridge and started a daemon
    (log,) = runtime_dir.glob("cc-*.log")
    kill_and_read_the_unheard_deny(started[0], signum, log)
    assert "BrokenPipeError" not in log.read_text()


def test_a_socket_folder_that_is_a_link_is_said(tmp_path: Path, runtime_dir: Path) -> None:
    """``/tmp/otelhooks-UID`` made first by someone else as a link to a folder of theirs: the
    folder is refused, and the client says why."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    real = runtime_dir / "real"
    real.mkdir(mode=0o700)
    link = runtime_dir / "link"
    link.symlink_to(real)
    answer = hook(client_env(tmp_path, link), bash("toolu_1", "rm -rf /"))
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr
    said = [line for line in answer.stderr.splitlines() if "socket folder" in line]
    assert len(said) == 1, answer.stderr
    assert "is a symbolic link" in said[0]
    assert not list(real.glob("cc-*.sock"))
