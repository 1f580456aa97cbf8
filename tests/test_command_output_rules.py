"""Command hooks read exactly as Claude Code reads them: real bash scripts, one rule per case.

Source of every case: Claude Code hooks reference (https://code.claude.com/docs/en/hooks), the
sections "Exit code output" (exit 0, exit 2), "Other exit codes" and "JSON output", as issue #27
quotes them:

- JSON on stdout is read on every exit code; a valid JSON object decides on its own, exit 1
  included (a deny printed before ``exit 1`` denies);
- exit 2 blocks, and its message is the JSON's reason if there is one, stderr otherwise;
- stdout that starts with ``{`` but is not valid JSON is plain text; otelhooks' one departure:
  when it names an answer field (a broken answer), a deny, block, ask or defer read from it
  stands and anything else is a non-blocking error (Claude Code runs the call without a word);
- JSON that does not follow the output schema is a non-blocking error: the tool runs, and the
  error is reported (span attribute ``otelhooks.hook.errors``, the invocation counted with
  ``outcome=error``, a ``command hook failed`` log line), never a silent allow, never a deny.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Destructive command blocked by hook",
    }
}  # the reference's own example ("How a hook resolves")


@dataclass(frozen=True)
class Case:
    section: str  # where the reference states the rule
    stdout: str  # what the script prints on stdout
    exit: int
    ran: bool  # whether the tool runs
    shown: str  # what the agent sees: the tool's result, or the block reason
    outcome: str  # otelhooks.hook.invocations{outcome}
    stderr: str = "stderr text"
    error: str | None = None  # part of the error reported on the span


CASES = {
    "json-deny-with-exit-0-denies": Case(
        "Exit code output: exit 0", json.dumps(DENY), 0, False,
        "Destructive command blocked by hook", "blocked",
    ),
    "json-deny-with-exit-1-denies": Case(
        "Other exit codes", json.dumps(DENY), 1, False,
        "Destructive command blocked by hook", "blocked",
    ),
    "json-deny-with-exit-3-denies": Case(
        "Other exit codes", json.dumps(DENY), 3, False,
        "Destructive command blocked by hook", "blocked",
    ),
    "json-block-with-exit-1-blocks": Case(
        "Other exit codes", json.dumps({"decision": "block", "reason": "tests must pass"}), 1,
        False, "tests must pass", "blocked",
    ),
    "json-allow-with-exit-1-rewrites": Case(
        "Other exit codes",
        json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"cmd": "ls -la"},
        }}),
        1, True, "ran ls -la", "rewritten",
    ),
    "exit-2-takes-the-json-reason": Case(
        "Exit code output: exit 2", json.dumps(DENY), 2, False,
        "Destructive command blocked by hook", "blocked",
    ),
    "exit-2-takes-stderr-without-a-json-reason": Case(
        "Exit code output: exit 2", json.dumps({"systemMessage": "note"}), 2, False,
        "stderr text", "blocked",
    ),
    "exit-2-with-plain-stdout-takes-stderr": Case(
        "Exit code output: exit 2", "plain words", 2, False, "stderr text", "blocked",
    ),
    "exit-2-even-when-the-json-allows": Case(
        "Exit code output: exit 2",
        json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}}), 2, False,
        "stderr text", "blocked",
    ),
    "brace-but-not-json-is-plain-text-on-exit-0": Case(
        "JSON output", "{not json}", 0, True, "ran ls", "ok",
    ),
    "brace-but-not-json-on-exit-1-is-a-non-blocking-error": Case(
        "Other exit codes", "{not json}", 1, True, "ran ls", "error",
        error="exited with 1: stderr text",
    ),
    # Not Claude Code's, which reads it as plain text and runs the call without a word: a broken
    # answer (the quotes of a command its reason echoes, two objects) is read as a cut one is.
    "a-broken-answer-without-a-decision-is-a-non-blocking-error": Case(
        "otelhooks: a broken answer", '{"hookSpecificOutput": deny', 0, True, "ran ls", "error",
        error="names an answer field, but does not parse (Expecting value",
    ),
    "a-broken-answer-s-deny-denies": Case(
        "otelhooks: a broken answer",
        '{"hookSpecificOutput": {"permissionDecision": "deny", '
        '"permissionDecisionReason": "no rm of "victim""}}',
        0, False, "no rm of  [otelhooks: read from an answer that does not parse]", "blocked",
    ),
    "two-answers-one-after-the-other-are-a-broken-answer": Case(
        "otelhooks: a broken answer",
        json.dumps({"decision": "block", "reason": "no"}) + "\n" + json.dumps({"ok": 1}),
        0, False, "no [otelhooks: read from an answer that does not parse]", "blocked",
    ),
    "a-broken-answer-s-continue-false-stops": Case(
        "otelhooks: a broken answer",
        '{"continue": false, "stopReason": "halt at "rm""}',
        0, False, "halt at  [otelhooks: read from an answer that does not parse]", "blocked",
    ),
    "an-answer-too-deep-for-python-s-parser-still-blocks": Case(
        "otelhooks: a broken answer",
        '{"decision": "block", "reason": "no", "seen": ' + "[" * 5000 + "]" * 5000 + "}",
        0, False, "no [otelhooks: read from an answer that does not parse]", "blocked",
    ),
    "a-broken-answer-s-allow-and-rewrite-are-a-non-blocking-error": Case(
        "otelhooks: a broken answer",
        '{"hookSpecificOutput": {"permissionDecision": "allow", '
        '"updatedInput": {"cmd": "ls "-la""}}}',
        0, True, "ran ls", "error", error="no decision but a deny, ask or defer is taken",
    ),
    "json-without-a-decision-on-exit-1-is-a-non-blocking-error": Case(
        "Other exit codes", json.dumps({"systemMessage": "hi"}), 1, True, "ran ls", "error",
        error="exited with 1",
    ),
    "schema-invalid-type-is-a-non-blocking-error": Case(
        "JSON output", json.dumps({"continue": "no"}), 0, True, "ran ls", "error",
        error="'continue' must be a boolean",
    ),
    "schema-invalid-decision-is-a-non-blocking-error": Case(
        "JSON output", json.dumps({"decision": "nope", "reason": "x"}), 0, True, "ran ls",
        "error", error="'decision' must be one of approve, block, allow, deny",
    ),
    # Not Claude Code's: Gemini CLI's answers, as a guard written from its reference prints them
    # (read as failures before, and the call ran)
    "gemini-decision-deny-denies": Case(
        "Gemini CLI hooks reference", json.dumps({"decision": "deny", "reason": "no rm"}), 0,
        False, "no rm", "blocked",
    ),
    "gemini-tool-input-rewrites-into-the-arguments": Case(
        "Gemini CLI hooks reference",
        json.dumps({"hookSpecificOutput": {"tool_input": {"cmd": "ls -la"}}}), 0, True,
        "ran ls -la", "rewritten",
    ),
    "schema-invalid-json-on-exit-1-is-a-non-blocking-error": Case(
        "JSON output", json.dumps({"hookSpecificOutput": {"permissionDecision": "nope"}}), 1,
        True, "ran ls", "error", error="permissionDecision must be one of",
    ),
    "continue-false-stops-with-its-stop-reason": Case(
        "JSON output: common fields", json.dumps({"continue": False, "stopReason": "halt"}), 0,
        False, "halt", "blocked",
    ),
    # Not in the reference; what the real CLI 2.1 does (tests/claude_code_cli/test_output_rules.py).
    "json-deny-after-a-byte-order-mark-denies": Case(
        "Claude Code trims stdout as JavaScript does", "\ufeff" + json.dumps(DENY) + "\r\n",
        0, False, "Destructive command blocked by hook", "blocked",
    ),
    "top-level-block-outranks-a-permission-allow-and-its-rewrite": Case(
        "Claude Code: a block stands over permissionDecision",
        json.dumps({"decision": "block", "reason": "no", "hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"cmd": "ls -la"},
        }}),
        0, False, "no", "blocked",
    ),
    "top-level-block-outranks-a-permission-ask": Case(
        "Claude Code: a block stands over permissionDecision",
        json.dumps({"decision": "block", "reason": "no", "hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": "sure?",
        }}),
        0, False, "no", "blocked",
    ),
    # Claude Code reads all of stdout; otelhooks keeps its first MiB (the documented cap): an answer
    # after that much white space is unknown, a failure reported (never a silent allow).
    "an-answer-after-more-white-space-than-the-cap-is-a-non-blocking-error": Case(
        "otelhooks: output past the cap", " " * ((1 << 20) + 10) + json.dumps(DENY), 0,
        True, "ran ls", "error", error="any answer after them was not read",
    ),
    "a-permission-deny-beside-a-block-gives-its-own-reason": Case(
        "Claude Code: a block stands over permissionDecision",
        json.dumps({"decision": "block", "reason": "no", **DENY}),
        0, False, "Destructive command blocked by hook", "blocked",
    ),
}  # fmt: skip


def script(tmp_path: Path, case: Case) -> list[str]:
    """A bash script that prints the case's stdout and stderr and exits with its code."""
    path = tmp_path / "hook.sh"
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    out.write_text(case.stdout)
    err.write_text(case.stderr)
    body = f'cat >/dev/null\ncat "{out}"\ncat "{err}" >&2\nexit {case.exit}\n'
    path.write_text(f"#!/bin/bash\n{body}")
    return ["bash", str(path)]


