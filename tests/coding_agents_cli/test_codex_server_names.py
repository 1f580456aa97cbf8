"""An MCP server Codex CLI ignores for its name, and the guard written for it.

The real Codex CLI 0.171 starts no MCP server whose configured name holds a space (or another
character but letters, digits, ``-``, ``_``, ``.``, ``:``, ``@``, ``/``): ``codex exec`` says
nothing, its ``tool_search`` finds none of the server's tools and the model's call is refused.
A ``.`` is kept, renamed as a ``-`` is (``my.files`` is ``mcp__my_files``), which the guards
match already. A guard naming an ignored server guards nothing, and nothing said so: ``otelhooks
codex install`` now warns on stderr naming the server, its file and the guard, and ``otelhooks
hooks test --dialect codex`` warns and exits 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._codex_mcp import configure_codex, guard_file, mcp_steps
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    REPO,
    bridge_env,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


def test_the_real_codex_cli_ignores_a_server_whose_name_has_a_space(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    home = tmp_path / "home"
    configure_codex(project, home, "my files")
    run = run_codex(project, home, mcp_steps("mcp__my_files"), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    searched = [i for i in run.requests[-1]["input"] if i.get("type") == "tool_search_output"]
    assert [s["tools"] for s in searched] == [[]], skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "unsupported call" in run.told()
    assert "my files" not in run.stdout + run.stderr  # Codex says nothing of the server


def test_a_guard_naming_a_server_with_a_dot_stops_the_real_codex_cli(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(guard_file("mcp__my.files__delete_file"))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    configure_codex(project, home, "my.files")
    run = run_codex(project, home, mcp_steps("mcp__my_files"), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in run.told(), skip_reason(run)


def _otelhooks(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL", "CODEX"))}
    env |= {"PYTHONPATH": str(REPO), "HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("where", ["user", "project"])
def test_install_and_hooks_test_say_a_guarded_server_is_ignored(
    project: Path, tmp_path: Path, where: str
) -> None:
    home = tmp_path / "home"
    configure_codex(project, home, "my files")
    if where == "project":  # the server in the project's config.toml instead
        user = home / ".codex" / "config.toml"
        text = user.read_text()
        table = text.index('[mcp_servers."my files"]')
        (project / ".codex").mkdir()
        (project / ".codex" / "config.toml").write_text(text[table:])
        user.write_text(text[:table])
    config = (home / ".codex" if where == "user" else project / ".codex") / "config.toml"
    (project / "hooks.yaml").write_text(guard_file("mcp__my files__delete_file"))
    installed = _otelhooks(project, home, "codex", "install", "--hooks", "hooks.yaml")
    assert installed.returncode == 0, installed.stderr
    said = f"warning: Codex CLI ignores MCP server 'my files' of {config}: its name holds ' '"
    assert said in installed.stderr
    assert "hook keep-files names it and guards nothing" in installed.stderr
    tested = _otelhooks(
        project,
        home,
        *("hooks", "test", "hooks.yaml", "--dialect", "codex", "--event", "PreToolUse"),
        *("--tool", "mcp__my files__delete_file"),
    )
    assert tested.returncode == 1, tested.stdout + tested.stderr
    assert said in tested.stderr
    assert "guards nothing" in tested.stderr


def test_a_server_codex_starts_is_not_warned_of(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure_codex(project, home, "my.files:v2@host/x")
    (project / "hooks.yaml").write_text(guard_file("mcp__my.files:v2@host/x__delete_file"))
    installed = _otelhooks(project, home, "codex", "install", "--hooks", "hooks.yaml")
    assert installed.returncode == 0, installed.stderr
    assert "ignores MCP server" not in installed.stderr + installed.stdout
