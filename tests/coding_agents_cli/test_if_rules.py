"""A handler's Claude Code ``if`` rule in a hooks file the Codex CLI or Gemini CLI bridge runs.

Attacked with the real CLIs (Codex CLI 0.171, Gemini CLI 0.61), a guard gated by
``"if": "Bash(rm *)"`` (or ``Edit``) was skipped, and the CLI ran the call, when:

- Gemini CLI asked for it: its shell tool is ``run_shell_command``, which the rule's ``Bash``
  never named, so even a bare ``rm -r victim`` ran under an ``@shell`` handler;
- the ``rm`` was a background job, in a subshell or a group (``echo hi & rm -r victim``,
  ``(rm -r victim)``, ``{ rm -r victim; }``) or after ``!`` / ``time`` / a keyword: the rule
  saw no subcommand starting with ``rm``;
- Codex ran a patch through its shell (``apply_patch <<'EOF'``), which its hook reports as
  ``Bash`` and the matcher ``Edit`` selects: the rule compared ``Bash`` with ``Edit``;
- the rule named an MCP server as configured (``mcp__my-files``), which Codex names
  ``mcp__my_files`` (the handler's matcher matched it, the rule did not).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._codex_mcp import RENAMED_CALL, configure_codex, mcp_steps
from tests.coding_agents_cli._guarded import HEREDOC, KINDS, bridge_answer
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

CHAINED = {
    "and": "echo hi && rm -r victim",
    "background": "echo hi & rm -r victim",
    "subshell": "(rm -r victim)",
    "nested-subshell": "true; (cd . && rm -r victim)",
    "group": "{ rm -r victim; }",
    "not": "! rm -r victim",
    "time": "time rm -r victim",
    "if": "if true; then rm -r victim; fi",
    "pipe-stderr": "echo hi |& rm -r victim",
    "process-substitution": "cat <(rm -r victim)",
}


def _settings(matcher: str, rule: str) -> str:
    handler = {"type": "command", "if": rule, "command": "echo 'the if guard says no' >&2; exit 2"}
    return json.dumps({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [handler]}]}})


def _answer(tmp_path: Path, dialect: str, matcher: str, rule: str, event: dict[str, Any]) -> str:
    hooks = _settings(matcher, rule)
    return bridge_answer(tmp_path, dialect, hooks, event, name="settings.json")


def _event(kind: str, **tool_input: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((KINDS / kind).read_text())
    event["tool_input"] = tool_input
    return event


def _denied(answer: str) -> bool:
    if not answer:
        return False
    parsed = json.loads(answer)
    own = parsed.get("hookSpecificOutput") or {}
    return parsed.get("decision") == "deny" or own.get("permissionDecision") == "deny"


@pytest.mark.parametrize("command", list(CHAINED.values()), ids=list(CHAINED))
@pytest.mark.parametrize(
    ("dialect", "kind", "matcher"),
    [
        ("codex", "codex-0.171.0-shell-PreToolUse.json", "Bash"),
        ("gemini", "gemini-0.61.0-shell-BeforeTool.json", "@shell"),
        ("gemini", "gemini-0.61.0-shell-BeforeTool.json", "run_shell_command"),
    ],
    ids=["codex", "gemini-kind", "gemini-name"],
)
def test_a_bash_if_rule_sees_the_rm_however_it_is_chained(
    tmp_path: Path, dialect: str, kind: str, matcher: str, command: str
) -> None:
    answer = _answer(tmp_path, dialect, matcher, "Bash(rm *)", _event(kind, command=command))
    assert _denied(answer), answer


@pytest.mark.parametrize(
    "command", ["ls -la", "git commit -m 'a (b) & c'", "echo rm", "ls 2>&1 | grep -v x"]
)
def test_a_bash_if_rule_still_skips_the_commands_it_does_not_name(
    tmp_path: Path, command: str
) -> None:
    event = _event("gemini-0.61.0-shell-BeforeTool.json", command=command)
    assert _answer(tmp_path, "gemini", "@shell", "Bash(rm *)", event) == ""


@pytest.mark.parametrize(
    ("kind", "matcher", "rule", "path", "denied"),
    [
        ("gemini-0.61.0-file_write-BeforeTool.json", "@file_write", "Write(src/**)", "src/a", 1),
        ("gemini-0.61.0-file_write-BeforeTool.json", "@file_write", "Write(src/**)", "doc/a", 0),
        ("gemini-0.61.0-file_edit-BeforeTool.json", "@file_edit", "Edit(*.py)", "src/a.py", 1),
        ("gemini-0.61.0-file_edit-BeforeTool.json", "@file_edit", "Edit(*.py)", "a.txt", 0),
        ("gemini-0.61.0-file_read-BeforeTool.json", "@file_read", "Read(.env)", ".env", 1),
        ("gemini-0.61.0-file_read-BeforeTool.json", "@file_read", "Bash", ".env", 0),
    ],
)
def test_a_file_if_rule_reads_geminis_file_tools_as_claude_codes(
    tmp_path: Path, kind: str, matcher: str, rule: str, path: str, denied: int
) -> None:
    event = _event(kind, file_path=path)
    assert _denied(_answer(tmp_path, "gemini", matcher, rule, event)) == bool(denied)


def test_an_edit_if_rule_guards_a_patch_codex_runs_through_its_shell(tmp_path: Path) -> None:
    event = _event("codex-0.171.0-shell-PreToolUse.json", command=HEREDOC)
    for rule in ("Edit", "Edit(notes.txt)"):
        assert _denied(_answer(tmp_path, "codex", "Edit", rule, event)), rule
    plain = _event("codex-0.171.0-shell-PreToolUse.json", command="cat notes.txt")
    assert _answer(tmp_path, "codex", "Edit|Bash", "Edit", plain) == ""


def _codex(project: Path, tmp_path: Path, matcher: str, rule: str, command: str) -> str:
    need_cli(CODEX)
    (project / "settings.json").write_text(_settings(matcher, rule))
    install_agent("codex", project=project, hooks_file="settings.json")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = {"OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3")}
    run = run_codex(project, home, [("call_1", command)], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    return run.told()


def test_the_real_codex_cli_is_kept_from_an_rm_in_a_subshell(project: Path, tmp_path: Path) -> None:
    told = _codex(project, tmp_path, "Bash", "Bash(rm *)", "(rm -r victim)")
    assert (project / "victim" / "keep.txt").exists(), told
    assert "the if guard says no" in told


def test_the_real_codex_cli_is_kept_from_a_shell_patch_by_an_edit_if_rule(
    project: Path, tmp_path: Path
) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\n")
    told = _codex(project, tmp_path, "Edit", "Edit(notes.txt)", HEREDOC)
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n", told
    assert "the if guard says no" in told


@pytest.mark.parametrize("command", ["rm -r victim", "echo hi && rm -r victim"])
def test_the_real_gemini_cli_is_kept_from_an_rm_by_a_bash_if_rule(
    project: Path, tmp_path: Path, command: str
) -> None:
    need_cli(GEMINI)
    (project / "settings.json").write_text(_settings("@shell", "Bash(rm *)"))
    install_agent("gemini", project=project, hooks_file="settings.json")
    env = {"OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3")}
    run = run_gemini(project, tmp_path / "home", [("call_1", command)], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "the if guard says no" in run.told(), skip_reason(run)


@pytest.mark.parametrize(
    ("rule", "denied"),
    [
        ("mcp__my-files", True),
        ("mcp__my-files__delete_file", True),
        ("mcp__my-files__*", True),
        ("mcp__my-files__delete_file(*)", True),
        ("mcp__my_files", True),
        ("mcp__other-files", False),
        ("mcp__my-files__rm", False),
    ],
)
def test_an_mcp_if_rule_names_a_server_codex_renames_as_it_is_configured(
    tmp_path: Path, rule: str, denied: bool
) -> None:
    answer = _answer(tmp_path, "codex", "mcp__my-files__delete_file", rule, RENAMED_CALL)
    assert _denied(answer) == denied, answer


def test_the_real_codex_cli_is_kept_from_an_mcp_tool_by_an_if_rule_on_its_server(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    (project / "settings.json").write_text(_settings("mcp__my-files__.*", "mcp__my-files"))
    install_agent("codex", project=project, hooks_file="settings.json")
    home = tmp_path / "home"
    configure_codex(project, home, "my-files")
    run = run_codex(project, home, mcp_steps("mcp__my_files"), extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    assert "the if guard says no" in run.told(), skip_reason(run)
