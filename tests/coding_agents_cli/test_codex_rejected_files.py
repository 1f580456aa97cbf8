"""A Codex ``hooks.json`` holding a hook Codex CLI 0.171 cannot parse: ``codex install`` refuses.

Codex rejects the whole file for one such hook, without a word in ``codex exec``: a command hook
without its ``command`` string, a ``timeout`` that is not a whole number of seconds (``"5"``,
``5.5``, ``-1``) or a ``matcher`` that is not a string. Merged there, the installed guard never
ran and the real CLI deleted ``victim``; install said ``updated``. Now it refuses, naming the
hook, and leaves the file as it was (as it did for a hook of a type Codex does not know). A key
Codex does not know is accepted: install goes ahead, and the guard denies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.coding_agents import hooks_path, install_agent
from tests.coding_agents_cli._guarded import DENY_SHELL_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

FINE = {"type": "command", "command": "true"}
# a PostToolUse group of someone else's that Codex rejects the file for
REJECTED: dict[str, dict[str, Any]] = {
    "no-command": {"hooks": [{"type": "command"}]},
    "command-not-a-string": {"hooks": [{**FINE, "command": 5}]},
    "timeout-a-string": {"hooks": [{**FINE, "timeout": "5"}]},
    "timeout-a-fraction": {"hooks": [{**FINE, "timeout": 5.5}]},
    "timeout-negative": {"hooks": [{**FINE, "timeout": -1}]},
    "matcher-a-number": {"matcher": 5, "hooks": [FINE]},
}
ACCEPTED = {"hooks": [{**FINE, "note": "a key Codex does not know"}]}


def _theirs(project: Path, group: dict[str, Any]) -> tuple[Path, str]:
    path = hooks_path("codex", project=project)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"hooks": {"PostToolUse": [group]}}, indent=2) + "\n"
    path.write_text(text)
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)
    return path, text


def _run(project: Path, tmp_path: Path) -> Any:
    need_cli(CODEX)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = {"OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3")}
    run = run_codex(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    return run


@pytest.mark.parametrize("case", list(REJECTED))
def test_codex_install_refuses_a_file_codex_would_reject_whole(case: str, project: Path) -> None:
    path, text = _theirs(project, REJECTED[case])
    with pytest.raises(ValueError, match=r"PostToolUse hook .*: Codex CLI rejects the whole file"):
        install_agent("codex", project=project, hooks_file="hooks.yaml")
    assert path.read_text() == text


@pytest.mark.parametrize("case", ["no-command", "timeout-a-fraction", "matcher-a-number"])
def test_the_real_codex_cli_runs_no_hook_of_such_a_file(
    case: str, project: Path, tmp_path: Path
) -> None:
    """Why install refuses: the guard merged by hand beside such a hook never runs."""
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    path = hooks_path("codex", project=project)
    data = json.loads(path.read_text())
    data["hooks"]["PostToolUse"].append(REJECTED[case])
    path.write_text(json.dumps(data, indent=2))
    _run(project, tmp_path)
    assert not (project / "victim").exists()


def test_a_key_codex_does_not_know_is_installed_beside_and_the_guard_denies(
    project: Path, tmp_path: Path
) -> None:
    _theirs(project, ACCEPTED)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    run = _run(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
