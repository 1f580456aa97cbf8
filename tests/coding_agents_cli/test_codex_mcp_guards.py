"""A guard on an MCP tool keeps the real Codex CLI from calling it.

Codex CLI 0.171 holds an MCP server's tools back ("deferred tool namespaces") until the model's
``tool_search`` loads them; the model then calls ``delete_file`` in the ``mcp__files``
namespace, and Codex's PreToolUse names it ``mcp__files__delete_file``. The scripted model does
both; the MCP server (``mcp_files_server.py``) really deletes the file it is asked to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import CODEX, codex_config, need_cli, run_codex, skip_reason

pytestmark = pytest.mark.timeout(150)

SERVER = Path(__file__).parent / "mcp_files_server.py"
STEPS = [
    {"id": "call_search", "tool": "tool_search", "args": {"query": "delete file"}},
    {
        "id": "call_delete",
        "tool": "delete_file",
        "namespace": "mcp__files",
        "args": {"path": "victim/keep.txt"},
    },
]


def _guard(matcher: str) -> str:
    return (
        "hooks:\n  - id: keep-files\n    type: PreToolUse\n"
        f"    matcher: {json.dumps(matcher)}\n"
        "    command: \"echo 'files stay here' >&2; exit 2\"\n"
    )


def _configure(project: Path, home: Path) -> None:
    """Codex's config with the ``files`` MCP server (stdio), rooted at ``project``.

    Codex starts MCP servers beside the turn: a ``tool_search`` made before the server listed
    its tools finds nothing (an empty search, then an unsupported call, under a loaded
    machine), so the run waits for the server's startup (``mcp_optional_startup_grace_ms``)."""
    config = codex_config(home, trusted=project) / "config.toml"
    server = [str(SERVER), str(project)]
    table = f"\n[mcp_servers.files]\ncommand = {json.dumps(sys.executable)}\n"
    top = "mcp_optional_startup_grace_ms = 30000\n"
    config.write_text(top + config.read_text() + table + f"args = {json.dumps(server)}\n")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }


def test_control_the_real_codex_cli_deletes_through_the_mcp_tool(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    home = tmp_path / "home"
    _configure(project, home)
    run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "deleted victim/keep.txt" in run.told()


@pytest.mark.parametrize("matcher", ["mcp__files__delete_file", "@mcp", "mcp__files__.*"])
def test_the_real_codex_cli_is_kept_from_an_mcp_tool_by_a_guard(
    project: Path, tmp_path: Path, matcher: str
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(_guard(matcher))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    _configure(project, home)
    run = run_codex(project, home, STEPS, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in run.told(), skip_reason(run)
