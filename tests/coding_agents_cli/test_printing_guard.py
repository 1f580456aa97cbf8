"""A Python guard that prints while it decides, with the real Codex CLI.

Codex CLI reads a hook's stdout as its answer only when it is the JSON object alone (Gemini CLI
and Claude Code too). A ``script:`` guard that printed a line (its own debugging, a library's
chatter, a child process it starts) before it denied made the one-process bridge's stdout plain
text: the CLI found no decision and ran the scripted ``rm -r``. The bridge now keeps its stdout
for the answer and sends what the hooks print to stderr. (Gemini CLI, run by hand the same way,
deleted the folder before and keeps it now; each dialect's stdout is checked in
``tests/reliability/test_hook_actions.py``.)

The one-process bridge answers whenever no daemon does: the first event after an install, an
edit or an idle quarter of an hour, a stopped daemon, or (here, for every event) a socket folder
others can write to, where the hook client trusts no daemon.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HOOKS = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    script: guard.py:guard
"""
GUARD = """\
import subprocess


def guard(event):
    print("guard: checking", event.args)  # its own debugging, on stdout
    subprocess.run(["echo", "guard: a child process says hello"], check=True)
    if "rm -r" in str(event.args):
        event.deny("rm -r is not allowed here")
"""
STEPS = [("call_rm", "rm -r victim")]


def _install(dialect: str, project: Path) -> None:
    (project / "hooks.yaml").write_text(HOOKS)
    (project / "guard.py").write_text(GUARD)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")


def _env(tmp_path: Path) -> dict[str, str]:
    shared = tmp_path / "shared-runtime"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)  # not the user's alone: no daemon, the one-process bridge answers
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "XDG_RUNTIME_DIR": str(shared),
    }


def test_codex_obeys_a_guard_that_prints_before_it_denies(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    _install("codex", project)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "rm -r is not allowed here" in run.told()
