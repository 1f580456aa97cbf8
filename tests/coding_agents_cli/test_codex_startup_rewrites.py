"""A Codex CLI rewrite behind a line a ``BASH_ENV`` startup file prints is never dropped silently.

Codex CLI 0.171 runs a command hook through bash, which first runs the file ``BASH_ENV`` names;
what that prints reaches the hook's stdout before the bridge's answer, and Codex reads a hook's
JSON only from a stdout that holds nothing else. A deny is exit 2 (read whatever stdout holds),
but an allowed rewrite (``updatedInput``) has only stdout: the real CLI dropped it and ran the
original ``rm -r victim``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import rewrite_guard
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


def _env(tmp_path: Path, banner: str) -> dict[str, str]:
    startup = tmp_path / "bashrc"
    startup.write_text(banner)
    return {
        "BASH_ENV": str(startup),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }


BANNERS = {"printing": "echo 'conda: base environment active'\n", "silent": "export QUIET=1\n"}


@pytest.mark.parametrize("banner", sorted(BANNERS))
def test_the_real_codex_cli_never_runs_the_original_of_a_rewrite_behind_a_banner(
    project: Path, tmp_path: Path, banner: str
) -> None:
    """Behind a printing startup file the call is denied, its reason naming the file and the
    rewritten arguments; behind a silent one the rewrite runs as ever."""
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(rewrite_guard("allow"))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    steps = [("call_rm", "rm -r victim")]
    run = run_codex(project, home, steps, extra_env=_env(tmp_path, BANNERS[banner]))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    if banner == "silent":
        assert (project / "note.txt").read_text() == "rewritten\n"
        return
    assert not (project / "note.txt").exists()
    told = run.told()
    assert "BASH_ENV" in told, told
    assert "conda: base environment active" in told, told
    assert "echo rewritten > note.txt" in told, told


KINDS = Path(__file__).parent / "captured" / "kinds"


@pytest.mark.parametrize("banner", sorted(BANNERS))
def test_a_codex_rewrite_behind_a_printing_startup_file_is_a_deny_naming_it(
    tmp_path: Path, banner: str
) -> None:
    (tmp_path / "hooks.yaml").write_text(rewrite_guard("allow"))
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="codex",
    )
    event = json.loads((KINDS / "codex-0.171.0-shell-PreToolUse.json").read_text())
    call = json.dumps({**event, "tool_input": {"command": "rm -r victim"}})
    startup = tmp_path / "bashrc"
    startup.write_text(BANNERS[banner])
    said = run_hook(call, options, environ={"BASH_ENV": str(startup), "PATH": "/usr/bin:/bin"})
    specific = json.loads(said.stdout)["hookSpecificOutput"]
    if banner == "silent":
        assert said.exit_code == 0
        assert specific["updatedInput"] == {"command": "echo rewritten > note.txt"}
        return
    assert said.exit_code == 2
    assert specific["permissionDecision"] == "deny"
    assert "updatedInput" not in specific
    first = said.stderr.splitlines()[0]
    assert f"the BASH_ENV file {startup} prints" in first
    assert '{"command": "echo rewritten > note.txt"}' in first
