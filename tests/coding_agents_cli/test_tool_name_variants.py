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

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import (
    HEREDOC,
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
    answer = bridge_answer(tmp_path, "codex", tool_guard("Edit|Write"), _codex_bash(command))
    if patches:
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
    else:
        assert answer == ""


@pytest.mark.parametrize("matcher", ["apply_patch", "@file_edit", "@file_write", "@shell"])
def test_a_codex_patch_through_the_shell_meets_the_patch_and_the_shell_guards(
    tmp_path: Path, matcher: str
) -> None:
    answer = json.loads(bridge_answer(tmp_path, "codex", tool_guard(matcher), _codex_bash(HEREDOC)))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_real_codex_cli_is_kept_from_a_patch_run_through_its_shell(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    run = patch_under_codex(project, tmp_path, "Edit|Write", [("call_patch", HEREDOC)])
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
        answer = bridge_answer(tmp_path, "gemini", tool_guard(matcher), event)
        assert json.loads(answer)["decision"] == "deny"


def test_the_real_gemini_cli_is_kept_from_grep_search_asked_for_by_its_former_name(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(tool_guard("grep_search"))
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    steps = [{"id": "call_grep", "tool": "search_file_content", "args": {"pattern": "precious"}}]
    run = run_gemini(project, tmp_path / "home", steps, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    told = run.told()
    assert "not this tool" in told, skip_reason(run)
    assert "keep.txt" not in told  # the search did not run
