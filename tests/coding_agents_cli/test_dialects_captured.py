"""Each CLI's captured hook inputs (``captured/``, written by the real Codex CLI 0.171 and Gemini
CLI 0.61) through the bridge: tool kinds match each agent's own tool name, and a decision is
answered in that CLI's own format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import compile_matcher
from otelhooks.integrations.claude_code import BridgeOptions, run_hook

CAPTURED = Path(__file__).parent / "captured"
DENY = """\
hooks:
  - id: no-shell
    type: PreToolUse
    matcher: "{matcher}"
    command: "echo 'no shell here' >&2; exit 2"
"""


def _captured(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / f"{name}.json").read_text())
    return data


@pytest.mark.parametrize(
    ("captured", "kind"),
    [
        ("codex-PreToolUse", "@shell"),
        ("codex-PostToolUse", "@shell"),
        ("gemini-BeforeTool", "@shell"),
        ("gemini-AfterTool", "@shell"),
    ],
)
def test_tool_kind_matches_the_captured_tool_name(captured: str, kind: str) -> None:
    tool = _captured(captured)["tool_name"]
    assert compile_matcher(kind, "otelhooks").matches((tool,))
    assert not compile_matcher("@file_read", "otelhooks").matches((tool,))


def _deny(tmp_path: Path, dialect: str, captured: str, matcher: str) -> Any:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(DENY.format(matcher=matcher))
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=dialect
    )
    return run_hook(json.dumps(_captured(captured)), options, environ={})


def test_codex_pre_tool_use_deny_is_claude_codes_deny_json(tmp_path: Path) -> None:
    response = _deny(tmp_path, "codex", "codex-PreToolUse", "@shell")
    answer = json.loads(response.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "no shell here" in answer["permissionDecisionReason"]


def test_gemini_before_tool_deny_is_geminis_decision_json(tmp_path: Path) -> None:
    response = _deny(tmp_path, "gemini", "gemini-BeforeTool", "@shell")
    answer = json.loads(response.stdout)
    assert answer["decision"] == "deny"
    assert "no shell here" in answer["reason"]
    assert "hookSpecificOutput" not in answer


def test_gemini_before_tool_of_another_kind_is_not_answered(tmp_path: Path) -> None:
    response = _deny(tmp_path, "gemini", "gemini-BeforeTool", "@web_fetch")
    assert (response.exit_code, response.stdout) == (0, "")


def test_unknown_tool_kind_is_a_config_error() -> None:
    from otelhooks import InvalidMatcherError

    with pytest.raises(InvalidMatcherError, match="unknown tool kind '@shel'"):
        compile_matcher("@shel", "otelhooks")


def test_otelhooks_gemini_command_answers_a_captured_before_tool(tmp_path: Path) -> None:
    import subprocess
    import sys

    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(DENY.format(matcher="@shell"))
    command = [sys.executable, "-m", "otelhooks", "gemini", "--hooks", str(hooks)]
    done = subprocess.run(
        [*command, "--state", str(tmp_path / "state.sqlite3")],
        input=(CAPTURED / "gemini-BeforeTool.json").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"decision": "deny", "reason": "no shell here"}


def test_gemini_fail_closed_denies_in_geminis_format(tmp_path: Path) -> None:
    options = BridgeOptions(
        hooks=(str(tmp_path / "missing.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="gemini",
        fail_closed=True,
    )
    response = run_hook(json.dumps(_captured("gemini-BeforeTool")), options, environ={})
    answer = json.loads(response.stdout)
    assert answer["decision"] == "deny"
    assert "fail-closed" in answer["reason"]


def test_gemini_after_agent_ends_the_turn_as_stop(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        state=str(tmp_path / "state.sqlite3"), dialect="gemini", traces_out=str(traces)
    )
    for name in ("gemini-BeforeAgent", "gemini-AfterAgent"):
        assert run_hook(json.dumps(_captured(name)), options, environ={}).exit_code == 0
    spans = [
        span
        for line in traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    assert [s["name"] for s in spans] == ["invoke_agent gemini-cli"]
    reasons = [
        a["value"]
        for a in spans[0]["attributes"]
        if a["key"] == "otelhooks.operation.complete_reason"
    ]
    assert reasons == [{"stringValue": "done"}]


def _spans(traces: Path) -> list[dict[str, Any]]:
    return [
        span
        for line in traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def _attribute(span: dict[str, Any], key: str) -> Any:
    found = [a["value"] for a in span["attributes"] if a["key"] == key]
    return next(iter(found[0].values())) if found else None


def test_gemini_model_calls_between_tool_calls_take_no_tool_call_index(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    options = BridgeOptions(
        state=str(tmp_path / "state.sqlite3"), dialect="gemini", traces_out=str(traces)
    )
    events = [_captured("gemini-BeforeAgent")]
    for n in range(3):
        events += [_captured("gemini-BeforeModel"), _captured("gemini-AfterModel")]
        for name in ("gemini-BeforeTool", "gemini-AfterTool"):
            event = _captured(name)
            event["tool_input"] = {"command": f"echo {n}"}
            events.append(event)
    events.append(_captured("gemini-AfterAgent"))
    for event in events:
        assert run_hook(json.dumps(event), options, environ={}).exit_code == 0
    spans = _spans(traces)
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert len([s for s in spans if s["name"].startswith("chat ")]) == 3
    indexes = [int(_attribute(s, "otelhooks.tool.call_index")) for s in tools]
    assert indexes == [0, 1, 2]


def _gemini_mcp_call() -> dict[str, Any]:
    # Gemini CLI 0.61's BeforeTool of an MCP tool: its name mcp_<server>_<tool>, and the
    # mcp_context its executeToolWithHooks adds (extractMcpContext in its bundle)
    event = _captured("gemini-BeforeTool")
    event["tool_name"] = "mcp_note_server_write_note"
    event["tool_input"] = {"text": "secret"}
    event["mcp_context"] = {
        "server_name": "note_server",
        "tool_name": "write_note",
        "command": "python3",
        "args": ["server.py"],
    }
    return event


@pytest.mark.parametrize(
    "matcher", ["@mcp", "mcp__note_server__write_note", "note_server/write_note"]
)
def test_a_gemini_mcp_tool_is_matched_by_the_names_the_other_clis_give_it(
    tmp_path: Path, matcher: str
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(DENY.format(matcher=matcher))
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect="gemini"
    )
    response = run_hook(json.dumps(_gemini_mcp_call()), options, environ={})
    assert json.loads(response.stdout) == {"decision": "deny", "reason": "no shell here"}


def test_a_gemini_tool_without_mcp_context_is_not_an_mcp_tool(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(DENY.format(matcher="@mcp"))
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect="gemini"
    )
    event = _gemini_mcp_call()
    del event["mcp_context"]
    assert (run_hook(json.dumps(event), options, environ={}).stdout) == ""


def test_a_rewritten_prompt_is_blocked_naming_the_cli_that_cannot_replace_it(
    tmp_path: Path,
) -> None:
    from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge, dialect_named

    gemini = dialect_named("gemini")
    hook = {
        "id": "cleaner",
        "type": "before_agent_start",
        "handler": lambda e: {"userMessage": "a cleaner prompt", "input": "a cleaner prompt"},
    }
    bridge = CodingAgentBridge(
        hooks=[hook],
        state=BridgeState(tmp_path / "state.sqlite3"),
        agent=gemini.agent,
        provider=gemini.provider,
    )
    try:
        response = gemini.answer(bridge.handle(gemini.to_bridge(_captured("gemini-BeforeAgent"))))
    finally:
        bridge.close()
    answer = json.loads(response.stdout)
    assert answer["decision"] == "deny"
    assert "Gemini CLI cannot replace a prompt" in answer["reason"]
    assert "a cleaner prompt" in answer["reason"]


BROKEN_GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "no-such-guard-binary"
"""


