"""Command-hook output the reference does not spell out, read by the real Claude Code CLI and by
otelhooks: each must decide the same way.

For each stdout below, a plain command hook in ``.claude/settings.json`` (no otelhooks) prints it
before the scripted ``rm -r victim``; Claude Code 2.1 must block the call with the reason shown.
The same script as an otelhooks command hook must block with the same reason. Two of these were
silent allows in otelhooks: a deny after a byte-order mark (Claude Code trims stdout as
JavaScript does, U+FEFF included), and a top-level ``"decision": "block"`` beside a
``permissionDecision`` of ``allow`` (with its ``updatedInput``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from otelhooks.testing import TestPipeline
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(CLI_TEST_S)
# the bridge daemon an installed hook starts leaves soon after the test
BRIDGE_ENV = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}


def _specific(decision: str, **more: Any) -> dict[str, Any]:
    return {"hookEventName": "PreToolUse", "permissionDecision": decision, **more}


DENY = json.dumps({"hookSpecificOutput": _specific("deny", permissionDecisionReason="bom deny")})
OUTPUTS = {
    "deny-after-a-byte-order-mark": ("\ufeff" + DENY + "\n", "bom deny"),
    "block-beside-an-allow-with-a-rewrite": (
        json.dumps(
            {
                "decision": "block",
                "reason": "block wins",
                "hookSpecificOutput": _specific("allow", updatedInput={"command": "true"}),
            }
        ),
        "block wins",
    ),
    "block-beside-an-ask": (
        json.dumps(
            {
                "decision": "block",
                "reason": "block wins",
                "hookSpecificOutput": _specific("ask", permissionDecisionReason="sure?"),
            }
        ),
        "block wins",
    ),
    "block-beside-a-deny-gives-the-denys-reason": (
        json.dumps(
            {
                "decision": "block",
                "reason": "block",
                "hookSpecificOutput": _specific("deny", permissionDecisionReason="deny's own"),
            }
        ),
        "deny's own",
    ),
}


def _tool_result(request: dict[str, Any]) -> dict[str, Any]:
    (message,) = request["messages"][-1:]
    (result,) = [b for b in message["content"] if b.get("type") == "tool_result"]
    return dict(result)


def _claude_blocks(tmp_path: Path, settings: Path, write: Callable[[Path], object]) -> str:
    """What Claude Code tells the model of a scripted ``rm -r victim`` once ``write`` has
    made the project's ``settings`` file; the folder must survive."""
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    write(project / settings)
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    run = run_claude(project, tmp_path / "home", steps, extra_env=BRIDGE_ENV)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    told = _tool_result(run.requests[-1])
    assert told["is_error"] is True
    return str(told["content"])


def _plain_settings(command: list[str]) -> Callable[[Path], object]:
    hook = {"type": "command", "command": " ".join(command)}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}

    def write(path: Path) -> None:
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(settings))

    return write


def _answer(tmp_path: Path, name: str) -> tuple[list[str], str]:
    stdout, reason = OUTPUTS[name]
    answer = tmp_path / "answer.txt"
    answer.write_text(stdout, encoding="utf-8")
    return ["cat", str(answer)], reason


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_claude_code_and_otelhooks_block_alike(
    name: str, tmp_path: Path, pipe: TestPipeline
) -> None:
    command, reason = _answer(tmp_path, name)
    settings = Path(".claude/settings.json")
    told = _claude_blocks(tmp_path, settings, _plain_settings(command))
    assert told == f"PreToolUse:Bash hook error: {reason}"

    pipe.register({"id": "same", "type": "PreToolUse", "command": command})
    ran: list[Any] = []

    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "Bash", {"command": "rm -r victim"}, tool)
    assert ran == []
    assert result.content == reason


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_the_claude_code_bridge_blocks_as_claude_code_does(name: str, tmp_path: Path) -> None:
    """The same command in an otelhooks hook file, run by the installed bridge: the bridge's
    answer blocks the call with the same reason."""
    command, reason = _answer(tmp_path, name)
    guard = {"id": "same", "type": "PreToolUse", "matcher": "Bash", "command": command}

    def write(path: Path) -> None:
        (path.parent.parent / "guards.json").write_text(json.dumps({"hooks": [guard]}))
        install(path, hooks_file="guards.json")

    told = _claude_blocks(tmp_path, Path(".claude/settings.local.json"), write)
    assert told == f"PreToolUse:Bash hook error: {reason}"
