"""Guards written from the references, answered so that Codex CLI 0.171 reads the decision.

Codex CLI refuses an answer it finds a field in that it does not support, or a deny whose reason
is blank: it takes the whole answer for a failed hook, its deny too, and runs the tool
(``codex-rs/hooks/src/engine/output_parser.rs``: ``continue: false``, ``stopReason`` and
``suppressOutput`` on ``PreToolUse``, ``suppressOutput`` on ``PostToolUse``; a deny or a block
needs a reason that is not blank). A guard written as Claude Code's reference allows (a
``continue: false`` stops the run, ``suppressOutput`` hides the hook's output, a reason left
blank) was passed on so: the real CLI ran ``rm -r victim``, and a ``PostToolUse`` block meant to
withhold a tool's output (Codex shows the model the reason instead) showed the model the secret.
The bridge now leaves out of a Codex answer what Codex refuses (the deny stands, the stop it
cannot carry is said in ``systemMessage``) and gives a blank reason the hook's name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

CAPTURED = Path(__file__).parent / "captured"
# what each guard prints for a tool call that holds `rm -r` (or, after the call, `cat secret`)
PRE_ANSWERS = {
    "continue-false": {"continue": False, "stopReason": "no deleting here"},
    "deny-suppress-output": {
        "suppressOutput": True,
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no deleting here",
        },
    },
    "deny-blank-reason": {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": " ",
        }
    },
    "block-blank-reason": {"decision": "block", "reason": "  "},
}
POST_ANSWERS = {
    "block-suppress-output": {
        "decision": "block",
        "reason": "output withheld",
        "suppressOutput": True,
    },
    "block-blank-reason": {"decision": "block", "reason": " "},
}


def _guard(event: str, needle: str, answer: dict[str, Any]) -> str:
    command = f"case \"$HOOK_TOOL_INPUT\" in *'{needle}'*) echo '{json.dumps(answer)}';; esac"
    return (
        f"hooks:\n  - id: guard\n    type: {event}\n    matcher: '@shell'\n"
        f"    command: {json.dumps(command)}\n"
    )


def _codex_reads(event: str, answer: dict[str, Any]) -> str | None:
    """What Codex CLI 0.171 refuses ``answer`` for (``None``: it reads it), by its output
    parser's rules for the two events."""
    refused = ("continue", "stopReason", "suppressOutput") if event == "PreToolUse" else ()
    refused += ("suppressOutput",)
    for key in refused:
        if key in answer and (key != "continue" or answer[key] is False):
            return f"unsupported {key}"
    specific = answer.get("hookSpecificOutput") or {}
    reason = str(specific.get("permissionDecisionReason") or "")
    if specific.get("permissionDecision") == "deny" and not reason.strip():
        return "deny without a reason"
    if answer.get("decision") == "block" and not str(answer.get("reason") or "").strip():
        return "block without a reason"
    return None


def _bridge(tmp_path: Path, hooks: str, *events: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "hooks.yaml").write_text(hooks)
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="codex",
    )
    for event in events:
        response = run_hook(json.dumps(event), options, environ={})
        # a deny or a block is exit 2 too (its reason on stderr), read whatever stdout holds
        out = response.stdout
        denied = '"permissionDecision": "deny"' in out or '"decision": "block"' in out
        assert response.exit_code == (2 if denied else 0), response.stderr
    answer: dict[str, Any] = json.loads(response.stdout)
    return answer


def _captured(name: str, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((CAPTURED / f"codex-{name}.json").read_text())
    return {**event, **fields}


@pytest.mark.parametrize("case", list(PRE_ANSWERS))
def test_a_pre_tool_use_guard_is_a_deny_codex_reads(tmp_path: Path, case: str) -> None:
    answer = _bridge(
        tmp_path, _guard("PreToolUse", "rm -r", PRE_ANSWERS[case]), _captured("PreToolUse")
    )
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert _codex_reads("PreToolUse", answer) is None, answer
    if case == "continue-false":  # the stop Codex cannot make is said, not dropped
        assert "no deleting here" in answer["hookSpecificOutput"]["permissionDecisionReason"]
        assert "Codex CLI cannot do before a tool call" in answer["systemMessage"]


@pytest.mark.parametrize("case", list(POST_ANSWERS))
def test_a_post_tool_use_block_is_one_codex_reads(tmp_path: Path, case: str) -> None:
    call = {"tool_input": {"command": "cat secret.txt"}, "tool_use_id": "call_cat"}
    answer = _bridge(
        tmp_path,
        _guard("PostToolUse", "cat secret", POST_ANSWERS[case]),
        _captured("PreToolUse", **call),
        _captured("PostToolUse", **call, tool_response="S-42"),
    )
    assert answer["decision"] == "block"
    assert _codex_reads("PostToolUse", answer) is None, answer


def _run(project: Path, tmp_path: Path, hooks: str, steps: list[tuple[str, str]]) -> Any:
    need_cli(CODEX)
    (project / "hooks.yaml").write_text(hooks)
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = bridge_env(tmp_path)
    run = run_codex(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    return run


@pytest.mark.parametrize("case", ["continue-false", "deny-suppress-output", "deny-blank-reason"])
def test_the_real_codex_cli_obeys_a_guard_written_from_claude_codes_reference(
    project: Path, tmp_path: Path, case: str
) -> None:
    hooks = _guard("PreToolUse", "rm -r", PRE_ANSWERS[case])
    run = _run(project, tmp_path, hooks, [("call_rm", "rm -r victim")])
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "Command blocked by PreToolUse hook" in run.told()


def test_the_real_codex_cli_withholds_an_output_a_guard_withheld_without_showing_it(
    project: Path, tmp_path: Path
) -> None:
    (project / "secret.txt").write_text("S-42-SECRET")
    hooks = _guard("PostToolUse", "cat secret", POST_ANSWERS["block-suppress-output"])
    run = _run(project, tmp_path, hooks, [("call_cat", "cat secret.txt")])
    assert "S-42-SECRET" not in run.told()
    assert "output withheld" in run.told()