@pytest.mark.parametrize(
    ("dialect", "captured"), [("codex", "codex-PreToolUse"), ("gemini", "gemini-BeforeTool")]
)
def test_a_guard_that_fails_is_told_to_the_person_not_taken_for_no_objection(
    tmp_path: Path, dialect: str, captured: str
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(BROKEN_GUARD)
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=dialect
    )
    response = run_hook(json.dumps(_captured(captured)), options, environ={})
    answer = json.loads(response.stdout)
    assert response.exit_code == 0
    assert set(answer) == {"systemMessage"}  # no decision: the tool runs
    assert answer["systemMessage"].startswith("otelhooks: a hook failed and did not decide: ")
    assert "no-rm" in answer["systemMessage"]
    assert "no-such-guard-binary: not found" in answer["systemMessage"]


# one guard, written in each hook-file dialect otelhooks reads (docs/config-formats.md)
_GUARD_COMMAND = "echo 'no shell here' >&2; exit 2"
_GUARD_LIST = (
    'hooks:\n  - id: no-shell\n    type: {type}\n    matcher: "@shell"\n    command: "{command}"\n'
)
_GUARD_FILES = {
    # otelhooks' hook list with Claude Code's, the canonical and LobeHub's event name
    "hooks.yaml": _GUARD_LIST.format(type="PreToolUse", command=_GUARD_COMMAND),
    "canonical.yaml": _GUARD_LIST.format(type="before_tool_call", command=_GUARD_COMMAND),
    "lobehub.yaml": _GUARD_LIST.format(type="beforeToolCall", command=_GUARD_COMMAND),
    # Claude Code's own settings.json
    "settings.json": json.dumps(
        {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "@shell", "hooks": [{"type": "command", "command": _GUARD_COMMAND}]}
                ]
            }
        }
    ),
}
_SHELL_CALLS = {
    "claude-code": "kinds/claude-code-2.1.337-shell-PreToolUse",
    "codex": "codex-PreToolUse",
    "gemini": "gemini-BeforeTool",
}


