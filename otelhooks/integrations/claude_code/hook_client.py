"""The fast command form of the Claude Code bridge: a standard-library client of a local daemon.

A command hook is a process per event. Importing otelhooks (pydantic, the OpenTelemetry SDK,
the webhook client) costs that process about 0.6 s of CPU, so instead
``otelhooks claude-code install`` writes this file as the hook command, run by path with
``python -I -S`` (no site-packages, nothing but the standard library)::

    /usr/bin/python3 -I -S .../otelhooks/integrations/claude_code/hook_client.py --hooks FILE

It hands the event, after its own environment (the daemon runs the event's command hooks with
it), to a per-user bridge daemon over a Unix socket (``0600`` in a ``0700`` folder the user
owns; in any other folder no socket is trusted, the one-process bridge answers, and the client
says so on stderr) and prints the daemon's answer exactly as the bridge would. The first event,
when no daemon is listening, starts one in the background (``otelhooks claude-code ... daemon``)
and is answered by the ordinary one-process bridge meanwhile. The daemon keeps sessions in the same
state file as the one-process bridge, so either can handle any event; it exits after
``$OTELHOOKS_BRIDGE_DAEMON_IDLE`` seconds without events (default 900). A changed hooks file
or environment, another otelhooks installed (this file replaced), or another working folder
gives a new daemon (the socket name is a digest of them): a daemon runs command hooks in its
own folder, which is the CLI's, as the one-process bridge does.

Before anything else it reads the ``OTELHOOKS_*`` settings of the export file
(``otelhooks.env`` beside the hooks file) into its environment, a variable it has winning:
Gemini CLI removes variables from a hook's environment (an approval's serve URL and token), and
the daemon and the one-process bridge it starts inherit them from it.

An answer may take minutes (an ``approval:`` hook waits for a person), so the client waits for
it without an end of its own, but never for a daemon that no longer answers: after each second
without the answer it asks the daemon ``GET /alive`` on a second connection, which the daemon's
event loop answers at once; only the daemon holding the event counts (the probe's peer is
checked), and when the socket's file is deleted or a newer daemon's, the daemon holding the
event is alive unless it is stopped. A daemon that does not answer that within 2 s (stopped by
``SIGSTOP``, a frozen machine, deep swap, or its event loop blocked) answers nobody: the client
kills it (``SIGKILL``, to the process at the other end of the socket, Linux's ``SO_PEERCRED``),
which frees its socket, its lock and any lock it held on the state file, says so on stderr and
answers through the one-process bridge, starting a fresh daemon for the next events, exactly as
when no daemon listens. The one-process bridge applies the guard's rules (a deny, fail-closed,
each CLI's output): the client decides nothing itself. A daemon stopped and continued within
those 3 s answers the probe and is waited for.

The one-process bridge keeps its own answer time, on a thread; a hook that holds the
interpreter's lock in one long C call (a regular expression backtracking for minutes) stops that
thread too. So the bridge also hands the client, on a pipe, the answer it would give late and
when it is due, and then that it is printing its own answer; the client relays that answer,
and past the time (or when the bridge ends without one: a hook calling ``os._exit``, a fault
in a C extension) prints the late answer itself, the bridge killed. The time runs from this
client's start (the CLI's timeout does), and the bridge's own start takes seconds on a loaded
machine: until it tells, the client's own late answer stands (``_late_client``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from types import ModuleType

__all__ = [
    "ASKED_AT_ENV",
    "CLIENT_LOG_ENV",
    "CLIENT_PID_ENV",
    "IDLE_ENV",
    "LATE_FD_ENV",
    "STARTED_AT_ENV",
    "main",
    "socket_path",
]

IDLE_ENV = "OTELHOOKS_BRIDGE_DAEMON_IDLE"  # earlier OTELHOOKS_CLAUDE_DAEMON_IDLE, still read
# the pipe on which the one-process bridge tells this client its late answer
LATE_FD_ENV = "OTELHOOKS_BRIDGE_LATE_FD"
# when this client started, handed over after a daemon failed to answer: the one-process
# bridge's time runs from there
ASKED_AT_ENV = "OTELHOOKS_BRIDGE_ASKED_AT"
# when this client started: the one-process bridge's answer comes before the CLI's timeout from
# there (``--hook-timeout``), its own start, seconds on a loaded machine, included
STARTED_AT_ENV = "OTELHOOKS_BRIDGE_CLIENT_START"
# this client's pid: the one-process bridge withdraws its approvals once its parent is another
# (the CLI killed this client at its timeout), also when that came before it could look
CLIENT_PID_ENV = "OTELHOOKS_BRIDGE_CLIENT_PID"
# the daemon's log (in the private socket folder): where the one-process bridge says, once this
# client is gone and its stderr with it, that its answer reached nobody
CLIENT_LOG_ENV = "OTELHOOKS_BRIDGE_CLIENT_LOG"
_ENV_PREFIXES = ("OTELHOOKS_", "OTEL_", "CLAUDE_PROJECT_DIR", "HOME")
_FLAGS_WITH_PATHS = ("--hooks", "--traces-out", "--state", "--export-env")
# the CLI that runs this client with ``--dialect NAME`` (none: Claude Code)
_CLIS = {"claude-code": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI"}
# without progress for a slice, the daemon is asked whether it lives (``_daemon_probe``)
_SLICE_S = 1.0
# how often the client looks at the one-process bridge's clock
_LATE_CHECK_S = 0.25
_SOCKET_PATH_MAX = 107  # bytes of a Unix socket's path (Linux's 108, less the final NUL)
# The bridge in Python's UTF-8 mode, whatever the locale: the CLIs write and read UTF-8, and in
# a Latin-1 locale a tool input with a character it lacks (a U+2019) could not be handed to a
# command hook (its environment is encoded in the locale's encoding): every guard failed open.
# And with ``-P``: ``-m`` would put the working folder, the agent's, first on the import path,
# and a ``structlog.py`` or ``yaml.py`` the agent wrote there ended every guard (exit 1). With
# ``-E`` and through ``_bridge_start.py`` (beside this file), which imports the otelhooks it is
# part of: a ``PYTHONHOME`` or ``PYTHONPATH`` of another Python or project in the CLI's
# environment ended every guard the same way.
_START = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bridge_start.py")
_BRIDGE = (sys.executable, "-X", "utf8", "-E", "-P", _START, "claude-code")
_ENDED = "otelhooks hook client: the bridge ended without an answer; answered as a late one"
_NO_ANSWER = (
    "otelhooks hook client: the bridge daemon did not answer; answered by the one-process bridge"
)


def _dialect(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--dialect" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--dialect="):
            return arg.partition("=")[2]
    return "claude-code"


def _export_file_settings(argv: list[str]) -> dict[str, str]:
    """The ``OTELHOOKS_*`` settings of the export files (``--export-env``, else
    ``$OTELHOOKS_EXPORT_ENV``, else ``otelhooks.env`` beside each ``--hooks``), read as the
    bridge reads them. Gemini CLI removes from a hook's environment every variable whose name
    holds TOKEN, KEY, AUTH ... (and, under GitHub Actions, every variable but a few): an
    approval's serve URL and token set there reach the hook only from this file. The
    standard-library twin of the bridge's own reader (this file cannot import it); a test holds
    the two to one reading."""
    explicit = [a.partition("=")[2] for a in argv if a.startswith("--export-env=")]
    explicit += [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--export-env"]
    if not explicit and os.environ.get("OTELHOOKS_EXPORT_ENV"):
        explicit = [_resolve(os.environ["OTELHOOKS_EXPORT_ENV"])]
    files = explicit or [
        os.path.join(p if os.path.isdir(p) else os.path.dirname(p), "otelhooks.env")
        for i, p in enumerate(argv[1:])
        if argv[i] == "--hooks"
    ]
    settings: dict[str, str] = {}
    for path in files:
        try:
            with open(path, "rb") as handle:
                text = handle.read(64 * 1024).decode("utf-8", "replace").removeprefix("\ufeff")
        except OSError:
            continue  # the bridge reports an explicit file it cannot read
        for line in text.splitlines():
            key, sep, value = line.strip().removeprefix("export ").partition("=")
            key, value = key.strip(), value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            if sep and key.startswith("OTELHOOKS_"):
                settings.setdefault(key, value)
    return settings


def _resolve(path: str) -> str:
    base = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    return os.path.normpath(os.path.join(base, os.path.expanduser(path)))


def _normalized(argv: list[str]) -> list[str]:
    """Paths made absolute (the daemon does not share the hook's working directory)."""
    out: list[str] = []
    take_path = False
    for arg in argv:
        if take_path:
            out.append(_resolve(arg))
            take_path = False
            continue
        flag, eq, value = arg.partition("=")
        if flag in _FLAGS_WITH_PATHS and eq:
            out.append(f"{flag}={_resolve(value)}")
        else:
            out.append(arg)
            take_path = arg in _FLAGS_WITH_PATHS
    return out


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def socket_path(argv: list[str]) -> str:
    """The daemon socket for these (normalized) arguments and this environment."""
    files: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--hooks" and i + 1 < len(argv):
            files.append(argv[i + 1])
    for path in list(files):
        files.append(os.path.join(os.path.dirname(path), "otelhooks.env"))
    # this very file: installing another otelhooks version replaces it, and a daemon running the
    # code it loaded before must not go on answering (a fixed guard path would wait for its idle)
    files.append(os.path.abspath(__file__))
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    # The working folder too: a command hook (`./guard.sh`) runs in the daemon's, which must be
    # the CLI's, as it is for the one-process bridge; a daemon started from another folder of the
    # project ran it there, where it failed, and the call went through.
    key = json.dumps([sys.executable, argv, env, [(f, _mtime(f)) for f in files], os.getcwd()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    name = f"cc-{digest}.sock"
    folder = os.environ.get("XDG_RUNTIME_DIR") or ""
    if not folder or len(os.fsencode(os.path.join(folder, name))) > _SOCKET_PATH_MAX:
        # no socket can be made in a folder this deep: each event would start a daemon that
        # loads the hooks, fails to listen and logs a traceback
        folder = f"/tmp/otelhooks-{os.getuid()}"
    return os.path.join(folder, name)


def _environment() -> bytes:
    """This process's environment as one JSON line, sent before the event: the daemon runs the
    event's command hooks with it, not with the environment of the session that started the
    daemon. Its bytes exactly, whatever the locale (the daemon runs in UTF-8 mode)."""
    env = {
        k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
        for k, v in os.environb.items()
    }
    return json.dumps(env).encode() + b"\n"


def _ask(path: str, body: bytes) -> dict[str, object] | None:
    """The daemon's answer to the event ``body`` (sent after this process's environment),
    ``None`` when no daemon listens there; ``OSError`` or ``ValueError`` when one listens but
    gives no answer (it died, or stopped answering and was killed)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(0.5)
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    body = _environment() + body
    with sock:
        sock.settimeout(_SLICE_S)
        head = (
            "POST /bridge HTTP/1.1\r\nHost: otelhooks\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        request = memoryview(head.encode() + body)
        while request:
            try:
                request = request[sock.send(request) :]
            except TimeoutError:
                _sibling("_daemon_probe").still_there(sock, path, _SLICE_S)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                _sibling("_daemon_probe").still_there(sock, path, _SLICE_S)
                continue
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    _, _, payload = raw.partition(b"\r\n\r\n")
    answer = json.loads(payload)
    # anything but an answer (a daemon whose hooks changed says {"stale": true}): as no daemon
    return answer if isinstance(answer, dict) and "exit_code" in answer else None


def _sibling(module: str) -> ModuleType:
    """A module beside this file (``_daemon_probe.py``, ``_late_client.py``; standard library
    only), loaded when first needed: an event answered at once never pays for it. Run as a
    script under ``-I``, this file's folder is not on the import path, so the module is loaded
    from its path."""
    if __package__:
        import importlib

        return importlib.import_module(f"{__package__}.{module}")
    name = f"otelhooks_hook_client{module}"
    if name not in sys.modules:
        import importlib.util

        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, f"{module}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no {module}.py in {here}")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        sys.modules[name] = loaded
    return sys.modules[name]


def _folder_problem(path: str) -> str | None:
    """Why the socket's folder is not this user's alone (made now if it does not exist), or
    ``None`` when it is: a socket in a folder others can write to could be someone else's,
    answering "allow", so none is trusted there."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        return f"cannot be made or read ({exc.strerror})"
    if os.path.islink(folder):
        return "is a symbolic link, which others may have made"
    if not os.path.isdir(folder):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    if info.st_mode & 0o077:
        return f"has mode {info.st_mode & 0o777:o}: others can reach it"
    return None


def _not_private(path: str, problem: str) -> str:
    """What the client says of a socket folder it cannot trust: every event then pays the
    one-process bridge's start (1-3 s each), which nothing else would tell."""
    return (
        f"otelhooks hook client: the bridge daemon's socket folder {os.path.dirname(path)} "
        f"{problem}, so no daemon is used and each event starts the one-process bridge "
        "(1-3 s); set XDG_RUNTIME_DIR to a folder of your own with mode 700"
    )


def _log_path(path: str) -> str:
    """The daemon's log beside its socket ``path``."""
    return path[: -len(".sock")] + ".log"


def _start_daemon(argv: list[str], path: str) -> None:
    log = open(_log_path(path), "ab")  # noqa: SIM115 - handed to the child
    with log:
        subprocess.Popen(
            [*_BRIDGE, *argv, "daemon", "--socket", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def _one_process(
    args: list[str], body: bytes, asked: float, *, after_daemon: bool, log: str | None
) -> int:
    """The one-process bridge's answer, written out. It tells this client, on a pipe, its late
    answer and when that is due (from ``asked``, this client's start, ``after_daemon`` that
    gave no answer), then that its own answer is being printed and with which exit code; past
    the time with no answer, or when it ends without one (a hook crashed it), the late answer
    is this client's (the bridge killed). Past that time with nothing told (the bridge still
    starting: 20 s of imports at a load of 30), this client answers on its own, as the bridge
    answers hooks it could not load in time (``_late_client``). ``log`` is where the bridge
    says that its answer reached nobody, this client gone (``None``: no private folder)."""
    told_r, told_w = os.pipe()
    feed_r, feed_w = os.pipe()
    env = {**os.environ, LATE_FD_ENV: str(told_w), CLIENT_PID_ENV: str(os.getpid())}
    env[STARTED_AT_ENV] = repr(asked)
    # this client's word alone: a value the CLI's environment had (a time long past) made the
    # bridge answer late at once
    env.pop(ASKED_AT_ENV, None)
    if after_daemon:
        env[ASKED_AT_ENV] = repr(asked)
    env.pop(CLIENT_LOG_ENV, None)  # this client's word alone too: a file of ours
    if log is not None:
        env[CLIENT_LOG_ENV] = log
    try:
        bridge = subprocess.Popen(
            [*_BRIDGE, *args],
            stdin=feed_r,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(told_w,),
            env=env,
        )
    except BaseException:
        os.close(feed_w)
        raise
    finally:
        os.close(told_w)
        os.close(feed_r)
    # The event is fed on a thread of its own, on a pipe of our own: ``communicate`` given it
    # with a timeout writes, once retried, none of the rest (it registers stdin only when given
    # input, and refuses input once started), so an event past the pipe's 64 KiB never ended
    # and the bridge, waiting for its stdin's end, answered nothing (exit 1 at 25 s).
    threading.Thread(target=_feed, args=(feed_w, body), daemon=True).start()
    os.set_blocking(told_r, False)
    told = _sibling("_late_client").Told(asked, args, after_daemon=after_daemon)
    with open(told_r, "rb", buffering=0, closefd=True) as told_pipe:
        while True:
            try:
                out, err = bridge.communicate(timeout=_LATE_CHECK_S)
                told.read(told_pipe)
                break
            except subprocess.TimeoutExpired:
                pass
            told.read(told_pipe)
            late = told.overdue()
            if late is not None:
                # held in a C call, or in any way its own clock cannot see, or not started
                # yet: the answer first (the CLI's timeout runs), then the bridge killed
                code = _write(late)
                sys.stdout.flush()
                sys.stderr.flush()
                _sibling("_daemon_probe").kill(bridge.pid)
                bridge.wait()
                return code
    if told.answered is None and told.late is not None:
        sys.stderr.buffer.write(err)  # what ended it, before the answer it did not give
        sys.stderr.write(f"{_ENDED} (exit {bridge.returncode})\n")
        sys.stderr.flush()
        return _write(told.ended(bridge.returncode))
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    return bridge.returncode if told.answered is None else told.answered


def _feed(fd: int, body: bytes) -> None:
    """Write the event to the one-process bridge's stdin and close it; a bridge that ended (or
    was killed) before reading it all is no error here: its answer, or the late one, stands."""
    left = memoryview(body)
    with open(fd, "wb", buffering=0, closefd=True) as stdin:
        try:
            while left:
                left = left[stdin.write(left) :]
        except OSError:
            pass


def started_at() -> float:
    """When this process started, on ``time.monotonic()``'s clock (Linux's
    ``/proc/self/stat``): the CLI's timeout for the hook runs from there, and on a loaded
    machine the interpreter's start and the imports before ``main`` take seconds. Elsewhere,
    now."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as stat:
            ticks = int(stat.read().rpartition(b")")[2].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 600 else now


def _write(answer: dict[str, object]) -> int:
    """Write an answer (the daemon's, or the late answer the bridge told) as the bridge would,
    and return its exit code."""
    stdout, stderr = answer.get("stdout"), answer.get("stderr")
    # UTF-8 whatever the locale, as the CLIs read it and as the one-process bridge writes it (a
    # Latin-1 locale lacks the U+2019 of a deny reason: the write failed, exit 1, the tool ran)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8")
    if stdout:
        sys.stdout.write(f"{stdout}\n")
    if stderr:
        sys.stderr.write(f"{stderr}\n")
    code = answer.get("exit_code")
    return code if isinstance(code, int) else 1


def main(argv: list[str] | None = None) -> int:
    """Run one hook event (stdin) through the daemon, or the one-process bridge."""
    asked = started_at()  # the CLI's timeout runs from the process's start
    try:
        os.getcwd()
    except OSError:
        # The CLI's folder was deleted (by the agent, say): no path resolves against it and no
        # command hook starts in it, so every guard would fail and let the call through.
        os.chdir("/")
    args = _normalized(list(sys.argv[1:] if argv is None else argv))
    # a variable the process has wins, as in the bridge; the daemon and the bridge inherit these
    for key, value in _export_file_settings(args).items():
        os.environ.setdefault(key, value)
    if sys.stdin.isatty():  # typed in a terminal, it would wait for an event nobody sends
        dialect = _dialect(args)
        cli = _CLIS.get(dialect, dialect)
        print(
            f"otelhooks hook client: {cli} runs this, one hook event (JSON) on stdin; "
            f"`otelhooks {dialect} install` sets it up",
            file=sys.stderr,
        )
        return 2
    body = sys.stdin.buffer.read()
    path = socket_path(args)
    problem = _folder_problem(path)
    private = problem is None
    # said after the answer: a deny's reason on stderr (exit 2: Codex, Gemini CLI, Claude
    # Code) is what the model reads, and it read this client's notes first
    notes = [] if problem is None else [_not_private(path, problem)]
    answer = None
    failed = False
    if private:
        try:
            answer = _ask(path, body)
        except (OSError, ValueError):
            notes.append(_NO_ANSWER)
            failed = True
    if answer is None:
        if private:
            try:  # noqa: SIM105 - contextlib is one more import on every hook's path
                _start_daemon(args, path)
            except OSError:
                pass
        # a daemon stopped 20 s in leaves 5 s of 25, not 25 more past the CLI's 30
        log = _log_path(path) if private else None
        code = _one_process(args, body, asked, after_daemon=failed, log=log)
    else:
        code = _write(answer)
    try:
        for note in notes:
            print(note, file=sys.stderr)
    except (OSError, ValueError):
        pass  # the answer is given: a note its reader hung up on must not make it exit 1
    return code


if __name__ == "__main__":
    sys.exit(main())
