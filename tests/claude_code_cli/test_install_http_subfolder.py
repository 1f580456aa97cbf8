"""``otelhooks claude-code install --http`` at a git repository's root says that Claude Code
started in a subfolder runs none of its hooks, checked with the real Claude Code CLI 2.1.337.

The ``--http`` form goes to the shared ``.claude/settings.json``. Claude Code started in a
subfolder of a git repository runs the hooks of the root's ``settings.local.json`` but not those
of its ``settings.json``: such a session met no guard, and install said nothing. Shown here with
``--fail-closed`` and no server listening: started at the root, Claude Code blocks (the hooks
fail, ``onFailure: "block"``); started in a subfolder, it runs the scripted ``rm -r victim``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.coding_agents_cli._runs import CLAUDE, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(120)

STEPS = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
# nothing listens there in the CLI's own network namespace
DOWN = "http://127.0.0.1:4321"


def _repo(root: Path) -> Path:
    for folder in (root, root / "sub"):
        (folder / "victim").mkdir(parents=True)
        (folder / "victim" / "keep.txt").write_text("precious")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root


def test_an_http_install_at_a_repository_root_warns_of_subfolder_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, home = _repo(tmp_path / "repo"), tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "t")
    result = install_project(project=repo, http=DOWN, fail_closed=True)
    shared = repo / ".claude" / "settings.json"
    said = [w for w in result.changes[-1].warnings if "subfolder" in w]
    assert said == [
        f"Claude Code started in a subfolder of this repository runs none of the hooks of {shared}"
        " (it reads the root's settings.local.json there, not its settings.json): the guards see "
        "no tool call of such a session; start Claude Code at the repository's root, or install "
        "the command form (settings.local.json)"
    ]
    # the command form, and an --http install of a folder that is no repository's root: no note
    command = install_project(project=repo, traces_out=None)
    assert not [w for w in command.changes[-1].warnings if "subfolder" in w]
    plain = tmp_path / "plain"
    plain.mkdir()
    other = install_project(project=plain, http=DOWN)
    assert not [w for w in other.changes[-1].warnings if "subfolder" in w]


def test_claude_code_in_a_subfolder_runs_none_of_the_roots_shared_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(CLAUDE)
    repo, home = _repo(tmp_path / "repo"), tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    install_project(project=repo, http=DOWN, fail_closed=True)
    env = {"OTELHOOKS_INGEST_TOKEN": "t"}

    at_root = run_claude(repo, home, STEPS, extra_env=env)
    assert at_root.returncode == 0, skip_reason(at_root)
    # the guards' hooks ran, failed and blocked (the prompt's own, before any tool call)
    assert f"[{DOWN}/v1/hooks/claude-code] failed" in at_root.stdout + at_root.stderr
    assert (repo / "victim" / "keep.txt").exists()

    in_sub = run_claude(repo / "sub", home, STEPS, extra_env=env)
    assert in_sub.returncode == 0, skip_reason(in_sub)
    assert DOWN not in in_sub.stdout + in_sub.stderr
    assert not (repo / "sub" / "victim").exists(), in_sub.told()
