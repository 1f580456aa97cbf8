"""The hook client's watch on the bridge daemon holding its event, and how it ends one.

Standard library only, as the hook client: it loads this module by path only when a daemon is
slow to answer or a bridge must be killed, so an event answered at once pays nothing for it.
``still_there`` asks the daemon ``GET /alive`` on a second connection (only the daemon holding
the event counts: the probe's peer is checked, Linux's ``SO_PEERCRED``) and kills one that does
not answer within 2 s; ``kill`` ends a daemon or bridge with the command hooks it runs.
"""

from __future__ import annotations

import os
import socket
import time

__all__ = ["alive", "end_hooks_of", "kill", "kill_peer", "not_stopped", "peer", "still_there"]

_PROBE_S = 2.0
_ALIVE = b"GET /alive HTTP/1.1\r\nHost: otelhooks\r\nConnection: close\r\n\r\n"


def still_there(sock: socket.socket, path: str, slice_s: float) -> None:
    """Returns when the daemon at the other end of ``sock`` lives (it answers ``GET /alive`` at
    once, or its answer came meanwhile); else kills it and raises ``TimeoutError``."""
    if alive(path, peer(sock)):
        return
    sock.settimeout(0)
    try:
        sock.recv(1, socket.MSG_PEEK)  # its answer (or its end) came while the probe waited
    except BlockingIOError:
        kill_peer(sock, path)
        raise TimeoutError("the bridge daemon did not answer") from None
    sock.settimeout(slice_s)


def alive(path: str, pid: int | None) -> bool:
    """Whether the daemon ``pid`` (the one holding the event) answers ``GET /alive`` at
    ``path``. When the path no longer leads to it (its file deleted by a tmp cleaner, or a newer
    daemon's), whether that process is not stopped: asking the path, a healthy daemon was
    killed mid-event, and a stopped one was taken for the newer daemon answering there."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with probe:
        probe.settimeout(_PROBE_S)
        try:
            probe.connect(path)
            if pid is None or peer(probe) == pid:
                probe.sendall(_ALIVE)
                return probe.recv(64).startswith(b"HTTP/1.1 200")
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        except OSError:
            return False
    return pid is not None and not_stopped(pid)


def not_stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"T", b"t", b"Z", b"X")


def peer(sock: socket.socket) -> int | None:
    """The pid of this user's process at the other end of ``sock`` (Linux's ``SO_PEERCRED``);
    ``None`` elsewhere, or when that process is another user's."""
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid if pid > 0 and uid == os.getuid() else None


def kill_peer(sock: socket.socket, path: str) -> None:
    """Kill the process listening at the other end of ``sock``: left alone, a stopped daemon
    keeps its socket and lock (no new daemon can start, so every event would wait for the probe
    again) and maybe the state file's lock, which the one-process bridge would wait 30 s for.
    Without ``SO_PEERCRED`` (not Linux) it is left. Killed, it cannot log what it left undone."""
    pid = peer(sock)
    if pid is not None:
        kill(pid)
        try:
            with open(path[: -len(".sock")] + ".log", "a", encoding="utf-8") as log:
                log.write(
                    f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} [error    ] the hook "
                    "client killed the bridge daemon: no answer to GET /alive within 2 s; the "
                    "events it was answering are answered by the one-process bridge, their hooks "
                    f"run again, and the notifications it had not sent yet are lost pid={pid}\n"
                )
        except OSError:
            pass


def kill(pid: int) -> None:
    """``SIGKILL`` a daemon or bridge (stopped or blocked, it acts on no other signal), and the
    command hooks it runs."""
    import signal

    try:
        os.kill(pid, signal.SIGSTOP)  # it starts no more, and its ended hooks keep their ids
        end_hooks_of(pid)
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def end_hooks_of(pid: int) -> None:
    """``SIGTERM`` the command hooks ``pid`` runs (each a process group, whose reaper then ends
    all below it), as at their timeout: a bridge ending without them left them running
    unsupervised, a killed daemon's beside their second run."""
    import signal

    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rpartition(b")")[2].split()[1])
            if ppid == pid:
                os.killpg(int(entry), signal.SIGTERM)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not a group of its own
