"""Claude Code settings holding someone else's handler Claude Code might reject: does the
installed guard still run?

docs/reliability.md said Claude Code skips a settings file whole for a hook handler with
``"timeout": "5"``, of a type it does not know or without its ``command``, ours included.
Checked here with the pinned CLI: ``otelhooks claude-code install`` into a
``settings.local.json`` that already holds such a handler on ``Stop``, then one session (a
scripted Messages API on 127.0.0.1 asks for ``rm -rf victim``): whether the starter guard denied
it says whether the file was read. It was, for every such handler; a value of the wrong type
outside the hooks (``"model": 5``) does turn the whole file off, which the docs still say.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
REPO = HERE.parent.parent

ODD = {
    "timeout-string": {"type": "command", "command": "true", "timeout": "5"},
    "timeout-fraction": {"type": "command", "command": "true", "timeout": 5.5},
    "timeout-negative": {"type": "command", "command": "true", "timeout": -1},
    "no-command": {"type": "command"},
}


def _guarded(
    project: Path, tmp_path: Path, handler: dict[str, Any], extra: dict[str, Any] | None = None
) -> bool:
    """Whether the installed guard denied ``rm -rf victim`` beside ``handler`` (and ``extra``
    keys in the file)."""
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    settings = {**(extra or {}), "hooks": {"Stop": [{"hooks": [handler]}]}}
    local.write_text(json.dumps(settings, indent=2) + "\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }
    installed = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "install"],
        cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert handler in json.loads(local.read_text())["hooks"]["Stop"][0]["hooks"]
    api = MessagesApi([ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim"})])
    with serve_messages_api(api) as url:
        claude_env = {
            **env,
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # CI runs as root
        }
        run = subprocess.run(
            [str(CLAUDE), "-p", "clean up", "--permission-mode", "bypassPermissions"],
            cwd=project, env=claude_env, capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return (project / "victim" / "keep.txt").exists()


@pytest.mark.parametrize("odd", sorted(ODD))
def test_the_guard_runs_beside_a_handler_claude_code_might_reject(odd: str, tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    assert _guarded(tmp_path / "project", tmp_path, ODD[odd])


# a value of the wrong type outside the hooks: the pinned CLI skips the whole file, ours too
SKIPPED = {
    "model-number": {"model": 5},
    "allow-string": {"permissions": {"allow": "Bash"}},
}


def test_the_guard_runs_beside_a_handler_of_a_type_claude_code_does_not_know(
    tmp_path: Path,
) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    assert _guarded(tmp_path / "project", tmp_path, {"type": "shell", "command": "true"})


@pytest.mark.parametrize("odd", sorted(SKIPPED))
def test_a_value_of_the_wrong_type_elsewhere_turns_the_whole_file_off(
    odd: str, tmp_path: Path
) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    handler = {"type": "command", "command": "true"}
    # what docs/reliability.md says is not guaranteed: the guard never ran, rm -rf did
    assert not _guarded(tmp_path / "project", tmp_path, handler, SKIPPED[odd])
