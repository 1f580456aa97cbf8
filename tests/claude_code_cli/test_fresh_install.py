"""The first hour with the real Claude Code CLI: ``otelhooks claude-code install`` on a fresh
project, nothing written by hand, then one Claude Code session (a scripted Messages API on
127.0.0.1 asks for ``rm -rf victim``, then ``touch``). The starter hook file denies the first, the
second runs, and ``otelhooks claude-code tree`` with no argument shows the session's spans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._realparts import require
from tests.claude_code_cli._messages_api import (
    CLAUDE,
    MessagesApi,
    ToolStep,
    claude_p,
    serve_messages_api,
)

pytestmark = pytest.mark.timeout(90)

HERE = Path(__file__).parent
REPO = HERE.parent.parent


def _otelhooks(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_install_on_a_fresh_project_guards_and_records_a_real_session(tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    home.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",  # the bridge daemon leaves soon after the test
    }
    installed = _otelhooks("claude-code", "install", cwd=project, env=env)
    assert installed.returncode == 0, installed.stderr
    assert "otelhooks.yaml: created" in installed.stdout
    assert not (project / ".claude" / "settings.json").exists()  # nothing machine-specific shared

    api = MessagesApi(
        [
            ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim", "description": "clean"}),
            ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "x"}),
        ]
    )
    with serve_messages_api(api) as url:
        run = claude_p(url, project, env, options=["--output-format", "json"], timeout_s=60)
    assert run.returncode == 0, run.stderr[-2000:]
    session = json.loads(run.stdout)["session_id"]
    # the starter guard denied rm -rf; the harmless call ran
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert (project / "harmless.txt").exists()
    # traces recorded where install said, shown by `tree` with no argument
    tree = _otelhooks("claude-code", "tree", "--session", session, cwd=project, env=env)
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout.count("execute_tool Bash") == 2
    assert "invoke_agent" in tree.stdout
    assert (home / ".otelhooks" / "claude-code-traces.jsonl").stat().st_mode & 0o777 == 0o600
    # uninstall: no file left where there was none
    removed = _otelhooks("claude-code", "uninstall", cwd=project, env=env)
    assert removed.returncode == 0, removed.stderr
    assert sorted(p.name for p in (project / ".claude").iterdir()) == []
