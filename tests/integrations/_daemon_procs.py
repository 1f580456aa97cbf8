"""The hook client run as a coding agent runs it, its bridge daemon, and stopping that daemon.

A test project holds ``otelhooks.yaml`` (the ``no-rm`` guard plus whatever the test adds); each
event is a real ``python -I -S hook_client.py`` process, and the daemon it starts is a real
process found by its socket. :func:`runtime_folder` is the test's socket folder, and kills at
the end every daemon still serving in it (a stopped one never leaves at idle on its own)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code import hook_client

REPO = Path(__file__).resolve().parents[2]
NO_RM = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""
# a guard whose code is a Python file of the project (``guard.py``), and that file denying rm -rf
SCRIPT_GUARD_HOOKS = """\
hooks:
  - id: guard
    type: PreToolUse
    matcher: Bash
    script: guard.py:guard
"""
NO_RM_SCRIPT = """\
def guard(event):
    if "rm -rf" in str(event.args):
        event.deny("no rm")
"""
NO_ANSWER = (
    "otelhooks hook client: the bridge daemon did not answer; answered by the one-process bridge"
)


@dataclass(frozen=True)
class Hooked:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    # how long after its answer was due (by the bridge's own clock) the process ended: the
    # interpreter's start and imports, seconds on a loaded machine, are not in it
    past_due: float | None = None

    def deny_reason(self) -> str:
        # Codex CLI's deny is exit 2 too (its reason on stderr), Claude Code's exit 0
        assert self.returncode in (0, 2), self.stderr
        reason: str = json.loads(self.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        return reason


def deny_reason(dialect: str, stdout: str) -> str:
    """The deny reason of an answer in ``dialect``'s words (Gemini CLI's differ)."""
    answer = json.loads(stdout)
    if dialect == "gemini":
        assert answer["decision"] == "deny"
        return str(answer["reason"])
    specific = answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    return str(specific["permissionDecisionReason"])


def client_env(project: Path, runtime_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "CLAUDE_PROJECT_DIR": str(project),
        "OTELHOOKS_BRIDGE_STATE": str(project / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "60",
        **extra,
    }


def one_process(
    project: Path,
    event: dict[str, Any],
    *flags: str,
    dialect: str = "claude-code",
    clocked: bool = False,
    **env: str,
) -> Hooked:
    """The one-process bridge (``python -m otelhooks DIALECT --hooks otelhooks.yaml FLAGS``) run
    in ``project`` with ``event`` on stdin, its state file there unless ``env`` names one.

    ``clocked`` gives it the pipe a hook client gives it (``$OTELHOOKS_BRIDGE_LATE_FD``), on
    which it says when its answer is due: ``past_due`` is then measured from that time."""
    environ = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OTELHOOKS_BRIDGE_STATE": str(project / "state.sqlite3"),
        **env,
    }
    told_r, told_w = os.pipe() if clocked else (-1, -1)
    if clocked:
        environ[hook_client.LATE_FD_ENV] = str(told_w)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "otelhooks", dialect, "--hooks", "otelhooks.yaml", *flags],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=environ,
            cwd=project,
            timeout=60,
            check=False,
            pass_fds=(told_w,) if clocked else (),
        )
        ended = time.monotonic()
    except BaseException:
        if clocked:
            os.close(told_r)
        raise
    finally:
        if clocked:
            os.close(told_w)
    past_due = None
    if clocked:
        with os.fdopen(told_r, encoding="utf-8") as told:
            dues = [json.loads(line).get("due") for line in told.read().splitlines()]
        assert any(dues), "the bridge never said when its answer was due"
        past_due = ended - [due for due in dues if due][-1]
    return Hooked(done.returncode, done.stdout, done.stderr, ended - started, past_due)


def start_hook(
    env: dict[str, str], event: dict[str, Any] | str, *flags: str
) -> tuple[subprocess.Popen[str], float]:
    """The hook client with ``event`` on stdin (a text is sent as it is: an input not JSON)."""
    argv = [sys.executable, "-I", "-S", hook_client.__file__, "--hooks", "otelhooks.yaml", *flags]
    with tempfile.TemporaryFile() as stdin:
        stdin.write((event if isinstance(event, str) else json.dumps(event)).encode())
        stdin.seek(0)
        proc = subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
    return proc, time.monotonic()


def finish(started: tuple[subprocess.Popen[str], float], timeout_s: float = 40) -> Hooked:
    proc, at = started
    stdout, stderr = proc.communicate(timeout=timeout_s)
    return Hooked(proc.returncode, stdout, stderr, time.monotonic() - at)


def hook(env: dict[str, str], event: dict[str, Any] | str, *flags: str) -> Hooked:
    return finish(start_hook(env, event, *flags))


def bash(use_id: str, command: str, session: str = "s-live") -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use_id,
    }


def daemon_pid(runtime_dir: Path, timeout_s: float = 30) -> int:
    """The daemon listening in ``runtime_dir`` (the first event starts it in the background)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = serving(runtime_dir)
        if pids and list(runtime_dir.glob("cc-*.sock")):
            return pids[0]
        time.sleep(0.1)
    raise AssertionError(f"no bridge daemon serves a socket in {runtime_dir}")


def serving(runtime_dir: Path) -> list[int]:
    """Daemons (alive, stopped or not) whose socket is in ``runtime_dir``."""
    needle = f"--socket\0{runtime_dir}/".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "cmdline").read_bytes() and not gone(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def until_gone(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def runtime_folder() -> Iterator[Path]:
    """A fresh socket folder (``XDG_RUNTIME_DIR``), short because a socket path has at most 107
    bytes; at the end every daemon still serving in it is killed (a stopped one never leaves at
    idle on its own) and the folder removed."""
    path = Path(tempfile.mkdtemp(prefix="oh-"))
    try:
        yield path
    finally:
        for pid in serving(path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(path, ignore_errors=True)
