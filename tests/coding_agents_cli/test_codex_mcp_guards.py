"""A guard on an MCP tool keeps the real Codex CLI from calling it.

Codex CLI 0.171 holds an MCP server's tools back ("deferred tool namespaces") until the model's
``tool_search`` loads them; the model then calls ``delete_file`` in the ``mcp__files``
namespace, and Codex's PreToolUse names it ``mcp__files__delete_file``. The scripted model does
both; the MCP server (``mcp_files_server.py``) really deletes the file it is asked to.

Codex names the tools of server ``my-files`` ``mcp__my_files__<tool>`` (its namespace holds no
``-``): a guard naming the server as configured (``mcp__my-files__delete_file``, what Claude Code
calls the same server's tool) did not fire, and the real Codex CLI deleted the file. An exact
MCP name in a matcher now matches the name Codex gives that tool too, and so does a regex naming
the server with its ``-`` (``mcp__my-files__.*``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._codex_mcp import RENAMED_CALL, configure_codex, guard_file, mcp_steps
from tests.coding_agents_cli._guarded import bridge_answer
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    bridge_env,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


@pytest.mark.parametrize(
    ("matcher", "denied"),
    [
        ("mcp__my-files__delete_file", True),
        ("my-files/delete_file", True),
        ("mcp__my_files__delete_file", True),
        ("mcp__my-files__.*", True),
        ("^mcp__my-files__delete.*$", True),
        ("/^my-files\\/delete_.*/", True),
        ("Bash|mcp__my-files__.*", True),
        ("mcp__other-files__delete_file", False),
        ("mcp__other-files__.*", False),
    ],
)
def test_a_guard_on_the_configured_server_name_answers_codex_s_name(
    tmp_path: Path, matcher: str, denied: bool
) -> None:
    answer = bridge_answer(tmp_path, "codex", guard_file(matcher), RENAMED_CALL)
    if not denied:
        assert answer == ""
        return
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    ("matcher", "denied"),
    [
        ("mcp__my-files__delete-file.v2", True),
        ("my-files/delete-file.v2", True),
        ("mcp__my-files__delete-file.*", True),
        ("mcp__my-files__delete-file", False),
    ],
)
def test_a_guard_on_a_tool_name_codex_changes_answers_codex_s_name(
    tmp_path: Path, matcher: str, denied: bool
) -> None:
    # Codex CLI 0.171 named server my-files's tool delete-file.v2 mcp__my_files__delete_file_v2
    call = {**RENAMED_CALL, "tool_name": "mcp__my_files__delete_file_v2"}
    answer = bridge_answer(tmp_path, "codex", guard_file(matcher), call)
    if not denied:
        assert answer == ""
        return
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_control_the_real_codex_cli_deletes_through_the_mcp_tool(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    home = tmp_path / "home"
    configure_codex(project, home)
    run = run_codex(project, home, mcp_steps(), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "deleted victim/keep.txt" in run.told()


@pytest.mark.parametrize("matcher", ["mcp__files__delete_file", "@mcp", "mcp__files__.*"])
def test_the_real_codex_cli_is_kept_from_an_mcp_tool_by_a_guard(
    project: Path, tmp_path: Path, matcher: str
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(guard_file(matcher))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    configure_codex(project, home)
    run = run_codex(project, home, mcp_steps(), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in run.told(), skip_reason(run)


@pytest.mark.parametrize(
    "matcher",
    ["mcp__my-files__delete_file", "mcp__my-files__.*", "mcp__my_files__delete_file", "@mcp"],
)
def test_a_guard_names_a_server_codex_renames_as_it_is_configured(
    project: Path, tmp_path: Path, matcher: str
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(guard_file(matcher))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    configure_codex(project, home, "my-files")
    run = run_codex(project, home, mcp_steps("mcp__my_files"), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in run.told(), skip_reason(run)


def test_the_real_codex_cli_is_kept_from_an_mcp_tool_its_code_mode_calls(
    project: Path, tmp_path: Path
) -> None:
    # with code_mode, the model's JavaScript (Codex's exec tool) calls the MCP tool: Codex 0.171
    # runs PreToolUse on that nested call, named as any other call of the tool
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(guard_file("mcp__files__delete_file"))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    configure_codex(project, home, code_mode=True)
    script = "text(await tools.mcp__files__delete_file({path: 'victim/keep.txt'}));"
    steps = [{"id": "call_exec", "tool": "exec", "text": script}]
    run = run_codex(project, home, steps, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in json.dumps(run.requests[-1]["input"]), skip_reason(run)
