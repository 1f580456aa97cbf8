"""The bridge's variables by their names for every CLI, and by their earlier (deprecated)
Claude Code names, read by the real ``otelhooks codex`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CAPTURED = Path(__file__).parent.parent / "coding_agents_cli" / "captured"


def _codex(env: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "codex"],
        input=(CAPTURED / "codex-PreToolUse.json").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), **env},
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["OTELHOOKS_BRIDGE_STATE", "OTELHOOKS_CLAUDE_STATE"])
def test_the_state_file_is_where_either_name_says(tmp_path: Path, name: str) -> None:
    state = tmp_path / "state.sqlite3"
    _codex({name: str(state)}, tmp_path)
    assert state.exists()
    assert not (tmp_path / "home" / ".otelhooks" / "claude-code.sqlite3").exists()


def test_the_new_name_wins_over_the_earlier_one(tmp_path: Path) -> None:
    new, old = tmp_path / "new.sqlite3", tmp_path / "old.sqlite3"
    _codex({"OTELHOOKS_BRIDGE_STATE": str(new), "OTELHOOKS_CLAUDE_STATE": str(old)}, tmp_path)
    assert new.exists()
    assert not old.exists()
