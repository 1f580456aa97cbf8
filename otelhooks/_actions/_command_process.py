"""A command hook's process: started so that its children die with it, read until it exits.

- On Linux the hook runs under :mod:`._command_reaper`, a small Python parent that makes itself
  a child subreaper: when the hook exits, every process it started — ``&`` jobs, ``nohup``,
  ``setsid`` and double-forked daemons included — is killed and reaped before the reaper exits.
  Elsewhere (or when the interpreter cannot be found) the hook runs directly and only its process
  group is killed: a child that left the group with ``setsid`` survives there.
- Its stdin is the event in a memory file (Linux's ``memfd_create``), not a pipe otelhooks feeds:
  ``grep -q`` reads a one-line event from a pipe in 64 KiB slices and searches the whole line so
  far after each, so a 30 MB tool input (three copies in the stdin document, 94 MB) took it 8 s
  from a pipe and 0.8 s from a file, and the guard's 10 s ran out (a failing guard, after which
  the tool ran). A command that exits without reading it costs nothing either. Elsewhere (or when
  no memory file can be made) a pipe is fed as before.
- Either way the process runs in its own session, and otelhooks reads its output until *it*
  exits (a pidfd wakes the reader at once), then drains what is left for at most
  :data:`DRAIN_S`: a child that keeps stdout open cannot hold the hook's answer back.
- At the timeout the reaper gets ``SIGTERM`` (it ends everything below it and exits), and
  :data:`GRACE_S` later the whole process group gets ``SIGKILL``. The reaper gets ``SIGTERM``
  too when this process dies (killed with ``SIGKILL``, a hang-up): nothing is left to keep the
  hook's timeout, so the hook ends with it.

:func:`run_once` is that whole lifetime for one event: started, fed, read, ended and reaped,
and what it did told as a :class:`CommandOutcome` (a value, never an exception).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from otelhooks._actions._command_output import OUTPUT_CAP_BYTES, Capture

__all__ = [
    "DRAIN_S",
    "GRACE_S",
    "CommandOutcome",
    "Exchange",
    "exchange",
    "kill_group",
    "reaped_by_wrapper",
    "run_once",
    "spawn",
    "terminate",
]

DRAIN_S: Final = 0.2
GRACE_S: Final = 0.5
_READ_CHUNK: Final = 64 * 1024
_REAPER: Final = str(Path(__file__).with_name("_command_reaper.py"))
_POLL_S: Final = 0.02  # without a pidfd: how often to ask whether the process exited


def _reaper_argv() -> list[str] | None:
    """The reaper's command line, or None where it cannot run (not Linux, no interpreter)."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return None
    return [sys.executable, "-I", "-S", _REAPER]


def spawn(
    argv: list[str], env: dict[str, str], stdin: int = subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session, under the reaper where it can run, its stdin a pipe
    (``proc.stdin``) or the file descriptor ``stdin``.

    Raises:
        OSError: the program cannot be started (for a list command, checked before the reaper
            starts so that the error says what a direct start would).
    """
    reaper = _reaper_argv()
    if reaper is not None and shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
        # What execvp would say, said here: the reaper's child can only exit 127.
        reaper = None
    return subprocess.Popen(
        [*reaper, str(os.getpid()), *argv] if reaper is not None else argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        close_fds=True,
    )


def reaped_by_wrapper(proc: subprocess.Popen[bytes]) -> bool:
    args = proc.args
    return isinstance(args, list) and len(args) > 3 and args[3] == _REAPER


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """``SIGKILL`` the process and its process group (call it before the process is reaped,
    so that the group id cannot have been reused)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process has exited, without reaping it (its pid stays ours)."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _pidfd(proc: subprocess.Popen[bytes]) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(proc.pid)
    except OSError:
        return None
    return fd


class Exchange:
    """What came back: stdout and stderr (capped), and whether the deadline passed first."""

    __slots__ = ("err", "out", "timed_out")

    def __init__(self) -> None:
        self.out = Capture()
        self.err = Capture()
        self.timed_out = False


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """End the process at its timeout, with everything it started."""
    if reaped_by_wrapper(proc) and not _exited(proc):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)  # the reaper ends everything below it
        give_up = time.monotonic() + GRACE_S
        while not _exited(proc) and time.monotonic() < give_up:
            time.sleep(_POLL_S)
    kill_group(proc)


