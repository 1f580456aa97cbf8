"""Checks on paths a run will write, made before it starts (one clear line, not a traceback)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["writable_file_problem"]


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
