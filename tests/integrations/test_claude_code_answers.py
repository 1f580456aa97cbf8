"""docs/adapters.md's table *What a hook's answer becomes* drives this test: for every row, every
hook form it names gives that field in the bridge's answer to Claude Code.

The inputs are the reference's own input examples (``fixtures/hook_inputs.json``); a ``json``
form prints the reference's own output example at the row's line (``fixtures/hook_outputs.json``)
when there is one there, else an object with just the row's field. Commands are real processes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Block, HookEvent
from otelhooks.integrations.claude_code import BridgeState, HookResponse
from otelhooks.integrations.coding_agents import CodingAgentBridge
from tests.conformance.claude_code._bridge_cli import fixture

DOC = Path(__file__).parents[2] / "docs" / "adapters.md"
INPUTS = {i["event"]: i["input"] for i in fixture("hook_inputs.json")["inputs"]}
OUTPUTS = {o["line"]: o["output"] for o in fixture("hook_outputs.json")["outputs"]}
_CANONICAL = {
    "PreToolUse": "before_tool_call",
    "PostToolUse": "after_tool_call",
    "UserPromptSubmit": "before_agent_start",
}


def table() -> list[tuple[str, str, list[str], int]]:
    text = DOC.read_text()
    section = text[text.index("#### What a hook's answer becomes") :]
    rows = []
    for line in section.splitlines():
        found = re.match(r"\| `(\w+)` \| (.+?) \| ([a-z0-9, ]+) \| hooks\.md:(\d+) \|$", line)
        if found:
            event, field, forms, ref = found.groups()
            rows.append((event, field.strip("`"), [f.strip() for f in forms.split(",")], int(ref)))
        elif rows and not line.startswith("|"):
            break
    return rows


ROWS = table()


def _py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", f"import sys; sys.stdin.read(); {code}", *args]


def _json_for(event: str, field: str, ref: int) -> dict[str, Any]:
    example = OUTPUTS.get(ref)
    if example is not None:
        specific = example.get("hookSpecificOutput", {})
        if specific.get("hookEventName", event) == event:
            return dict(example)
        return {k: v for k, v in example.items() if k != "hookSpecificOutput"}
    path = field.split(".")
    value: Any = {"systemMessage": "a warning", "decision": "block"}.get(path[-1], "VALUE")
    doc: dict[str, Any] = {}
    cursor = doc
    for key in path[:-1]:
        cursor = cursor.setdefault(
            key, {"hookEventName": event} if key == "hookSpecificOutput" else {}
        )
    cursor[path[-1]] = value
    return doc


def _hooks(event: str, field: str, form: str, ref: int) -> list[dict[str, Any]]:
    if form == "json":
        answer = json.dumps(_json_for(event, field, ref))
        return [{"id": "h", "type": event, "command": _py("sys.stdout.write(sys.argv[1])", answer)}]
    if form == "exit2":
        return [{"id": "h", "type": event, "command": _py("sys.stderr.write('R2'); sys.exit(2)")}]
    if form == "text":
        text = "/tmp/worktree-7" if event == "WorktreeCreate" else "plain context"
        return [{"id": "h", "type": event, "command": _py("print(sys.argv[1])", text)}]
    if form == "continue":
        answer = json.dumps({"continue": False, "stopReason": "stop all"})
        return [{"id": "h", "type": event, "command": _py("sys.stdout.write(sys.argv[1])", answer)}]
    if form == "block":
        return [{"id": "h", "type": event, "handler": lambda e: Block("python says no")}]
    if form == "mock":
        return [{"id": "h", "type": "beforeToolCall", "handler": lambda e: e.mock("canned")}]
    if form == "rewrite":
        return [{"id": "h", "type": "beforeToolCall", "handler": lambda e: {"args": {"x": 1}}}]
    if form == "prompt":
        return [{"id": "h", "type": "before_agent_start", "handler": _new_prompt}]
    if form == "persist":
        return [{"id": "h", "type": "tool_result_persist", "handler": _redact, "intercept": True}]
    if form == "sending":
        return [{"id": "h", "type": "message_sending", "handler": lambda e: {"content": "shown"}}]
    raise AssertionError(f"unknown form {form}")


def _new_prompt(event: HookEvent) -> dict[str, Any]:
    return {"userMessage": "a cleaner prompt", "input": "a cleaner prompt"}


def _redact(event: HookEvent) -> dict[str, Any]:
    return {"result": "[redacted]"}


def _answer(tmp_path: Path, event: str, hooks: list[dict[str, Any]]) -> HookResponse:
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "state.sqlite3"))
    try:
        payload = dict(INPUTS[event])
        if event == "PostToolUse":
            payload["tool_response"] = {"stdout": "S-42", "stderr": "", "interrupted": False}
        return bridge.handle(payload)
    finally:
        bridge.close()


def _at(doc: Any, path: str) -> Any:
    for key in path.split("."):
        assert isinstance(doc, dict), (path, doc)
        assert key in doc, (path, doc)
        doc = doc[key]
    return doc


def test_the_table_names_every_event_claude_code_lets_a_hook_decide() -> None:
    from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS

    # PreModelSwitch postdates the docs' mirror the table cites line by line (hooks.md): its
    # answer is held by the real CLI in tests/claude_code_cli/test_model_switch.py
    assert {row[0] for row in ROWS} == ANSWERING_EVENTS - {"PreModelSwitch"}


@pytest.mark.parametrize(
    ("event", "field", "form", "ref"),
    [(e, f, form, r) for e, f, forms, r in ROWS for form in forms],
    ids=[f"{e}-{f}-{form}" for e, f, forms, _ in ROWS for form in forms],
)
def test_each_hook_form_of_the_table_gives_its_field(
    tmp_path: Path, event: str, field: str, form: str, ref: int
) -> None:
    response = _answer(tmp_path, event, _hooks(event, field, form, ref))
    if field == "exit code 2":
        assert response.exit_code == 2, response
        assert response.stderr
        return
    if event == "WorktreeCreate":
        assert (response.exit_code, response.stdout) == (0, "/tmp/worktree-7")
        assert json.loads(response.http_body or "")["hookSpecificOutput"]["worktreePath"]
        return
    assert response.exit_code == 0, response
    _at(json.loads(response.stdout), field)


def test_continue_false_wins_over_an_allow_and_denies_the_tool() -> None:
    from otelhooks._config._claude_answer import HookAnswer
    from otelhooks.integrations.coding_agents._combine import combine

    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    stop = {"continue": False, "stopReason": "build failed"}
    out, _ = combine("PreToolUse", [HookAnswer("a", allow), HookAnswer("b", stop)])
    assert out["continue"] is False
    assert out["stopReason"] == "build failed"
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("permission", ["allow", "ask", "defer"])
def test_a_top_level_block_wins_over_a_permission_decision_but_deny(permission: str) -> None:
    # Claude Code 2.1 blocks with the top-level reason (tests/claude_code_cli/test_output_rules.py)
    from otelhooks._config._claude_answer import command_answer
    from otelhooks.integrations.coding_agents._combine import combine

    specific = {"permissionDecision": permission, "updatedInput": {"command": "true"}}
    printed = {"decision": "block", "reason": "no", "hookSpecificOutput": specific}
    answer = command_answer("h", 0, json.dumps(printed), "")
    assert answer is not None
    out, _ = combine("PreToolUse", [answer], updated_input={"command": "true"})
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"] == "no"
    assert "updatedInput" not in out["hookSpecificOutput"]


def test_a_json_answer_after_a_byte_order_mark_is_read() -> None:
    from otelhooks._config._claude_answer import command_answer

    deny = {"hookSpecificOutput": {"permissionDecision": "deny"}, "systemMessage": "said"}
    answer = command_answer("h", 0, "\ufeff" + json.dumps(deny) + "\n", "")
    assert answer is not None
    assert answer.output == deny


@pytest.mark.parametrize(
    ("decisions", "winner"),
    [(["allow", "ask"], "ask"), (["ask", "defer"], "defer"), (["defer", "deny", "allow"], "deny")],
)
def test_pre_tool_use_decisions_combine_deny_defer_ask_allow(
    decisions: list[str], winner: str
) -> None:
    from otelhooks._config._claude_answer import HookAnswer
    from otelhooks.integrations.coding_agents._combine import combine

    answers = [
        HookAnswer(f"h{i}", {"hookSpecificOutput": {"permissionDecision": d}})
        for i, d in enumerate(decisions)
    ]
    out, _ = combine("PreToolUse", answers)
    assert out["hookSpecificOutput"]["permissionDecision"] == winner


def test_every_hooks_additional_context_reaches_claude() -> None:
    from otelhooks._config._claude_answer import HookAnswer
    from otelhooks.integrations.coding_agents._combine import combine

    answers = [
        HookAnswer("a", {"hookSpecificOutput": {"additionalContext": "one"}}),
        HookAnswer("b", {"hookSpecificOutput": {"additionalContext": "two"}}),
    ]
    out, _ = combine("PostToolUse", answers)
    assert out["hookSpecificOutput"]["additionalContext"] == "one\n\ntwo"


def test_deny_json_printed_before_exit_1_denies() -> None:
    from otelhooks._config._claude_answer import command_answer
    from otelhooks.integrations.coding_agents._combine import combine

    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}
    answer = command_answer("h", 1, json.dumps(deny), "")
    assert answer is not None
    out, _ = combine("PreToolUse", [answer])
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


_DENY_ASKED = {"hookEventName": "PreToolUse", "permissionDecision": "ask"}
_ALLOW_REWRITE = {
    "hookEventName": "PreToolUse",
    "permissionDecision": "allow",
    "updatedInput": {"cmd": "ls"},
}


@pytest.mark.parametrize(
    ("event", "output", "changed", "expected"),
    [
        # the engine blocked, the combined answer allowed: the block stands, the rewrite goes
        ("PreToolUse", {"hookSpecificOutput": dict(_ALLOW_REWRITE)}, True,
         {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                 "permissionDecisionReason": "no"}}),
        ("PreToolUse", {}, True,
         {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                 "permissionDecisionReason": "no"}}),
        ("UserPromptSubmit", {"systemMessage": "hi"}, True,
         {"systemMessage": "hi", "decision": "block", "reason": "no"}),
        # what already blocks is passed on as it is (a command's ask is its own block)
        ("PreToolUse", {"hookSpecificOutput": dict(_DENY_ASKED)}, False,
         {"hookSpecificOutput": _DENY_ASKED}),
        ("PreToolUse", {"continue": False, "stopReason": "halt"}, False,
         {"continue": False, "stopReason": "halt"}),
        ("UserPromptSubmit", {"decision": "block", "reason": "own"}, False,
         {"decision": "block", "reason": "own"}),
        # an event that cannot block is not made to
        ("SessionStart", {}, False, {}),
    ],
)  # fmt: skip
def test_a_combined_answer_never_allows_what_the_engine_blocked(
    event: str, output: dict[str, Any], changed: bool, expected: dict[str, Any]
) -> None:
    """The bridge reads a hook's output for the agent apart from the chain: whatever it makes
    of it, a verdict's block reaches the agent (and a disagreement is logged as an error)."""
    from structlog.testing import capture_logs

    from otelhooks import Verdict
    from otelhooks.integrations.coding_agents._answers import keep_block

    blocked = Verdict(blocked=True, decided_by="no-rm", reason="no")
    with capture_logs() as logs:
        assert keep_block(event, output, blocked) is changed
    assert output == expected
    assert [entry["log_level"] for entry in logs] == (["error"] if changed else [])
    assert keep_block(event, {}, Verdict()) is False  # nothing blocked: nothing to keep
