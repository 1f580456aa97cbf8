"""A hook process's one answer (``otelhooks claude-code``, ``codex``, ``gemini``): the bridge's
(:func:`~otelhooks.integrations.coding_agents._run.run_hook`), printed alone on the stdout the CLI
reads, or, past its time, the late answer (:class:`Deadline`)."""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

import structlog

from otelhooks._actions._asker import Asker
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._held_output import HookOutput
from otelhooks.integrations.coding_agents._run import BridgeOptions, _run_hook, late_refusal
from otelhooks.integrations.coding_agents._unheard import tool_use_id_of, unheard

__all__ = ["Deadline", "answer_process"]

_log = structlog.get_logger("otelhooks")
# how often a one-process bridge started by the hook client looks whether the client still waits
_WATCH_S = 0.25


def answer_process(
    raw: bytes,
    options: BridgeOptions,
    output: HookOutput,
    *,
    answer_s: float,
    fixed: bool = False,
) -> int:
    """One hook process's whole answer (``otelhooks claude-code``, ``codex``, ``gemini``):
    :func:`run_hook`'s, printed, and its exit code.

    A hook that hangs, or a guard's module that never finishes importing, would otherwise keep
    the process until the CLI's own timeout, after which Codex CLI and Gemini CLI run the tool,
    ``--fail-closed`` or not. So when there is no answer within ``answer_s`` (the bridge
    daemon's own limit; an ``approval:`` hook's timeout and 5 s more when longer; the deciding
    hooks' own timeouts, one after another, and 5 s more when longer and ``answer_s`` is not
    ``fixed``: :mod:`._guard_time`), the answer a bridge problem gets is printed instead (a
    deny under ``--fail-closed``, else exit 1; a block when the guards had more time) and the
    process ends at once.

    The answer is written in UTF-8 whatever the locale, as the CLIs read it: in a Latin-1
    locale a deny reason with a character it lacks (U+2019) crashed the printing (exit 1, and
    the tool ran). It is alone on ``output``'s streams, the process's own output after it
    (:func:`~._held_output.hold`).
    """
    from otelhooks.integrations.claude_code.hook_client import ASKED_AT_ENV, STARTED_AT_ENV

    tell, asked, client = _waiting_client(), _asked_at(ASKED_AT_ENV), _asked_at(STARTED_AT_ENV)
    deadline = Deadline(
        raw,
        options,
        answer_s,
        output,
        tell=tell,
        started=asked if tell is not None else None,
        client_started=client if tell is not None else None,
        fixed=fixed,
    )
    previous = signal.signal(signal.SIGTERM, _end_hooks_then_die)
    asker, done, client = Asker(), threading.Event(), _client_pid()
    if tell is not None:
        deadline.waited_by(client, _client_log())
    if tell is not None and client is not None:
        threading.Thread(target=_watch_client, args=(asker, deadline, done), daemon=True).start()
    try:
        with asker.asking():
            response = _run_hook(raw, options, os.environ, deadline)
        if not deadline.answer(response):
            threading.Event().wait()  # the deadline's answer is being printed; it exits
    finally:
        done.set()
        deadline.cancel()
        signal.signal(signal.SIGTERM, previous)
        output.release()  # no answer printed (an error, a client gone): the lines all the same
    return response.exit_code


def _client_pid() -> int | None:
    """The pid of the hook client that started this process (``$OTELHOOKS_BRIDGE_CLIENT_PID``),
    taken out of the environment like its pipe."""
    from otelhooks.integrations.claude_code.hook_client import CLIENT_PID_ENV

    try:
        return int(os.environ.pop(CLIENT_PID_ENV, ""))
    except ValueError:
        return None


def _client_log() -> str | None:
    """Where to say that the answer reached nobody once the hook client is gone
    (``$OTELHOOKS_BRIDGE_CLIENT_LOG``, the daemon's log), taken out of the environment."""
    from otelhooks.integrations.claude_code.hook_client import CLIENT_LOG_ENV

    return os.environ.pop(CLIENT_LOG_ENV, None) or None


def _watch_client(asker: Asker, deadline: Deadline, done: threading.Event) -> None:
    """Withdraw the approvals asked for the event once the hook client waiting for this process
    is gone (its CLI killed it at the hook's timeout: this process, its child, is handed to
    another parent), as the daemon does when the client closes its connection: nobody may
    approve a call the CLI went on without. Said where :meth:`Deadline.gone` says it (the
    client's stderr went with it)."""
    while not done.wait(_WATCH_S):
        if deadline.gone():
            if asker.gone():
                _log.warning(
                    "the hook client stopped waiting before the answer (its CLI's hook timeout, "
                    "or an interrupt): its approvals are withdrawn; give the hook a timeout "
                    "longer than the approval's"
                )
            return


