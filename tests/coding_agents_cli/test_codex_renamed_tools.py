"""A regex guard on an MCP tool whose name Codex CLI changes stops the real Codex CLI.

Codex CLI 0.171 makes every ``-`` or ``.`` of an MCP server's or tool's name ``_``: server
``files``'s tool ``delete-file`` is ``mcp__files__delete_file`` to its hooks. An exact name, and
a regex with the ``-`` right after ``mcp__``, matched Codex's name already; a regex with the
``-`` anywhere else (``mcp__.*__delete-file``, ``mcp__files__(rm|delete-file)``, the gateway's
``/^files\\/(rm|delete-file)$/``) did not, and the real Codex CLI deleted the file the guard was
written to keep. The same held for replay of a recorded Codex run and for ``hooks test``: both
said the guard does not match. Each regex now also runs written as Codex names MCP tools (on
Codex-shaped names only), in the one place matchers compile.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from otelhooks.testing import run_cli
from tests.coding_agents_cli._codex_mcp import configure_codex, guard_file, mcp_steps
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    bridge_env,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

# regexes naming the tool as configured, with the "-" where Codex's rename left them blind
MATCHERS = [
    "mcp__.*__delete-file",
    "mcp__files__(rm|delete-file)",
    "/^files\\/(rm|delete-file)$/",
    "^mcp__[a-z]+__delete[-]file$",
]
CODEX_NAME = "mcp__files__delete_file"  # what Codex CLI 0.171 calls files's delete-file


@pytest.mark.parametrize("matcher", MATCHERS)
def test_the_real_codex_cli_is_kept_from_a_tool_it_renames_by_a_regex(
    project: Path, tmp_path: Path, matcher: str
) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(guard_file(matcher))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    configure_codex(project, home, tool="delete-file")
    run = run_codex(project, home, mcp_steps(), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "files stay here" in run.told(), skip_reason(run)


def test_replay_and_hooks_test_deny_the_tool_codex_renamed(project: Path, tmp_path: Path) -> None:
    """A real Codex run recorded without the guard (the tool ran, under Codex's name), then
    replayed through it; and ``hooks test`` of Codex's name, as the Codex bridge judges it."""
    need_cli(CODEX)
    (project / "none.yaml").write_text("hooks: []\n")
    traces = tmp_path / "traces.jsonl"
    install_agent("codex", project=project, hooks_file="none.yaml", traces_out=str(traces))
    home = tmp_path / "home"
    configure_codex(project, home, tool="delete-file")
    run = run_codex(project, home, mcp_steps(), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim" / "keep.txt").exists(), skip_reason(run)
    for n, matcher in enumerate(MATCHERS):
        policy = tmp_path / f"guard-{n}.yaml"
        policy.write_text(guard_file(matcher))
        code, out = _cli("replay", str(traces), "--hooks", str(policy), "--format", "json")
        assert code == 0, out
        replayed = [
            json.loads(line)
            for line in out.splitlines()
            if '"before_tool_call"' in line and CODEX_NAME in line
        ]
        assert [r["now"]["decision"] for r in replayed] == ["deny"], (matcher, out)
        code, out = _cli(
            "hooks",
            "test",
            str(policy),
            "--dialect",
            "codex",
            "--event",
            "PreToolUse",
            "--tool",
            CODEX_NAME,
        )
        assert code == 0, out
        assert '"permissionDecision": "deny"' in out, (matcher, out)
        assert "files stay here" in out, (matcher, out)


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = run_cli(*args)
    return code, out.getvalue()
