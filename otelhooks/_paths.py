"""Paths a run depends on: checks on files it will write, made before it starts (one clear line,
not a traceback), and the folder it runs in."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["working_folder", "writable_file_problem"]


def writable_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written (created or appended to), or None when it can."""
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    if not parent.exists():
        return f"no such directory: {parent}"
    if not parent.is_dir():
        return f"not a directory: {parent}"
    if path.exists() and not os.access(path, os.W_OK):
        return "not writable"
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        return f"directory not writable: {parent}"
    return None


def working_folder() -> str:
    """The process's working folder, also once it has been deleted (then the path it had).

    An agent's tool may remove the folder its agent runs in; ``os.getcwd()`` then raises, and a
    hook that needs the folder (a command hook's ``cwd`` field, a Claude ``if`` condition) would
    fail, and a guard with it, for every later call.

    Example:
        >>> working_folder() == os.getcwd()
        True
    """
    try:
        return os.getcwd()
    except FileNotFoundError:
        try:  # Linux names the folder it was, marked as deleted
            return os.readlink("/proc/self/cwd").removesuffix(" (deleted)")
        except OSError:
            return os.environ.get("PWD") or "/"
