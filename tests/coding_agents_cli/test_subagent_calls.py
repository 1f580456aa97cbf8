"""A tool call of a sub-agent, with the real Codex CLI and Gemini CLI: the guard still denies it.

The scripted model of the prompted agent starts a sub-agent (Codex: ``spawn_agent`` of its
``collaboration`` namespace, under ``[features] multi_agent_v2 = true``, then ``wait_agent``;
Gemini: ``invoke_agent`` of its built-in ``generalist``, which has every tool), and the
sub-agent's model asks for ``rm -r victim``. Each CLI fires ``PreToolUse`` / ``BeforeTool`` for
the sub-agent's call as for its parent's: the installed guard denies it, the folder survives
and the sub-agent's model is told the guard's reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import RM_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

SUB_RM = {"id": "call_sub_rm", "command": "rm -r victim", "subagent": True}


def test_a_codex_sub_agents_call_is_denied(project: Path, tmp_path: Path) -> None:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(RM_GUARD)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    config = codex_config(home, trusted=project) / "config.toml"
    config.write_text(
        config.read_text().replace("[features]\n", "[features]\nmulti_agent_v2 = true\n")
    )
    spawn = {"message": "clean the victim folder", "task_name": "cleaner", "fork_turns": "none"}
    steps = [
        {"id": "call_spawn", "tool": "spawn_agent", "args": spawn, "namespace": "collaboration"},
        {"id": "call_wait", "tool": "wait_agent", "args": {}, "namespace": "collaboration"},
        SUB_RM,
    ]
    run = run_codex(project, home, steps, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    asked = [r for r in run.requests if "call_sub_rm" in json.dumps(r.get("input"))]
    assert asked, "the sub-agent's model never heard back about its rm"
    assert "deleting is not allowed here" in json.dumps(asked[0]["input"])


def test_a_gemini_sub_agents_call_is_denied(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(RM_GUARD)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    invoke = {"agent_name": "generalist", "prompt": "clean the victim folder"}
    steps = [{"id": "call_agent", "tool": "invoke_agent", "args": invoke}, SUB_RM]
    run = run_gemini(project, tmp_path / "home", steps, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    subs = [r for r in run.requests if "complete_task" in json.dumps(r.get("tools"))]
    assert "Tool execution blocked: deleting is not allowed here" in json.dumps(subs[-1])
