"""One Claude Code settings file, changed safely: locked, through symlinks, atomically, minimally.

:func:`edit_settings` reads the file, asks ``change(text, root)`` for the new text (``None``: no
change) and writes it:

- **through symlinks**: the file written is the link's final target (a dotfiles checkout stays
  the one file), never a regular file put in the link's place;
- **atomically**: a temporary file beside the target, ``fsync``, then ``rename`` over it, with the
  target's mode, owner and group (a new file gets ``0644`` less the umask, as an editor would
  create it);
- **locked**: an exclusive ``flock`` on the target's folder is held from the read to the rename,
  so two ``install``/``uninstall`` runs (or any tool taking the same lock) never lose each other's
  change. An editor that does not take the lock can still race: its save between our read and
  our rename would be lost, so the file is read again just before the rename and the edit starts
  over (up to five times) when it changed; what remains is a window of one ``stat`` and one
  ``rename``;
- **minimally**: ``change`` splices the text (see :mod:`._json_text`), so every byte it does not
  need to change is kept.

A file that holds nothing but what the change removed (``{}``) is deleted when the change
empties it: ``uninstall`` leaves no file where ``install`` made one.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from otelhooks.integrations.claude_code._json_text import Node, parse

__all__ = ["Edited", "check_editable", "edit_settings", "read_regular"]

_EMPTY = ("{}", "{}\n")
_ATTEMPTS = 5


@dataclass(frozen=True)
class Edited:
    """The bytes of a settings file before and after an edit (``None``: no file)."""

    path: Path
    before: bytes | None
    after: bytes | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, for the refusal (``None``: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kinds = {
        stat.S_ISFIFO: "a named pipe",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
        stat.S_ISDIR: "a folder",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def _read(path: Path) -> tuple[bytes | None, tuple[int, int, int] | None]:
    # Opened without blocking and checked before a byte is read: a named pipe would hold install
    # forever, and a device (a link to /dev/null) would be replaced by a regular file when
    # written, by root the machine's own.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            raise ValueError(
                f"{path}: {kind}, not a settings file: nothing is read from or written to it; "
                "point it at a regular file, or remove it"
            )
        return handle.read(), (info.st_ino, info.st_size, info.st_mtime_ns)


def read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (``None``: no file, one that cannot be
    read, or a pipe, device or folder: a CLI's settings read beside the one install edits, where
    a named pipe would hold install forever)."""
    try:
        return _read(path)[0]
    except (OSError, ValueError):
        return None


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _new_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write(target: Path, data: bytes) -> None:
    try:
        info = target.stat()
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    except FileNotFoundError:
        mode, owner = _new_mode(), None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            _keep_owner(handle.fileno(), target, owner)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _keep_owner(fd: int, target: Path, owner: tuple[int, int] | None) -> None:
    """Give the new file the owner and group of the one it replaces: the rename would hand it
    to whoever runs install (root under ``sudo``), and a ``0600`` settings file became one its
    user's CLI could not read, hooks and all, after an install that said ``updated``."""
    if owner is None:
        return
    made = os.fstat(fd)
    if (made.st_uid, made.st_gid) == owner:
        return
    try:
        os.fchown(fd, *owner)
    except PermissionError:
        raise PermissionError(
            f"{target}: belongs to user {owner[0]} (group {owner[1]}), and a copy written here "
            "could only belong to this user: nothing was written; run install as its owner"
        ) from None


def _parsed(path: Path, raw: bytes | None) -> tuple[str, Node | None]:
    try:
        text = raw.decode("utf-8") if raw is not None else ""
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc.reason})") from None
    try:
        root = parse(text, only="hooks") if text.strip() else None
    except ValueError as exc:
        # Gemini CLI reads comments in its settings.json; this editor keeps bytes it
        # understands, so it says why instead of dropping them
        hint = (
            " (if it holds comments: they cannot be kept; remove them, or add the hooks by hand)"
            if "//" in text or "/*" in text
            else ""
        )
        raise ValueError(f"{path}: cannot be edited without loss: {exc}{hint}") from None
    if root is not None and root.kind != "object":
        raise ValueError(f"{path}: not a JSON object")
    return text, root


def check_editable(path: Path) -> None:
    """Refuse, as :func:`edit_settings` would, a file that cannot be edited without loss.

    Nothing is written: a caller that edits two files checks both first, so a refusal of the
    second leaves the first as it was.

    Raises:
        ValueError: the file is not UTF-8 JSON that can be edited without loss.
        OSError: it cannot be read.
    """
    _parsed(path, _read(Path(os.path.realpath(path)))[0])


def edit_settings(
    path: Path, change: Callable[[str, Node | None], str | None], *, create: bool = True
) -> Edited:
    """Apply ``change`` to the settings file at ``path`` (see the module doc).

    ``change(text, root)`` gets the file's text and its parsed root (``"" , None`` when there is
    no file) and returns the new text, or ``None`` for no change.

    Raises:
        ValueError: the file is not UTF-8 JSON that can be edited without loss (the message
            says why; nothing was written).
        OSError: it cannot be read or written.
    """
    target = Path(os.path.realpath(path))  # a symlink's final target is the file we write
    if not target.parent.is_dir():
        if not create:
            return Edited(path, None, None)
        target.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        for _ in range(_ATTEMPTS):
            raw, signature = _read(target)
            if raw is None and not create:
                return Edited(path, None, None)
            text, root = _parsed(path, raw)
            new = change(text, root)
            if new is None or new == text:
                return Edited(path, raw, raw)
            if _signature(target) != signature:
                continue  # an editor saved meanwhile: start over from its text
            if new.strip() in _EMPTY and raw is not None and text.strip() not in _EMPTY:
                target.unlink()  # nothing but what we had added: no file, as before
                return Edited(path, raw, None)
            data = new.encode("utf-8")
            _write(target, data)
            return Edited(path, raw, data)
        raise ValueError(f"{path}: kept changing while it was edited; nothing was written")
    finally:
        os.close(folder)  # releases the lock
