"""``install --fail-closed`` covers every event whose hook can stop or change what goes through,
checked with the real Claude Code CLI.

Claude Code 2.1.332 and 2.1.337 honour ``onFailure: "block"`` on every event but ``Stop``,
``SubagentStop``, ``TaskCompleted`` and ``TeammateIdle`` (and never on an ``async`` hook). Before,
``--fail-closed`` wrote it on ``PreToolUse``, ``PreSkillShellCommand`` and ``UserPromptSubmit``
only: a bridge that could not run at all (its interpreter gone, a removed virtualenv) on a
slash command's expansion let the command's prompt through and its scripted tool ran, and on a
``PostToolUse`` (a redaction, an output check) said nothing to the model. Now both block, as
Claude Code says ``onFailure is "block"``; the control (no ``--fail-closed``) lets them through.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, run_claude_p

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
ALLOW_ALL = "hooks:\n  - {id: look, type: PostToolUse, command: 'true'}\n"
BLOCKED = 'onFailure is "block"'


def _project(tmp_path: Path, event: str, *, fail_closed: bool) -> Path:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude" / "commands").mkdir(parents=True)
    (project / ".claude" / "commands" / "tidy.md").write_text("Tidy the project folder.\n")
    (project / "hooks.yaml").write_text(ALLOW_ALL)
    settings = project / ".claude" / "settings.local.json"
    install(settings, hooks_file="hooks.yaml", events=[event], fail_closed=fail_closed)
    data = json.loads(settings.read_text())
    (entry,) = data["hooks"][event][0]["hooks"]
    # what a removed virtualenv leaves: the hook command's interpreter no longer exists
    entry["command"] = "/nonexistent/venv/bin/python3 " + entry["command"].split(" ", 1)[1]
    settings.write_text(json.dumps(data))
    return project


def _run(project: Path, tmp_path: Path, prompt: str) -> tuple[MessagesApi, str]:
    api = MessagesApi([ToolStep("toolu_1", "Bash", {"command": "echo S-$((6*7)); touch ran"})])
    result = run_claude_p(api, prompt, project, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return api, result.stdout


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "control"])
def test_a_slash_commands_expansion_guard_that_cannot_run(
    tmp_path: Path, fail_closed: bool
) -> None:
    project = _project(tmp_path, "UserPromptExpansion", fail_closed=fail_closed)
    api, said = _run(project, tmp_path, "/tidy")
    if fail_closed:
        assert BLOCKED in said, said
        assert not (project / "ran").exists()
        assert api.requests == []  # the expanded prompt never reached the model
    else:  # Claude Code's default: a non-blocking error, and the prompt goes on
        assert (project / "ran").exists(), said


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "control"])
def test_an_output_check_that_cannot_run(tmp_path: Path, fail_closed: bool) -> None:
    project = _project(tmp_path, "PostToolUse", fail_closed=fail_closed)
    api, _ = _run(project, tmp_path, "tidy up")
    told = json.dumps(api.requests[-1]["messages"])
    # the output reached the model already; with the block it is told that its check failed
    assert (BLOCKED.replace('"', '\\"') in told) is fail_closed, told
