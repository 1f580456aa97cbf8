"""A Claude Code settings file that hooks an event otelhooks does not know: its other guards run.

A newer Claude Code may have events otelhooks does not map yet (``PreModelSwitch`` was one:
``test_model_switch.py``), and Claude Code skips an event name it does not know itself, running
the file's other hooks (checked with the pinned CLI: a guard beside ``"FutureEvent"`` denies,
the first case). The same file as the
bridge's hooks file must keep its ``PreToolUse`` guard: before, the unknown event made the whole
file a config error, the bridge exited 1 on every event, and Claude Code ran ``rm -rf victim``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, run_claude_p

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
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
    result = run_claude_p(api, "clean up", project, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return api


@pytest.mark.parametrize(
    ("where", "unknown"),
    [
        ("claude-code-itself", "FutureEvent"),
        ("claude-format", "FutureEvent"),
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