def exchange(proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> Exchange:
    """Feed stdin and read stdout and stderr until the process exits (then drain for at most
    :data:`DRAIN_S`) or the deadline passes. The process is left unreaped: the caller ends
    its group (:func:`kill_group`, or :func:`terminate` after a timeout), then reaps it."""
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None or not data
    assert stdout is not None
    assert stderr is not None
    result = Exchange()
    captures = {stdout.fileno(): result.out, stderr.fileno(): result.err}
    offset = 0
    pidfd = _pidfd(proc)
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(stdout, selectors.EVENT_READ)
        sel.register(stderr, selectors.EVENT_READ)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ)
        if data and stdin is not None:
            os.set_blocking(stdin.fileno(), False)
            sel.register(stdin, selectors.EVENT_WRITE)
        elif stdin is not None:
            stdin.close()
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and pidfd is None and _exited(proc):
                    exited_at = now
                if exited_at is not None:
                    # Exited: what is left is the last of its output, or a child's: drained
                    # briefly, never waited for.
                    reading = any(key.fd in captures for key in sel.get_map().values())
                    if not reading or now >= exited_at + DRAIN_S:
                        break
                    limit = exited_at + DRAIN_S
                elif now >= deadline:
                    result.timed_out = True
                    break
                else:
                    limit = deadline if pidfd is not None else min(deadline, now + _POLL_S)
                for key, _ in sel.select(limit - now):
                    if key.fd == pidfd:
                        sel.unregister(pidfd)
                        exited_at = time.monotonic()
                    elif key.fileobj is stdin:
                        try:
                            offset += os.write(key.fd, data[offset : offset + _READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            offset = len(data)  # the command does not read its stdin: fine
                        if offset >= len(data):
                            sel.unregister(stdin)
                            stdin.close()
                    else:
                        chunk = os.read(key.fd, _READ_CHUNK)
                        if chunk:
                            captures[key.fd].add(chunk)
                        else:
                            sel.unregister(key.fileobj)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    return result


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What one run of a command did (a value, never an exception).

    Attributes:
        exit_code: the exit status; ``None`` when it was killed at its timeout or never started;
            negative when a signal ended it.
        stdout, stderr: the captured text, at most :data:`OUTPUT_CAP_BYTES` bytes each.
        stdout_bytes, stderr_bytes: how many bytes the process wrote in all.
        timed_out: killed (with its process group) at the timeout.
        start_error: why the process could not be started.
        duration_s: wall time.
        pid: the process id (also its process group id).
    """

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    timed_out: bool = False
    start_error: str | None = None
    duration_s: float = 0.0
    pid: int | None = None

    @property
    def truncated(self) -> bool:
        """Some output went past the cap and was dropped."""
        return self.stdout_bytes > OUTPUT_CAP_BYTES or self.stderr_bytes > OUTPUT_CAP_BYTES


def _memory_file(data: bytes) -> int | None:
    """A file descriptor of an anonymous memory file holding ``data``, read from its start;
    ``None`` where none can be made (not Linux, out of memory or descriptors): then a pipe."""
    make = getattr(os, "memfd_create", None)
    if make is None or not data:
        return None
    try:
        fd: int = make("otelhooks-hook-stdin", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        left = memoryview(data)
        while left:
            left = left[os.write(fd, left) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        return None
    return fd


def run_once(argv: list[str], env: dict[str, str], data: bytes, timeout: float) -> CommandOutcome:
    """Run ``argv`` with ``data`` on stdin for at most ``timeout`` seconds; everything it
    started is ended and it is reaped before this returns (never raises)."""
    started = time.monotonic()
    deadline = started + timeout
    held = _memory_file(data)
    try:
        proc = spawn(argv, env) if held is None else spawn(argv, env, stdin=held)
    except (OSError, ValueError) as exc:
        problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return CommandOutcome(
            exit_code=None,
            start_error=f"cannot start {argv[0]!r}: {problem}",
            duration_s=time.monotonic() - started,
        )
    finally:
        if held is not None:
            os.close(held)  # the child has its own; the memory goes when it closes that
    timed_out = True
    try:
        talk = exchange(proc, data if held is None else b"", deadline)
        timed_out = talk.timed_out
        out, err = talk.out, talk.err
    finally:
        # Ended before it is reaped, so the group id cannot have been reused; whatever it
        # started goes with it, whether it exited or timed out.
        if timed_out:
            terminate(proc)
        else:
            kill_group(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()  # reap: no zombie of ours
    return CommandOutcome(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.kept.decode("utf-8", "replace"),
        stderr=err.kept.decode("utf-8", "replace"),
        stdout_bytes=out.seen,
        stderr_bytes=err.seen,
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        pid=proc.pid,
    )
