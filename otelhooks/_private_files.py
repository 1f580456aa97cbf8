"""Files otelhooks creates to keep data at rest (the durable event log, the webhook outbox) are
private: created ``0600``, in folders created ``0700``.

Only what otelhooks creates is changed: a folder that already exists keeps its mode (it may be
the user's home or ``/tmp``), and an existing file of ours is tightened to ``0600`` (one created
by an earlier version may be ``0644``). SQLite gives its ``-wal`` and ``-shm`` files the mode of
the database file, so they are private too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "private_file", "private_folder"]

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
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm", "-journal"):
        sidecar = file.with_name(file.name + suffix)
        try:
            if stat.S_IMODE(sidecar.stat().st_mode) & 0o077:
                os.chmod(sidecar, FILE_MODE)
        except OSError:
            continue  # absent (the common case) or not ours
    return file
