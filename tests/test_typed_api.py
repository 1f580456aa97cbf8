"""A user's type checker sees every public name where the docs import it from.

The package ships ``py.typed``; a name a module exports through a computed ``__all__`` or a star
import of a star import is there at run time but missing to mypy (``from otelhooks.events import
ToolCallEvent`` was an ``attr-defined`` error). This runs mypy, strict, on a user's file that
imports every name of every public module's ``__all__``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]
# the public modules whose imports stay light (the runtime integrations pull in their SDKs,
# which mypy would analyse whole)
MODULES = (
    "otelhooks",
    "otelhooks.events",
    "otelhooks.semconv",
    "otelhooks.testing",
    "otelhooks.mcp",
    "otelhooks.replay",
    "otelhooks.web",
    "otelhooks.integrations.claude_code",
    "otelhooks.integrations.coding_agents",
)


def test_every_public_name_is_seen_by_a_users_mypy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = []
    for number, name in enumerate(MODULES):
        exported = sorted(importlib.import_module(name).__all__)
        assert exported, name
        lines.append(f"import {name} as m{number}")
        lines += [f"m{number}.{attribute}" for attribute in exported]
    user = tmp_path / "user_code.py"
    user.write_text("\n".join(lines) + "\n")
    # an editable install is an import hook mypy does not follow: the sources, as installed
    monkeypatch.setenv("MYPYPATH", str(ROOT))
    stdout, stderr, _ = api.run(
        [
            "--strict",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            f"--cache-dir={tmp_path / 'cache'}",
            str(user),
        ]
    )
    problems = [line for line in stdout.splitlines() if line.startswith(str(user))]
    assert not problems, stdout + stderr
