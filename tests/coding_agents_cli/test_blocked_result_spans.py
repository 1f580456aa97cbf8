"""What a coding-agent bridge blocked names the hook and its reason on its span, as the in-process
and MCP gateway spans do.

A tool output a ``tool_result_persist`` hook withholds, through the command bridge of each CLI
(the input each real CLI sent, captured): its ``execute_tool`` span carries the
``otelhooks.tool_result_persist`` event. Before, the span said ``otelhooks.tool.outcome:
blocked`` and nothing of who withheld the output or why, though the answer the CLI got named both.

A Claude Code ``PermissionRequest`` a command hook denies (``decision.behavior: deny``, a real
process): the request's span and the call's ``execute_tool`` span say
``otelhooks.hook.decided_by``. Before, it was empty.

A prompt a hook refuses (a ``before_agent_start`` guard's ``Block``, a ``UserPromptSubmit``
command's ``decision: block``), for each CLI: the turn's ``invoke_agent`` span names the hook and
its reason. Before, it said ``interrupted`` and nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks.integrations.claude_code import BridgeOptions, run_hook

pytestmark = pytest.mark.timeout(120)

KINDS = Path(__file__).parent / "captured" / "kinds"
GUARD = """\
from otelhooks import Block

def scan(event):
    if "S-42" in str(event.result):
        return Block("the output holds a key")
    return None

def broken(event):
    raise RuntimeError("the scanner is down")
"""
HOOKS = """\
hooks:
  - id: leak-check
    type: tool_result_persist
    intercept: true
    script: guard.py:{handler}
    on_error: block
"""
CALLS = {
    "claude-code": (
        "claude-code-2.1.337-shell-PreToolUse",
        "claude-code-2.1.337-shell-PostToolUse",
    ),
    "codex": ("codex-0.171.0-shell-PreToolUse", "codex-0.171.0-shell-PostToolUse"),
    "gemini": ("gemini-0.61.0-shell-BeforeTool", "gemini-0.61.0-shell-AfterTool"),
}
REASONS = {"scan": "the output holds a key", "broken": "RuntimeError: the scanner is down"}


def _with_output(dialect: str, event: dict[str, Any]) -> dict[str, Any]:
    if dialect == "gemini":
        return {**event, "tool_response": {"llmContent": "S-42-KEY", "returnDisplay": "S-42"}}
    return {**event, "tool_response": "S-42-KEY"}


@pytest.mark.parametrize("handler", ["scan", "broken"])
@pytest.mark.parametrize("dialect", sorted(CALLS))
def test_a_withheld_output_span_names_the_hook_and_why(
    tmp_path: Path, dialect: str, handler: str
) -> None:
    (tmp_path / "guard.py").write_text(GUARD)
    (tmp_path / "hooks.yaml").write_text(HOOKS.format(handler=handler))
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        traces_out=str(traces),
        dialect=dialect,
    )
    pre, post = (json.loads((KINDS / f"{name}.json").read_text()) for name in CALLS[dialect])
    assert run_hook(json.dumps(pre), options, environ={}).exit_code == 0
    answer = run_hook(json.dumps(_with_output(dialect, post)), options, environ={})
    assert "S-42-KEY" not in answer.stdout

    (span,) = [s for s in read_otlp_json_lines(traces) if s["name"].startswith("execute_tool ")]
    assert span["attributes"]["otelhooks.tool.outcome"] == "blocked"
    (event,) = [e for e in span.get("events") or () if e["name"] == "otelhooks.tool_result_persist"]
    said = event["attributes"]
    assert said["otelhooks.message.blocked"] is True
    assert said["otelhooks.hook.decided_by"] == "leak-check"
    assert REASONS[handler] in said["otelhooks.hook.decision_reason"]


DENY_REQUEST = """\
hooks:
  - id: no-rm-request
    type: PermissionRequest
    command: >-
      cat >/dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
      "decision": {"behavior": "deny", "message": "rm is not for agents"}}}'
"""


def test_a_permission_request_a_command_hook_denies_names_the_hook(tmp_path: Path) -> None:
    from tests.conformance.claude_code._bridge_cli import fixture

    (tmp_path / "hooks.yaml").write_text(DENY_REQUEST)
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        traces_out=str(traces),
    )
    inputs = fixture("hook_inputs.json")["inputs"]
    (request,) = [i["input"] for i in inputs if i["event"] == "PermissionRequest"]
    pre = {**request, "hook_event_name": "PreToolUse", "tool_use_id": "toolu_rm"}
    pre.pop("permission_suggestions", None)
    assert run_hook(json.dumps(pre), options, environ={}).exit_code == 0
    answer = json.loads(run_hook(json.dumps(request), options, environ={}).stdout)
    assert answer["hookSpecificOutput"]["decision"]["behavior"] == "deny"

    spans = {s["name"]: s["attributes"] for s in read_otlp_json_lines(traces)}
    for name in ("agent_lifecycle before_human_intervention", "execute_tool Bash"):
        assert spans[name]["otelhooks.hook.decided_by"] == "no-rm-request", name
        assert spans[name]["otelhooks.hook.decision_reason"] == "rm is not for agents", name
    assert spans["execute_tool Bash"]["otelhooks.tool.outcome"] == "denied"


CAPTURED = Path(__file__).parent / "captured"
PROMPTS = {
    "claude-code": None,  # the reference's own UserPromptSubmit input
    "codex": "codex-UserPromptSubmit.json",
    "gemini": "gemini-BeforeAgent.json",
}
PROMPT_HOOKS = {
    "script": """\
hooks:
  - id: no-cleanup
    type: before_agent_start
    script: guard.py:refuse
""",
    "command": """\
hooks:
  - id: no-cleanup
    type: UserPromptSubmit
    command: >-
      cat >/dev/null; echo '{"decision": "block", "reason": "not this prompt"}'
""",
}
REFUSE = """\
from otelhooks import Block

def refuse(event):
    return Block("not this prompt")
"""


@pytest.mark.parametrize("form", sorted(PROMPT_HOOKS))
@pytest.mark.parametrize("dialect", sorted(PROMPTS))
def test_a_refused_prompt_names_the_hook_on_the_turn_span(
    tmp_path: Path, dialect: str, form: str
) -> None:
    """Before, the turn's ``invoke_agent`` span said ``interrupted`` and nothing of who
    refused the prompt or why (an in-process run's span names both)."""
    from tests.conformance.claude_code._bridge_cli import fixture

    (tmp_path / "guard.py").write_text(REFUSE)
    (tmp_path / "hooks.yaml").write_text(PROMPT_HOOKS[form])
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        traces_out=str(traces),
        dialect=dialect,
    )
    captured = PROMPTS[dialect]
    if captured is None:
        inputs = fixture("hook_inputs.json")["inputs"]
        (prompt,) = [i["input"] for i in inputs if i["event"] == "UserPromptSubmit"]
    else:
        prompt = json.loads((CAPTURED / captured).read_text())
    answer = run_hook(json.dumps(prompt), options, environ={})
    assert "not this prompt" in answer.stdout + answer.stderr

    (span,) = [s for s in read_otlp_json_lines(traces) if s["name"].startswith("invoke_agent ")]
    said = span["attributes"]
    assert said["otelhooks.operation.complete_reason"] == "interrupted"
    assert said["otelhooks.hook.decided_by"] == "no-cleanup"
    assert said["otelhooks.hook.decision_reason"] == "not this prompt"
