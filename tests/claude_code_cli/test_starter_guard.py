"""The starter guard ``otelhooks claude-code install`` writes on a fresh project denies an
``rm -rf`` however long the call: a command padded past the 64 KiB that ``$HOOK_TOOL_INPUT``
holds (over it, the variable holds a marker and none of the arguments). The guard reads the
event on stdin, which has no size limit; before, it read the variable, and the real Claude Code
CLI ran ``rm -rf victim # xxx...`` (70,000 ``x``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.coding_agents_cli._runs import (
    CLAUDE,
    CLI_TEST_S,
    REPO,
    need_cli,
    run_claude,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

PADDED = "rm -rf victim # " + "x" * 70_000  # past the 64 KiB of $HOOK_TOOL_INPUT
# the bridge daemon an installed hook starts leaves soon after the test
BRIDGE_ENV = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}


def _fresh_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    result = install_project(project=project, traces_out=None)
    assert result.hooks_file_verb == "created"
    return project


def test_the_starter_guard_denies_an_rm_rf_padded_past_the_variables_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _fresh_project(tmp_path, monkeypatch)
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "hooks", "test", ".claude/otelhooks.yaml",
         "--event", "PreToolUse", "--tool", "Bash", "--args", json.dumps({"command": PADDED})],
        capture_output=True, text=True, timeout=60, cwd=project, env={"PYTHONPATH": str(REPO),
        "PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    verdict = proc.stdout.strip().splitlines()[-1]
    assert verdict == "verdict: blocked by no-rm-rf: rm -rf is not allowed"


def test_the_real_claude_code_is_kept_from_a_padded_rm_rf_by_the_starter_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _fresh_project(tmp_path, monkeypatch)
    need_cli(CLAUDE)
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": PADDED}}]
    run = run_claude(project, tmp_path / "home", steps, extra_env=BRIDGE_ENV)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "rm -rf is not allowed" in run.told()
