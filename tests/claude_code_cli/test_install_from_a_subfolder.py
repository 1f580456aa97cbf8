"""``otelhooks claude-code install`` at a git repository's root guards Claude Code started in a
subfolder of it, checked with the real Claude Code CLI.

Claude Code started in a subfolder of a git repository loads the settings of the repository's
root, and gives hooks ``$CLAUDE_PROJECT_DIR``: the folder it started in. Install wrote the hooks
file as given (``.claude/otelhooks.yaml``), which the bridge reads under that variable: the
subfolder's, where there is none. The bridge could not load it, and the scripted ``rm -rf
victim`` ran, without a word. A project install now writes the hooks file (and a relative
``--traces-out``) by full path.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.coding_agents_cli._runs import CLAUDE, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(120)

STEPS = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -rf victim"}}]


def test_a_session_started_in_a_subfolder_meets_the_starter_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(CLAUDE)
    repo, home = tmp_path / "repo", tmp_path / "home"
    sub = repo / "sub"
    (sub / "victim").mkdir(parents=True)
    (sub / "victim" / "keep.txt").write_text("precious")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))

    install_project(project=repo, traces_out="traces.jsonl")  # the defaults: the starter guard
    run = run_claude(sub, home, STEPS, extra_env={"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"})
    assert run.returncode == 0, skip_reason(run)
    assert (sub / "victim" / "keep.txt").exists()
    assert "rm -rf" in run.told()  # the model was told why
    assert (repo / "traces.jsonl").is_file()  # the spans went where install said

    local = json.loads((repo / ".claude" / "settings.local.json").read_text())
    (group,) = local["hooks"]["PreToolUse"]
    command = group["hooks"][0]["command"]
    assert str(repo / ".claude" / "otelhooks.yaml") in command
