"""A tool output a guard withholds from Codex CLI's model stays withheld behind a line a
``BASH_ENV`` startup file prints.

Codex CLI 0.171 runs a command hook through bash, which first runs the file ``BASH_ENV`` names
(a Docker image's ``.bashrc`` with a conda banner); what that prints reaches the hook's stdout
before the bridge's answer, and Codex reads a hook's JSON only from a stdout that holds nothing
else. The bridge's ``PostToolUse`` block (``{"decision": "block"}``, exit 0) of a
``tool_result_persist`` guard, of a command hook's block or of its exit 2 was not read: the real
CLI showed its model ``S-42-SECRET``. A block is now exit 2 with its reason first on stderr,
which Codex reads whatever stdout holds and shows the model in the output's place.
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

GUARD = """\
from otelhooks import Block

def scan(event):
    if "S-42" in str(event.result):
        return Block("the output holds a key")
    return None
"""
HOOKS = {
    "persist-guard": """\
hooks:
  - id: leak-check
    type: tool_result_persist
    intercept: true
    script: guard.py:scan
""",
    "command-block": """\
hooks:
  - id: leak-check
    type: PostToolUse
    command: >-
      input=$(cat); case "$input" in *S-42*) echo '{"decision": "block",
      "reason": "the output holds a key"}';; esac
""",
    "command-exit-2": """\
hooks:
  - id: leak-check
    type: PostToolUse
    command: >-
      input=$(cat); case "$input" in *S-42*) echo 'the output holds a key' >&2; exit 2;; esac
""",
}
STARTUP = {"printing": "echo 'conda: base environment active'\n", "silent": "export QUIET=1\n"}


@pytest.mark.parametrize("form", sorted(HOOKS))
@pytest.mark.parametrize("startup", sorted(STARTUP))
def test_the_real_codex_cli_never_shows_a_withheld_output_behind_a_startup_line(
    project: Path, tmp_path: Path, form: str, startup: str
) -> None:
    need_cli(CODEX)
    (project / "secret.txt").write_text("S-42-SECRET")
    (project / "guard.py").write_text(GUARD)
    (project / "hooks.yaml").write_text(HOOKS[form])
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    bashrc = tmp_path / "bashrc"
    bashrc.write_text(STARTUP[startup])
    env = {
        "BASH_ENV": str(bashrc),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, [("call_cat", "cat secret.txt")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert "S-42-SECRET" not in run.told()
    assert "the output holds a key" in run.told()
