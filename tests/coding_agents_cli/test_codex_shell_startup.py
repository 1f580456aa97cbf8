"""A line a shell startup file prints before the hook runs never turns a Codex CLI deny into a run.

Codex CLI 0.171 runs a command hook through bash, which first runs the file ``BASH_ENV`` names
(a Docker image's ``ENV BASH_ENV=/root/.bashrc``, for conda or nvm in non-interactive shells):
what that prints reaches the hook's stdout before the bridge's answer. Codex reads a hook's JSON
only from a stdout that holds nothing else: the deny was not read and the real CLI ran the
scripted ``rm -r victim``. A deny is now also exit 2 with its reason on stderr, which Codex
blocks by whatever stdout holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
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

KINDS = Path(__file__).parent / "captured" / "kinds"
GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "echo 'victim stays' >&2; exit 2"
"""


def _environment(tmp_path: Path) -> dict[str, str]:
    startup = tmp_path / "bashrc"
    startup.write_text("echo 'conda: base environment active'\n")
    return {
        "BASH_ENV": str(startup),
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }


def test_the_real_codex_cli_obeys_a_deny_behind_a_startup_files_line(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(GUARD)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, [("call_rm", "rm -r victim")], extra_env=_environment(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "victim stays" in run.told(), skip_reason(run)


def test_a_codex_deny_is_exit_2_with_the_reason_first_and_the_json_kept(tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text(GUARD)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="codex",
    )
    event = json.loads((KINDS / "codex-0.171.0-shell-PreToolUse.json").read_text())
    denied = run_hook(
        json.dumps({**event, "tool_input": {"command": "rm -r victim"}}), options, environ={}
    )
    assert denied.exit_code == 2
    assert denied.stderr.splitlines()[0] == "victim stays"
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # an allow stays exit 0 with nothing to say
    (tmp_path / "hooks.yaml").write_text(GUARD.replace('"@shell"', '"apply_patch"'))
    allowed = run_hook(json.dumps({**event, "tool_input": {"command": "ls"}}), options, environ={})
    assert (allowed.exit_code, allowed.stdout) == (0, "")
