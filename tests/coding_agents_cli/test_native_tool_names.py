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

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HERE = Path(__file__).parent
KINDS = HERE / "captured" / "kinds"
MCP_SERVER = HERE.parent / "mcp" / "mcp_server_app.py"
PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+ALPHA\n beta\n*** End Patch\n"


def _guard(matcher: str) -> str:
    return (
        "hooks:\n  - id: guard\n    type: PreToolUse\n"
        f"    matcher: {json.dumps(matcher)}\n"
        "    command: \"echo 'not this tool' >&2; exit 2\"\n"
    )


def _answer(tmp_path: Path, dialect: str, matcher: str, event: dict[str, Any]) -> str:
    (tmp_path / "hooks.yaml").write_text(_guard(matcher))
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    return run_hook(json.dumps(event), options, environ={}).stdout


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
    answer = json.loads(_answer(tmp_path, "codex", matcher, event))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_codex_aliases_are_apply_patchs_only(tmp_path: Path) -> None:
    event = json.loads((KINDS / "codex-0.171.0-shell-PreToolUse.json").read_text())
    assert _answer(tmp_path, "codex", "Edit|Write", event) == ""


@pytest.mark.parametrize(
    ("matcher", "denied"),
    [("mcp_testsrv_write_note", True), ("mcp__testsrv__write_note", True), ("mcp_other", False)],
)
def test_gemini_mcp_tool_is_matched_by_its_gemini_name_too(
    tmp_path: Path, matcher: str, denied: bool
) -> None:
    answer = _answer(tmp_path, "gemini", matcher, _gemini_mcp_call())
    assert (json.loads(answer)["decision"] == "deny") if denied else answer == ""


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }


def test_the_real_codex_cli_is_kept_from_patching_by_an_edit_write_guard(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    (project / "notes.txt").write_text("alpha\nbeta\n")
    (project / "hooks.yaml").write_text(_guard("Edit|Write"))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    steps = [{"id": "call_patch", "tool": "apply_patch", "text": PATCH}]
    run = run_codex(project, home, steps, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert "not this tool" in json.dumps(run.requests[-1]["input"])  # apply_patch's own output


def test_the_real_gemini_cli_is_kept_from_an_mcp_tool_by_a_guard_on_its_gemini_name(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(_guard("mcp_testsrv_write_note"))
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
        extra_env=_env(tmp_path),
        settings={"mcpServers": {"testsrv": server}},
    )
    assert run.returncode == 0, skip_reason(run)
    assert not log.exists() or "write_note" not in log.read_text()
    assert "not this tool" in run.told(), skip_reason(run)
