"""Control runs: without otelhooks, the scripted ``rm -r`` really deletes the folder.

The guard tests are only meaningful if the real CLI, told by the scripted model API to delete
``victim/``, does delete it when nothing stops it. Each CLI runs in a loopback-only network
namespace (``unshare -n``) against its scripted API on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


def test_codex_deletes_the_folder_when_nothing_guards_it(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    home = tmp_path / "home"
    codex_config(home)
    run = run_codex(project, home, [("call_rm", "rm -r victim")])
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()
    # the model was really asked twice: once for the call, once with its output
    assert any(
        item.get("type") == "function_call_output" and item.get("call_id") == "call_rm"
        for item in run.requests[-1]["input"]
    )


def test_gemini_deletes_the_folder_when_nothing_guards_it(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    run = run_gemini(project, tmp_path / "home", [("call_rm", "rm -r victim")])
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()
    parts = [p for c in run.requests[-1]["contents"] for p in c.get("parts") or ()]
    assert any(p.get("functionResponse", {}).get("name") == "run_shell_command" for p in parts)
