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
from pathlib import Path
from typing import Any

import pytest

from otelhooks.testing import TestPipeline
from tests.coding_agents_cli._runs import CLAUDE, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(120)


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


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_claude_code_and_otelhooks_block_alike(
    name: str, tmp_path: Path, pipe: TestPipeline
) -> None:
    stdout, reason = OUTPUTS[name]
    answer = tmp_path / "answer.txt"
    answer.write_text(stdout, encoding="utf-8")
    command = ["cat", str(answer)]

    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    hook = {"type": "command", "command": " ".join(command)}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    steps = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]
    run = run_claude(project, tmp_path / "home", steps)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    told = _tool_result(run.requests[-1])
    assert told["is_error"] is True
    assert told["content"] == f"PreToolUse:Bash hook error: {reason}"

    pipe.register({"id": "same", "type": "PreToolUse", "command": command})
    ran: list[Any] = []

    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "Bash", {"command": "rm -r victim"}, tool)
    assert ran == []
    assert result.content == reason
