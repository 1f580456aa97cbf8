"""An event larger than a pipe holds reaches the guard whole when no bridge daemon answers it:
the real Claude Code CLI, the hook client ``install`` writes, the starter guard (which reads the
event on stdin), and a socket folder the client does not trust (writable by others), so that
the one-process bridge answers every event.

Before, the hook client fed the one-process bridge with ``communicate(timeout=...)`` retried
without input, which never writes the rest of an input past the pipe's 64 KiB: the bridge
waited for the end of its stdin, the client answered at 25 s that the bridge had not started
(exit 1, a non-blocking error) and Claude Code ran ``rm -rf victim # xxx...``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(CLI_TEST_S)

PADDED = "rm -rf victim # " + "x" * 70_000  # past a pipe's 64 KiB


def test_the_real_claude_code_is_kept_from_a_padded_rm_rf_with_no_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert install_project(project=project, traces_out=None).hooks_file_verb == "created"
    shared = tmp_path / "shared"  # others may write here: no socket in it is trusted
    shared.mkdir()
    shared.chmod(0o777)
    need_cli(CLAUDE)
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": PADDED}}]
    run = run_claude(project, tmp_path / "home", steps, extra_env={"XDG_RUNTIME_DIR": str(shared)})
    assert run.returncode == 0, skip_reason(run)
    assert not list(shared.glob("*.sock"))  # every event was the one-process bridge's
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "rm -rf is not allowed" in run.told()
