"""A guard written with the tool names a CLI's own hooks match fires where that CLI's hook would.

Codex CLI 0.171 runs a hook whose matcher is ``Edit`` or ``Write`` on its ``apply_patch`` too
(matcher aliases, for hooks written with Claude Code's names); Gemini CLI 0.61 names an MCP tool
``mcp_<server>_<tool>`` in its hooks and its reference. The bridge matched only ``apply_patch``,
and only the ``mcp__<server>__<tool>`` the Gemini dialect names such a tool: an ``Edit|Write``
guard let the real Codex CLI patch the file, and an ``mcp_testsrv_write_note`` guard let the real
Gemini CLI call the MCP tool. Each CLI's own names are now matcher values too (the dialect's
``matcher_aliases``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import (
    KINDS,
    PATCH,
    bridge_answer,
    patch_under_codex,
    tool_guard,
)
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    bridge_env,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HERE = Path(__file__).parent
MCP_SERVER = HERE.parent / "mcp" / "mcp_server_app.py"


def _gemini_mcp_call() -> dict[str, Any]:
    # Gemini CLI 0.61's BeforeTool of an MCP tool: its name, and the mcp_context it adds
    event: dict[str, Any] = json.loads((KINDS / "gemini-0.61.0-shell-BeforeTool.json").read_text())
    event["tool_name"] = "mcp_testsrv_write_note"
    event["tool_input"] = {"text": "hi"}
    event["mcp_context"] = {"server_name": "testsrv", "tool_name": "write_note"}
    return event


@pytest.mark.parametrize("matcher", ["Edit", "Write", "Edit|Write", "apply_patch"])
def test_codex_apply_patch_is_matched_by_the_names_codex_matches_it_by(
    tmp_path: Path, matcher: str
) -> None:
    event = json.loads((KINDS / "codex-0.171.0-file_edit-PreToolUse.json").read_text())
    answer = json.loads(bridge_answer(tmp_path, "codex", tool_guard(matcher), event))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_codex_aliases_are_apply_patchs_only(tmp_path: Path) -> None:
    event = json.loads((KINDS / "codex-0.171.0-shell-PreToolUse.json").read_text())
    assert bridge_answer(tmp_path, "codex", tool_guard("Edit|Write"), event) == ""


@pytest.mark.parametrize(
    ("matcher", "denied"),
    [("mcp_testsrv_write_note", True), ("mcp__testsrv__write_note", True), ("mcp_other", False)],
)
def test_gemini_mcp_tool_is_matched_by_its_gemini_name_too(
    tmp_path: Path, matcher: str, denied: bool
) -> None:
    answer = bridge_answer(tmp_path, "gemini", tool_guard(matcher), _gemini_mcp_call())
    assert (json.loads(answer)["decision"] == "deny") if denied else answer == ""


def test_the_real_codex_cli_is_kept_from_patching_by_an_edit_write_guard(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    steps = [{"id": "call_patch", "tool": "apply_patch", "text": PATCH}]
    run = patch_under_codex(project, tmp_path, "Edit|Write", steps)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert "not this tool" in json.dumps(run.requests[-1]["input"])  # apply_patch's own output


def test_the_real_gemini_cli_is_kept_from_an_mcp_tool_by_a_guard_on_its_gemini_name(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(tool_guard("mcp_testsrv_write_note"))
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    log = tmp_path / "mcp-calls.jsonl"
    server = {
        "command": sys.executable,
        "args": [str(MCP_SERVER), "stdio"],
        "env": {"MCP_TEST_LOG": str(log)},
        "trust": True,
    }
    steps = [{"id": "call_note", "tool": "mcp_testsrv_write_note", "args": {"text": "hi"}}]
    run = run_gemini(
        project,
        tmp_path / "home",
        steps,
        extra_env=bridge_env(tmp_path),
        settings={"mcpServers": {"testsrv": server}},
    )
    assert run.returncode == 0, skip_reason(run)
    assert not log.exists() or "write_note" not in log.read_text()
    assert "not this tool" in run.told(), skip_reason(run)
