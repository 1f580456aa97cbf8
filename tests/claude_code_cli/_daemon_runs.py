"""The real Claude Code CLI with a guard installed, and the bridge daemon a first run started."""

from __future__ import annotations

from pathlib import Path

from otelhooks.integrations.claude_code import install
from tests.coding_agents_cli._runs import CLAUDE, need_cli, run_claude, skip_reason


def daemon_started(tmp_path: Path, runtime_dir: Path, guard: str) -> tuple[Path, dict[str, str]]:
    """``tmp_path/project`` (a ``victim`` folder in it) with the hooks file ``guard`` installed
    for ``PreToolUse``, after a first session (a scripted ``touch``, home ``tmp_path/home``)
    started the bridge daemon of ``runtime_dir``: the project and that session's environment
    (the daemon stays 60 s idle)."""
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(guard)
    install(project / ".claude" / "settings.json", hooks_file="hooks.yaml", events=["PreToolUse"])
    env = {
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "60",
    }
    touch = [{"id": "call_touch", "tool": "Bash", "args": {"command": "touch started"}}]
    first = run_claude(project, tmp_path / "home", touch, extra_env=env)
    assert first.returncode == 0, skip_reason(first)
    assert (project / "started").exists()
    return project, env
