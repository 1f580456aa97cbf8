"""A Claude Code settings file that hooks an event otelhooks does not know: its other guards run.

Claude Code 2.1.332 has events otelhooks does not map (``PreModelSwitch``, ``PostModelSwitch``)
and skips an event name it does not know itself, running the file's other hooks (checked with
the pinned CLI: a guard beside ``"FutureEvent"`` denies, the first case). The same file as the
bridge's hooks file must keep its ``PreToolUse`` guard: before, the unknown event made the whole
file a config error, the bridge exited 1 on every event, and Claude Code ran ``rm -rf victim``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
REPO = HERE.parent.parent
REASON = "rm -rf is not allowed here"


def _guards(unknown: str) -> dict[str, object]:
    return {
        "hooks": {
            unknown: [{"hooks": [{"type": "command", "command": "echo 'not this' >&2; exit 2"}]}],
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": f"echo '{REASON}' >&2; exit 2"}],
                }
            ],
        }
    }


def _run(project: Path, tmp_path: Path) -> MessagesApi:
    api = MessagesApi([ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim"})])
    home = tmp_path / "home"
    home.mkdir()
    with serve_messages_api(api) as url:
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(REPO),
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(tmp_path / "run"),
            "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
            "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
        }
        result = subprocess.run(
            [str(CLAUDE), "-p", "clean up", "--permission-mode", "bypassPermissions"],
            cwd=project, env=env, capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return api


@pytest.mark.parametrize(
    ("where", "unknown"),
    [
        ("claude-code-itself", "FutureEvent"),
        ("claude-format", "FutureEvent"),
        ("claude-format", "PreModelSwitch"),
    ],
)
def test_a_guard_beside_an_unknown_event_still_denies(
    where: str, unknown: str, tmp_path: Path
) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / "victim").mkdir()
    (project / "victim" / "keep.txt").write_text("precious")
    settings = project / ".claude" / "settings.local.json"
    if where == "claude-code-itself":
        settings.write_text(json.dumps(_guards(unknown)))
    else:
        (project / ".claude" / "guards.json").write_text(json.dumps(_guards(unknown)))
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            install(settings, hooks_file=".claude/guards.json")
    api = _run(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert REASON in json.dumps(api.requests[-1]["messages"])
    if where != "claude-code-itself":  # the skipped event is said, not silent
        assert any(f"unknown event '{unknown}'" in str(w.message) for w in said)