def _end_hooks_then_die(signum: int, frame: FrameType | None) -> None:
    # A CLI ends a hook at its timeout with SIGTERM (Claude Code does): the command hooks this
    # process runs would go on unsupervised, their own timeouts being this process's to keep.
    from otelhooks.integrations.claude_code._daemon_probe import end_hooks_of

    end_hooks_of(os.getpid())
    # the output held stays held: taking its lock here, in a signal handler, could wait
    # forever on the main thread it interrupted; the CLI reads nothing of a hook it ended
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _print(response: HookResponse, output: HookOutput) -> None:
    if response.stdout:
        print(response.stdout, file=output.answer, flush=True)
    if response.stderr:
        print(response.stderr, file=output.said, flush=True)
    output.release()  # what the process wrote so far follows the answer's reason


def _waiting_client() -> int | None:
    """The pipe of the hook client waiting for this process (``$OTELHOOKS_BRIDGE_LATE_FD``),
    taken out of the environment so that no command hook inherits its name; ``None`` when this
    process was not started by the client (or the variable names no pipe)."""
    import stat

    from otelhooks.integrations.claude_code.hook_client import LATE_FD_ENV

    try:
        fd = int(os.environ.pop(LATE_FD_ENV, ""))
        return fd if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode) else None
    except (ValueError, OSError):
        return None


def _asked_at(name: str) -> float | None:
    """A time of the waiting hook client (its ``time.monotonic()``) the variable ``name``
    gives: its start (``$OTELHOOKS_BRIDGE_CLIENT_START``), or when the answer time runs from,
    its start too, after a daemon that gave no answer (``$OTELHOOKS_BRIDGE_ASKED_AT``); taken
    out of the environment like the pipe; ``None`` when it names no time of the past."""
    try:
        asked = float(os.environ.pop(name, ""))
    except ValueError:
        return None
    return asked if math.isfinite(asked) and asked <= time.monotonic() else None


def _backstop(seconds: float) -> None:
    """Have the kernel end this process if it is still here ``seconds`` and a margin from now
    (the exports' own time and 30 s): ``SIGALRM``, whose default action ends a process with no
    code of its own run (a hook process's alone: :func:`answer_process` runs as the command).

    The deadline's thread needs the interpreter's lock, which a guard spinning in one C call (a
    user's regular expression) holds for good; the hook client then ends this process, but a
    client its CLI killed first (at the hook's timeout, or an interrupt) left it spinning on a
    core for as long as the machine ran."""
    from otelhooks._export._report import shutdown_timeout

    signal.alarm(math.ceil(seconds + shutdown_timeout() + 30.0))


