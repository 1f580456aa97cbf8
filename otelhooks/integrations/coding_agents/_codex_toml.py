"""Codex CLI's TOML files (``config.toml``, a profile's, ``requirements.toml``) read as Codex
0.171 reads them: a byte order mark before the first table is accepted (the real CLI ran with
``[features] hooks = false`` after one, no hook at all), where :mod:`tomllib` alone refuses the
file, and the installer's checks took it for no file and said nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code._settings_file import read_regular

__all__ = ["codex_toml"]


def codex_toml(path: Path) -> dict[str, Any] | None:
    """The settings of ``path``: ``None`` for no file (or a pipe, a device, a folder, one that
    cannot be read), ``{}`` for one Codex itself refuses to start with."""
    raw = read_regular(path)  # a named pipe would hold install forever
    if raw is None:
        return None
    try:
        return tomllib.loads(raw.decode("utf-8-sig"))
    except ValueError:  # UnicodeDecodeError and TOMLDecodeError both
        return {}