def tool(cmd: str) -> str:
    return f"ran {cmd}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_is_read_as_claude_code_reads_it(
    pipe: TestPipeline, tmp_path: Path, name: str
) -> None:
    case = CASES[name]
    pipe.register({"id": "hook", "type": "PreToolUse", "command": script(tmp_path, case)})
    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "exec", {"cmd": "ls"}, tool)
    attrs: dict[str, Any] = dict(pipe.span("execute_tool exec").attributes or {})
    assert result.content == case.shown, case.section
    assert attrs[sc.HOOK_DECISION] == ("allow" if case.ran else "deny")
    attributes = {sc.ATTR_HOOK_ID: "hook", sc.ATTR_OUTCOME: case.outcome}
    assert pipe.metric_total(sc.METRIC_HOOK_INVOCATIONS, attributes) == 1
    if case.error is None:
        assert sc.HOOK_ERRORS not in attrs
    else:
        (error,) = attrs[sc.HOOK_ERRORS]
        assert case.error in error


@pytest.mark.parametrize("code", [0, 1])
def test_a_json_deny_denies_in_an_async_runtime_whatever_the_exit_code(
    pipe: TestPipeline, tmp_path: Path, code: int
) -> None:
    case = Case("Other exit codes", json.dumps(DENY), code, False, "", "blocked")
    pipe.register({"id": "hook", "type": "PreToolUse", "command": script(tmp_path, case)})
    ran: list[str] = []

    async def main() -> str:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            result = await step.arun_tool("shell", "exec", {"cmd": "ls"}, ran.append)
        return result.content

    assert asyncio.run(main()) == "Destructive command blocked by hook"
    assert ran == []
