"""The small parent a command hook runs under on Linux, so that nothing the hook started
outlives it.

Run as ``python -I -S _command_reaper.py PARENT_PID PROGRAM ARGS...``: it makes itself a *child
subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process the hook starts that loses its
parent (a ``setsid`` or double-forked daemon, a ``nohup`` job whose shell exited) is re-parented to
it rather than to init, where nobody could find it again. It forks and executes the hook, waits
for it, then kills (``SIGKILL``) and reaps every process left below it, round after round until
none is left, and exits as the hook did (the same code, or the same signal). ``SIGTERM`` (sent by
otelhooks at the hook's timeout) does the same at once, without waiting for the hook; so does
the death of the process that started it (``PR_SET_PDEATHSIG``), which kept the hook's timeout:
a bridge killed with ``SIGKILL``, or by a hang-up, left its hook running unsupervised.

What it cannot catch: a process the hook has another program start for it (``systemd-run``,
``at``, a container runtime, an ssh session) is not below it. It uses only the standard library
and imports nothing from otelhooks (``-S``: not even site-packages).
"""

# try/except/pass rather than contextlib.suppress: contextlib's imports would cost every hook run.
# ruff: noqa: SIM105

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PR_SET_CHILD_SUBREAPER = 36
_EXEC_FAILED = 127  # what a shell exits with for a command it cannot run


class _Stop(BaseException):
    """SIGTERM: end the hook and everything below it now."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _children(me: int) -> list[int]:
    """The processes whose parent is ``me`` (read from /proc: /proc/PID/task/TID/children
    needs a kernel option that is not always there)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def _end_everything() -> None:
    """Kill every process below this one and reap it, until none is left. A process whose
    parent is killed is re-parented here (we are its subreaper) and killed in the next round."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    me = os.getpid()
    while True:
        try:
            # Fast path: no child at all (the common case: the hook left nothing behind).
            if os.waitpid(-1, os.WNOHANG) != (0, 0):
                continue  # reaped one: look again
        except ChildProcessError:
            return
        for child in _children(me):
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _let_go_of_the_pipes() -> None:
    """Only the hook holds its stdin, stdout and stderr: when it and its children are gone,
    otelhooks sees end of file."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _exit_as(status: int) -> None:
    """Exit with the hook's exit code, or die of the signal that ended it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            pass
        try:
            import resource  # only here: each import costs every hook run

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the hook dumped its core, if any
        except (ImportError, OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    """Run ``argv[1:]`` as the hook for the process ``argv[0]``; end everything below it when it
    ends, or when that process does (see the module)."""
    signal.signal(signal.SIGTERM, _stop)
    parent, argv = int(argv[0]), argv[1:]
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux after all: the process group is still killed
    status: int | None = None
    try:
        if os.getppid() != parent:
            raise _Stop  # it died before the signal was set: nobody keeps the hook's timeout
        pid = os.fork()
        if pid == 0:
            try:
                # What subprocess's restore_signals does: Python ignores SIGPIPE and SIGXFSZ,
                # and an ignored signal stays ignored across exec.
                for sig in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                os.execvp(argv[0], argv)
            except OSError as exc:
                os.write(2, f"otelhooks: cannot start {argv[0]!r}: {exc.strerror}\n".encode())
            finally:
                os._exit(_EXEC_FAILED)
        _let_go_of_the_pipes()
        _, status = os.waitpid(pid, 0)
    except _Stop:
        pass
    _end_everything()
    _exit_as(status if status is not None else signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1:])
