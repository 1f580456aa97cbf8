"""Files otelhooks creates to keep data at rest (the durable event log, the webhook outbox) are
private: created ``0600``, in folders created ``0700``.

Only what otelhooks creates is changed: a folder that already exists keeps its mode (it may be
the user's home or ``/tmp``), and an existing file of ours is tightened to ``0600`` (one created
by an earlier version may be ``0644``) if it is a regular file: a path naming a device, a pipe or
a terminal (``--traces-out /dev/null``) is written to as it is, never changed (run as root,
``/dev/null`` made ``0600`` broke every other user's programs). SQLite gives its ``-wal`` and
``-shm`` files the mode of the database file, so they are private too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "private_file", "private_folder", "tighten"]

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def private_folder(folder: Path) -> None:
    """Create ``folder`` and any missing parent, each ``0700`` (existing ones are left alone).

    Example:
        >>> private_folder(Path.home() / ".otelhooks")
    """
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # created meanwhile by someone else: theirs, left as it is
        os.chmod(path, FOLDER_MODE)  # the umask cannot have widened it, but be exact


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and its folder) ``0600`` if missing, or tighten it to ``0600``.

    Returns:
        The path, ready for ``sqlite3.connect``.

    Example:
        >>> db = private_file(Path.home() / ".otelhooks" / "outbox.sqlite3")
    """
    file = Path(path)
    if os.fspath(path) == ":memory:":
        return file  # SQLite's in-memory database: nothing at rest
    private_folder(file.parent)
    fd = os.open(file, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        tighten(fd)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm", "-journal"):
        try:
            fd = os.open(
                file.with_name(file.name + suffix), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
            )
        except OSError:
            continue  # absent (the common case) or not ours
        try:
            tighten(fd)
        finally:
            os.close(fd)
    return file


def tighten(fd: int) -> None:
    """Make the open file ``fd`` ``0600`` if it is a regular file others may read; a device, a
    pipe or a terminal (``/dev/null``, ``/dev/stdout``) is not ours to change and keeps its mode.

    Example:
        >>> fd = os.open("/dev/null", os.O_RDONLY)
        >>> tighten(fd)
        >>> stat.S_IMODE(os.fstat(fd).st_mode) == 0o666
        True
        >>> os.close(fd)
    """
    status = os.fstat(fd)
    if stat.S_ISREG(status.st_mode) and stat.S_IMODE(status.st_mode) & 0o077:
        os.fchmod(fd, FILE_MODE)