class Deadline:
    """The one answer of a hook process: the bridge's, or, past its time, the late answer.

    Its clock is a thread, which runs only when it gets the interpreter's lock: a hook holding
    that lock in one long C call (a user's regular expression backtracking for minutes: ``re``
    never lets go of it) stops the clock with everything else, and the CLI's own timeout then
    runs the tool. So each time the late answer changes (the hooks known, an approval's longer
    time) it is also handed to the hook client that started this process (``tell``, a pipe),
    which holds no such lock: past the deadline, the client prints it and kills this process.
    """

    def __init__(
        self,
        raw: bytes,
        options: BridgeOptions,
        answer_s: float,
        output: HookOutput,
        *,
        tell: int | None = None,
        started: float | None = None,
        client_started: float | None = None,
        fixed: bool = False,
    ) -> None:
        from otelhooks.integrations.coding_agents._dialects import dialect_named
        from otelhooks.integrations.coding_agents._run import answer_limit

        self.raw, self.options, self.answer_s = raw, options, answer_s
        self._output = output
        # when the hook client read the event, if a daemon failed to answer it first: the time
        # that daemon used is gone from the CLI's timeout too
        now = time.monotonic()
        self.started = now if started is None else started
        # the waiting hook client's start: the CLI's timeout for the hook runs from there, and
        # this process's own start (20 s of imports at a load of 30) is in it
        self._client_started = client_started
        self._fixed, self._limit, self._approval_s = fixed, answer_limit(options), 0.0
        self.hooks: Sequence[Any] | None = None  # the hooks that decide the event, once known
        self.wait_s = self._wait()
        self._answered = threading.Lock()
        self._dialect = dialect_named(options.dialect)
        self._event = self._dialect.event_of(raw)
        self._tell = tell
        self._client: int | None = None  # the waiting hook client's pid, once known
        self._log: str | None = None
        self._gone = False
        self._going = threading.Lock()  # the main thread and the client's watcher both ask
        self._timer = self._arm(max(0.0, self._due() - now))
        self._told()

    def _arm(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self._late)
        timer.daemon = True
        timer.start()
        _backstop(seconds)
        return timer

    def allow_approvals(self, hooks: Sequence[Any]) -> None:
        """An ``approval:`` hook waits for a person up to its own timeout: that long, and 5 s
        more, before the late answer (as the daemon does)."""
        from otelhooks._actions._approval import longest_approval_of

        wait_s = longest_approval_of(hooks)
        if wait_s:
            self._approval_s = wait_s + 5.0
            self.wait_s = self._wait()
            self._told()

    def decided_by(self, hooks: Sequence[Any] | None) -> None:
        """The hooks that decide the event: they may take their own timeouts (the time is
        longer when they need it), and a late answer is a deny when one blocks when it fails
        or had more time than the bridge could wait."""
        self.hooks = hooks
        self.wait_s = self._wait()
        self._told()

    def _wait(self) -> float:
        """How long this event may take (:func:`~._guard_time.event_wait`), an approval's
        time included."""
        from otelhooks.integrations.coding_agents._guard_time import event_wait

        wait = event_wait(self.answer_s, self.hooks, fixed=self._fixed, limit_s=self._limit)
        return max(wait, self._approval_s)  # install covers an approval's time apart

    def waited_by(self, client: int | None, log: str | None) -> None:
        """The hook client waiting for the answer (its pid) and where to say, once it is gone,
        that the answer reached nobody (``log``, the daemon's log in the private socket
        folder: the client's stderr, this process's, went with it)."""
        self._client, self._log = client, log

    def gone(self) -> bool:
        """Whether the hook client waiting for the answer is gone: this process, its child,
        was handed to another parent (its CLI killed it at the hook's timeout). From then on
        this process's stderr is ``log``, where the daemon says the same of its answers."""
        if self._client is None or os.getppid() == self._client:
            return False
        with self._going:
            if not self._gone and self._log is not None:
                try:
                    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                    fd = os.open(self._log, flags, 0o600)
                except OSError:
                    pass  # nowhere to say it: the count stays
                else:
                    self._output.redirect(fd)
                    os.close(fd)
            self._gone = True
        return True

    def answer(self, response: HookResponse) -> bool:
        """Print ``response`` unless the late answer came first (then ``False``); nothing
        when the hook client is gone (nobody reads it)."""
        if not self._answered.acquire(blocking=False):
            return False
        self._tell_client({"answered": response.exit_code})
        if not self.gone():
            _print(response, self._output)
        return True

    def cancel(self) -> None:
        self._timer.cancel()
        _backstop(0.0)  # what is left (the exports, the end) in the backstop's time

    def _due(self) -> float:
        """When the late answer is due: the event's time from ``started``, never past the
        CLI's timeout for the hook from the client's start (an approval's time is covered by
        a longer timeout of its own)."""
        due = self.started + self.wait_s
        if self._client_started is not None and self._limit is not None and not self._approval_s:
            due = min(due, self._client_started + self._limit)
        return due

    def _late(self) -> None:
        left = self._due() - time.monotonic()
        if left > 0:  # an approval's or the guards' longer time
            self._timer = self._arm(left)
            return
        if not self._answered.acquire(blocking=False):
            return  # the bridge's own answer is being printed
        late = self._late_answer()
        _log.error(
            f"the {self._dialect.display_name} bridge gave no answer in time",
            problem=self._problem(),
        )
        self._tell_client({"answered": late.exit_code})
        if self.gone():  # counted nowhere: the process ends here, its counts unexported
            unheard(None, self._event, tool_use_id_of(self.raw), late)
        else:
            _print(late, self._output)
        self._output.release()  # gone, nothing was printed: the lines go to the daemon's log
        from otelhooks.integrations.claude_code._daemon_probe import end_hooks_of

        end_hooks_of(os.getpid())  # their timeouts were this process's to keep
        os._exit(late.exit_code)  # the main thread may be held in a hook's C call

    def _problem(self) -> str:
        return f"no answer within {self.wait_s:g} s"

    def _late_answer(self) -> HookResponse:
        refusal = late_refusal(
            self._event, self._problem(), self.options, self.hooks, self.raw, waited_s=self.wait_s
        )
        return self._dialect.answer(refusal)

    def _told(self) -> None:
        """Hand the late answer, and when it is due, to the waiting hook client."""
        if self._tell is None:
            return
        late = self._late_answer()
        self._tell_client(
            {
                "due": self._due(),  # CLOCK_MONOTONIC: one clock for the machine
                "exit_code": late.exit_code,
                "stdout": late.stdout,
                "stderr": late.stderr,
                # the words the client puts its own in place of when this process ends first
                "problem": self._problem(),
            }
        )

    def _tell_client(self, message: dict[str, Any]) -> None:
        """One line to the waiting hook client: the late answer, or that the answer (with its
        exit code) is being printed. A process that ends without the second, a hook having
        crashed it (``os._exit``, a fault in a C extension), is answered with the first."""
        if self._tell is None:
            return
        try:
            os.write(self._tell, f"{json.dumps(message)}\n".encode())
        except OSError:
            self._tell = None  # the client is gone: nobody to tell
