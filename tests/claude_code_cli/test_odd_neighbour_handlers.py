"""Claude Code settings holding someone else's handler Claude Code might reject: does the
installed guard still run?

docs/reliability.md said Claude Code skips a settings file whole for a hook handler with
``"timeout": "5"``, of a type it does not know or without its ``command``, ours included.
Checked here with the pinned CLI: ``otelhooks claude-code install`` into a
``settings.local.json`` that already holds such a handler on ``Stop``, then one session (a
scripted Messages API on 127.0.0.1 asks for ``rm -rf victim``): whether the starter guard denied
it says whether the file was read. It was, for every such handler. A known setting of the
wrong type outside the hooks (``"model": 5``) does turn the whole file off: install refuses
such a file, naming the setting, instead of writing a guard that never runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._realparts import require
from tests.claude_code_cli._messages_api import CLAUDE, rm_rf_victim, session_env

pytestmark = pytest.mark.timeout(120)


ODD = {
    "timeout-string": {"type": "command", "command": "true", "timeout": "5"},
    "timeout-fraction": {"type": "command", "command": "true", "timeout": 5.5},
    "timeout-negative": {"type": "command", "command": "true", "timeout": -1},
    "no-command": {"type": "command"},
}


def _install(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "install"],
        cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _session_guarded(project: Path, env: dict[str, str]) -> bool:
    """Whether one Claude Code session in ``project`` asked for ``rm -rf victim`` left the
    victim (the installed guard denied it)."""
    rm_rf_victim(project, env)
    return (project / "victim" / "keep.txt").exists()


def _guarded(
    project: Path,
    tmp_path: Path,
    handlers: list[dict[str, Any]],
    extra: dict[str, Any] | None = None,
) -> bool:
    """Whether the installed guard denied ``rm -rf victim`` beside ``handlers`` (and ``extra``
    keys in the file)."""
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir(parents=True)
    settings = {**(extra or {}), "hooks": {"Stop": [{"hooks": handlers}]}}
    local.write_text(json.dumps(settings, indent=2) + "\n")
    env = session_env(tmp_path)
    installed = _install(project, env)
    assert installed.returncode == 0, installed.stderr
    kept = json.loads(local.read_text())["hooks"]["Stop"][0]["hooks"]
    assert all(handler in kept for handler in handlers)
    return _session_guarded(project, env)


# All in one file, one session: Claude Code skips a file whole for any handler it rejects, so the
# guard running beside all of them shows that it rejects none (a session costs seconds).
def test_the_guard_runs_beside_a_handler_claude_code_might_reject(tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    handlers = [ODD[odd] for odd in sorted(ODD)] + [{"type": "shell", "command": "true"}]
    assert _guarded(tmp_path / "project", tmp_path, handlers)


# a value of the wrong type outside the hooks: the pinned CLI skips the whole file, hooks and all
SKIPPED = {
    "model-number": ({"model": 5}, '"model" is 5'),
    "model-null": ({"model": None}, '"model" is null'),
    "allow-string": ({"permissions": {"allow": "Bash"}}, '"permissions.allow" is "Bash"'),
    "hooks-off-string": ({"disableAllHooks": "false"}, '"disableAllHooks" is "false"'),
    "env-list": ({"env": ["A=1"]}, '"env" is ["A=1"]'),
}


@pytest.mark.parametrize("odd", sorted(SKIPPED))
def test_install_refuses_a_file_claude_code_skips_whole(odd: str, tmp_path: Path) -> None:
    """Before, install said ``updated`` and the guard it wrote never ran (``rm -rf`` did)."""
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    extra, named = SKIPPED[odd]
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    env = session_env(tmp_path)
    assert _install(project, env).returncode == 0  # a clean file: our hooks
    local = project / ".claude" / "settings.local.json"
    # the premise, with the real CLI: our hooks in a file holding the odd value never run
    local.write_text(json.dumps({**extra, **json.loads(local.read_text())}, indent=2) + "\n")
    assert not _session_guarded(project, env)
    before = local.read_bytes()
    again = _install(project, env)
    assert again.returncode == 1
    assert named in again.stderr
    assert "Claude Code ignores this whole file" in again.stderr
    assert local.read_bytes() == before  # left as it was
    # fixed by hand (the odd value taken out): install writes, and the guard runs
    local.write_text(json.dumps({"hooks": json.loads(before)["hooks"]}) + "\n")
    assert _install(project, env).returncode == 0
    assert _session_guarded(project, env)


# a wrong value the CLI drops on its own (a fallback in its schema) or a key it does not know:
# the file is read, so install writes it
KEPT = {"effort-number": {"effortLevel": 5}, "unknown-key": {"otelhooksNote": 5}}


# both in one file, one session, as above: a file skipped for either runs no guard
def test_install_writes_beside_a_value_claude_code_drops(tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    handler = {"type": "command", "command": "true"}
    kept = {key: value for odd in sorted(KEPT) for key, value in KEPT[odd].items()}
    assert _guarded(tmp_path / "project", tmp_path, [handler], kept)
