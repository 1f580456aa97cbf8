"""A tool a CLI runs under another name than its hooks report meets the guard of the tool it runs.

- Codex CLI 0.171 takes a shell command that runs its patcher (``apply_patch <<'EOF' ... EOF``,
  also after ``cd DIR &&``, or ``applypatch``) for a patch and applies it itself, while its
  hooks see a ``Bash`` call: an ``Edit|Write`` (or ``@file_edit``) guard let the real CLI patch
  the file. Such a command is now matched by ``apply_patch``'s names too.
- Gemini CLI 0.61 runs a tool asked for by its former name (``search_file_content``) as the
  current one (``grep_search``), and its hooks get the former name: a ``grep_search`` guard let
  the real CLI search. The dialect now names the call by the tool it runs, the former name an
  alias.
"""

from __future__ import annotations

import json
import shlex
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

KINDS = Path(__file__).parent / "captured" / "kinds"
PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+ALPHA\n beta\n*** End Patch\n"
HEREDOC = f"apply_patch <<'EOF'\n{PATCH}EOF\n"


def _guard(matcher: str) -> str:
    return (
        "hooks:\n  - id: guard\n    type: PreToolUse\n"
        f"    matcher: {json.dumps(matcher)}\n"
        "    command: \"echo 'not this tool' >&2; exit 2\"\n"
    )


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }


def _answer(tmp_path: Path, dialect: str, matcher: str, event: dict[str, Any]) -> str:
    (tmp_path / "hooks.yaml").write_text(_guard(matcher))
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    return run_hook(json.dumps(event), options, environ={}).stdout


def _codex_bash(command: str) -> dict[str, Any]:
    # Codex CLI 0.171's PreToolUse of its shell tool, as captured
    event: dict[str, Any] = json.loads((KINDS / "codex-0.171.0-shell-PreToolUse.json").read_text())
    event["tool_input"] = {"command": command}
    return event


@pytest.mark.parametrize(
    ("command", "patches"),
    [
        (HEREDOC, True),
        (f"cd sub && {HEREDOC}", True),
        (HEREDOC.replace("apply_patch", "applypatch"), True),
        (f"apply_patch {shlex.quote(PATCH)}", True),  # not applied by Codex; matched all the same
        ("grep -r apply_patches .", False),
        ("echo hi", False),
    ],
    ids=["heredoc", "after-cd", "applypatch", "argument", "another-word", "plain"],
)
def test_a_codex_shell_command_that_runs_the_patcher_meets_a_patch_guard(
    tmp_path: Path, command: str, patches: bool
) -> None:
    answer = _answer(tmp_path, "codex", "Edit|Write", _codex_bash(command))
    if patches:
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
    else:
        assert answer == ""


@pytest.mark.parametrize("matcher", ["apply_patch", "@file_edit", "@file_write", "@shell"])
def test_a_codex_patch_through_the_shell_meets_the_patch_and_the_shell_guards(
    tmp_path: Path, matcher: str
) -> None:
    answer = json.loads(_answer(tmp_path, "codex", matcher, _codex_bash(HEREDOC)))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_real_codex_cli_is_kept_from_a_patch_run_through_its_shell(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    (project / "notes.txt").write_text("alpha\nbeta\n")
    (project / "hooks.yaml").write_text(_guard("Edit|Write"))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, [("call_patch", HEREDOC)], extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert "not this tool" in run.told(), skip_reason(run)


@pytest.mark.parametrize("matcher", ["grep_search", "search_file_content"])
def test_a_gemini_tool_asked_for_by_either_name_meets_a_guard_on_either(
    tmp_path: Path, matcher: str
) -> None:
    event = json.loads((KINDS / "gemini-0.61.0-shell-BeforeTool.json").read_text())
    for name in ("search_file_content", "grep_search"):
        event = {**event, "tool_name": name, "tool_input": {"pattern": "precious"}}
        assert json.loads(_answer(tmp_path, "gemini", matcher, event))["decision"] == "deny"


def test_the_real_gemini_cli_is_kept_from_grep_search_asked_for_by_its_former_name(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(_guard("grep_search"))
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    steps = [{"id": "call_grep", "tool": "search_file_content", "args": {"pattern": "precious"}}]
    run = run_gemini(project, tmp_path / "home", steps, extra_env=_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    told = run.told()
    assert "not this tool" in told, skip_reason(run)
    assert "keep.txt" not in told  # the search did not run