@pytest.mark.parametrize("file", sorted(_GUARD_FILES))
@pytest.mark.parametrize("dialect", sorted(_SHELL_CALLS))
def test_one_hook_file_in_any_dialect_guards_every_cli(
    tmp_path: Path, file: str, dialect: str
) -> None:
    hooks = tmp_path / file
    hooks.write_text(_GUARD_FILES[file])
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=dialect
    )
    response = run_hook(json.dumps(_captured(_SHELL_CALLS[dialect])), options, environ={})
    answer = json.loads(response.stdout)
    if dialect == "gemini":
        assert answer == {"decision": "deny", "reason": "no shell here"}
    else:
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "no shell here"


def test_a_rewrite_nobody_allowed_is_a_codex_deny_naming_the_new_arguments(
    tmp_path: Path,
) -> None:
    from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge, dialect_named

    codex = dialect_named("codex")
    hook = {
        "id": "safer",
        "type": "before_tool_call",
        "handler": lambda e: {"args": {"command": "echo safe"}},
    }
    bridge = CodingAgentBridge(
        hooks=[hook],
        state=BridgeState(tmp_path / "state.sqlite3"),
        agent=codex.agent,
        provider=codex.provider,
    )
    try:
        response = codex.answer(bridge.handle(codex.to_bridge(_captured("codex-PreToolUse"))))
    finally:
        bridge.close()
    answer = json.loads(response.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "updatedInput" not in answer
    reason = answer["permissionDecisionReason"]
    assert "Codex CLI cannot ask a person, so otelhooks denies it" in reason
    assert '{"command": "echo safe"}' in reason


MULTI_LINE_FAILURES = """\
hooks:
  - id: loud
    type: PreToolUse
    matcher: "@shell"
    command: "printf 'line one\\\\nline two\\\\n' >&2; exit 1"
  - id: raises
    type: PreToolUse
    matcher: "@shell"
    script: guard.py:guard
"""


@pytest.mark.parametrize(
    ("dialect", "captured"), [("codex", "codex-PreToolUse"), ("gemini", "gemini-BeforeTool")]
)
def test_a_guard_failure_is_told_on_one_line(tmp_path: Path, dialect: str, captured: str) -> None:
    """A guard's stderr and an exception's message may hold several lines: the message the CLI
    shows the person as one status line was cut across lines (Gemini CLI's stderr)."""
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(MULTI_LINE_FAILURES)
    (tmp_path / "guard.py").write_text("def guard(event):\n    raise ValueError('bad\\nrule')\n")
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=dialect
    )
    response = run_hook(json.dumps(_captured(captured)), options, environ={})
    said = json.loads(response.stdout)["systemMessage"]
    assert "\n" not in said
    assert "hook 'loud' on before_tool_call: exited with 1: line one line two" in said
    assert "raises: ValueError: bad rule" in said
