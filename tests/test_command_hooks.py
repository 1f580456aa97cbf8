"""Command hooks: real processes, one rule per test (``otelhooks._actions._command``).

The rules: the ``HOOK_*`` environment and the stdin document, no shell interpolation of payload
values, the timeout that kills the whole process group, capped output, Claude Code's exit codes
and JSON decisions, their precedence, and parallel observers.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from otelhooks import AfterToolCallEvent, ConfigError, Hook, ToolCallEvent, ToolResult
from otelhooks import semconv as sc
from otelhooks._actions import build_hook as coerce_hook
from otelhooks._actions._command import OUTPUT_CAP_BYTES, CommandAction
from otelhooks._actions._command_verdict import CommandBlock
from otelhooks.testing import TestPipeline

DUMP = """
import json, os, sys
out = {"env": {k: v for k, v in os.environ.items() if k.startswith(("HOOK_", "OTELHOOKS_T"))},
       "stdin": json.loads(sys.stdin.read())}
open(sys.argv[1], "w").write(json.dumps(out))
"""


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tool_event(**args: Any) -> ToolCallEvent:
    return ToolCallEvent(
        toolCallId="call_1",
        identifier="fs",
        apiName="writeFile",
        args=args,
        sessionKey="s-1",
        operationId="op-1",
    )


def command_hook(command: str | list[str], type: str = "PreToolUse", **options: Any) -> Hook:
    return coerce_hook({"id": "cmd", "type": type, "command": command, **options})


def action_of(hook: Hook) -> CommandAction:
    assert isinstance(hook.action, CommandAction)
    return hook.action


def dump(tmp_path: Path, payload: Any, **options: Any) -> dict[str, Any]:
    out = tmp_path / "dump.json"
    hook = command_hook([sys.executable, "-c", DUMP, str(out)], **options)
    outcome = action_of(hook).run(payload)
    assert outcome.exit_code == 0, outcome.stderr
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def decide(answer: dict[str, Any]) -> str:
    """A shell command printing ``answer`` as JSON."""
    return f"printf '%s' {shlex.quote(json.dumps(answer))}"


def printing(tmp_path: Path, name: str, answer: dict[str, Any]) -> list[str]:
    """A command (without a shell) printing ``answer`` as JSON."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(answer))
    return ["cat", str(path)]


def run_tool(
    pipe: TestPipeline, args: dict[str, Any] | None = None
) -> tuple[ToolResult, list[Any]]:
    """One tool call; returns what the agent saw and the arguments the tool ran with."""
    seen: list[Any] = []

    def tool(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", "exec", args or {"cmd": "ls"}, tool)
    return result, seen


def tool_span(pipe: TestPipeline) -> dict[str, Any]:
    return dict(pipe.span("execute_tool exec").attributes or {})


def invocations(pipe: TestPipeline, hook_id: str, outcome: str) -> float:
    attrs = {sc.ATTR_HOOK_ID: hook_id, sc.ATTR_OUTCOME: outcome}
    return pipe.metric_total(sc.METRIC_HOOK_INVOCATIONS, attrs)


def is_dead(pid: int, within_s: float = 2.0) -> bool:
    """Gone, or a zombie that is not ours (init reaps orphans on its own schedule). A SIGKILL
    is delivered asynchronously, so this waits a little for it."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z" and int(fields[1]) != os.getpid():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


# -- environment and stdin -------------------------------------------------------------------------


def test_environment_has_the_workspace_hook_variables(tmp_path: Path) -> None:
    env = dump(tmp_path, tool_event(path="a.txt"))["env"]
    assert env["HOOK_EVENT_NAME"] == "PreToolUse"
    assert env["HOOK_TOOL_NAME"] == env["HOOK_MATCHER_VALUE"] == "writeFile"
    assert json.loads(env["HOOK_TOOL_INPUT"]) == {"path": "a.txt"}
    assert env["HOOK_TOOL_RESULT"] == ""
    assert json.loads(env["HOOK_EVENT_PAYLOAD"])["event"] == "before_tool_call"
    assert env["HOOK_WORKSPACE_ID"] == ""
    assert datetime.fromisoformat(env["HOOK_TRIGGERED_AT"]).tzinfo is not None


def test_environment_has_the_documented_extra_variables(tmp_path: Path) -> None:
    env = dump(tmp_path, tool_event())["env"]
    assert env["HOOK_CANONICAL_EVENT"] == "before_tool_call"
    assert env["HOOK_ID"] == "cmd"
    assert env["HOOK_SESSION_ID"] == "s-1"
    assert env["HOOK_OPERATION_ID"] == "op-1"
    assert env["HOOK_TOOL_USE_ID"] == "call_1"
    assert env["HOOK_TOOL_IDENTIFIER"] == "fs"
    assert env["HOOK_TRUNCATED"] == ""


def test_tool_result_is_in_the_environment_after_the_call(tmp_path: Path) -> None:
    event = AfterToolCallEvent(
        toolCallId="c",
        identifier="fs",
        apiName="readFile",
        content="hi",
        result=ToolResult(content="hi"),
    )
    env = dump(tmp_path, event, type="PostToolUse")["env"]
    assert json.loads(env["HOOK_TOOL_RESULT"])["content"] == "hi"


def test_inherited_environment_is_passed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTELHOOKS_TEST_INHERITED", "yes")
    assert dump(tmp_path, tool_event())["env"]["OTELHOOKS_TEST_INHERITED"] == "yes"


def test_serve_s_admin_token_is_not_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A guard script that runs the agent's own tests would hand them the power to approve
    # the agent's held calls; the ingest token, which agents hold anyway, still passes.
    monkeypatch.setenv("OTELHOOKS_ADMIN_TOKEN", "admin-s3cret")
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "ingest-token")
    out = tmp_path / "env.json"
    script = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"
    hook = command_hook([sys.executable, "-c", script, str(out)])
    assert action_of(hook).run(tool_event()).exit_code == 0
    env = json.loads(out.read_text())
    assert "OTELHOOKS_ADMIN_TOKEN" not in env
    assert "admin-s3cret" not in json.dumps(env)
    assert env["OTELHOOKS_INGEST_TOKEN"] == "ingest-token"


def test_workspace_id_comes_from_the_environment_when_not_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTELHOOKS_WORKSPACE_ID", "ws-9")
    assert dump(tmp_path, tool_event())["env"]["HOOK_WORKSPACE_ID"] == "ws-9"


def test_oversized_values_hold_a_truncation_marker_and_are_named(tmp_path: Path) -> None:
    data = dump(tmp_path, tool_event(blob="x" * 100_000))
    marker = data["env"]["HOOK_TOOL_INPUT"]
    assert marker.startswith("[otelhooks:truncated HOOK_TOOL_INPUT ")
    assert marker.endswith("read the whole event on stdin]")
    assert "xxxx" not in marker
    assert set(data["env"]["HOOK_TRUNCATED"].split(",")) == {
        "HOOK_TOOL_INPUT",
        "HOOK_EVENT_PAYLOAD",
    }
    assert len(data["stdin"]["args"]["blob"]) == 100_000  # stdin always has everything


def test_stdin_has_the_event_and_claude_code_fields(tmp_path: Path) -> None:
    stdin = dump(tmp_path, tool_event(path="a.txt"))["stdin"]
    assert stdin["session_id"] == "s-1"
    assert stdin["transcript_path"] is None
    assert stdin["cwd"] == os.getcwd()
    assert stdin["permission_mode"] == "default"
    assert stdin["hook_event_name"] == "PreToolUse"
    assert (stdin["tool_name"], stdin["tool_input"], stdin["tool_use_id"]) == (
        "writeFile",
        {"path": "a.txt"},
        "call_1",
    )
    assert (stdin["event"], stdin["apiName"], stdin["args"]) == (
        "before_tool_call",
        "writeFile",
        {"path": "a.txt"},
    )


def test_user_prompt_submit_payload_carries_user_message_and_full_prompt(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    out = tmp_path / "prompt.json"
    pipe.register(
        {
            "id": "prompt",
            "type": "UserPromptSubmit",
            "command": f'printf "%s" "$HOOK_EVENT_PAYLOAD" > "{out}"',
        }
    )
    with pipe.tracer.operation("agent", input="hi", full_prompt="SYSTEM: be nice\nhi"):
        pass
    payload = json.loads(out.read_text())
    assert (payload["userMessage"], payload["fullPrompt"]) == ("hi", "SYSTEM: be nice\nhi")


# -- no interpolation ------------------------------------------------------------------------------

HOSTILE = "$(touch pwned); rm -rf ./victim `touch pwned2` && touch pwned3"


def test_payload_is_never_interpolated_into_a_shell_command(in_tmp: Path) -> None:
    (in_tmp / "victim").mkdir()
    hook = command_hook('printf "%s" "$HOOK_TOOL_INPUT" > seen.txt; cat > stdin.json')
    outcome = action_of(hook).run(tool_event(cmd=HOSTILE))
    assert outcome.exit_code == 0
    assert json.loads((in_tmp / "seen.txt").read_text()) == {"cmd": HOSTILE}
    assert json.loads((in_tmp / "stdin.json").read_text())["args"] == {"cmd": HOSTILE}
    assert (in_tmp / "victim").is_dir()
    assert not list(in_tmp.glob("pwned*"))


def test_list_command_runs_without_a_shell(in_tmp: Path) -> None:
    outcome = action_of(command_hook(["echo", "$HOME", "$(touch pwned)"])).run(tool_event())
    assert outcome.stdout == "$HOME $(touch pwned)\n"
    assert not (in_tmp / "pwned").exists()


# -- timeouts --------------------------------------------------------------------------------------


def test_hanging_command_and_its_child_are_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    hook = command_hook(f'sleep 60 & echo $! > "{pid_file}"; sleep 60', timeout=1.0)
    started = time.monotonic()
    outcome = action_of(hook).run(tool_event())
    assert outcome.timed_out
    assert outcome.exit_code is None
    assert time.monotonic() - started < 3
    child = int(pid_file.read_text())
    assert is_dead(child), f"child {child} survived the timeout"
    assert outcome.pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(outcome.pid, os.WNOHANG)  # already reaped: no zombie of ours


def test_child_holding_the_output_open_neither_delays_the_answer_nor_survives(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    # The command itself exits at once; its child keeps stdout open and would outlive it.
    hook = command_hook(f'sleep 60 & echo $! > "{pid_file}"; exit 0', timeout=10)
    outcome = action_of(hook).run(tool_event())
    assert not outcome.timed_out
    assert outcome.exit_code == 0
    assert outcome.duration_s < 5
    assert is_dead(int(pid_file.read_text()))


def test_timed_out_interceptor_does_not_block_the_call(pipe: TestPipeline) -> None:
    pipe.register({"id": "slow", "type": "PreToolUse", "command": "sleep 5", "timeout": 0.3})
    result, seen = run_tool(pipe)
    assert result.content == "ran"
    assert seen
    assert invocations(pipe, "slow", "timeout") == 1


def test_nothing_a_timed_out_interceptor_started_outlives_the_event(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    command = f'sleep 60 & echo $! > "{pid_file}"; sleep 60'
    pipe.register({"id": "slow", "type": "PreToolUse", "command": command, "timeout": 1.0})
    run_tool(pipe)
    assert is_dead(int(pid_file.read_text()), within_s=0.5)


def test_timed_out_interceptor_blocks_with_on_error_block(pipe: TestPipeline) -> None:
    pipe.register(
        {
            "id": "slow",
            "type": "PreToolUse",
            "command": "sleep 5",
            "timeout": 0.3,
            "on_error": "block",
        }
    )
    result, seen = run_tool(pipe)
    assert not seen
    assert result.state is not None
    assert result.state["decidedBy"] == "slow"


def test_default_timeout_is_ten_seconds() -> None:
    assert action_of(command_hook("true")).timeout == 10


def test_timeout_above_thirty_seconds_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        command_hook("true", timeout=31)
    assert info.value.field == "timeout"


def test_empty_command_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        command_hook("   ")
    assert info.value.field == "command"


# -- output ----------------------------------------------------------------------------------------


def test_megabytes_of_output_are_read_but_only_the_cap_is_kept() -> None:
    hook = command_hook("head -c 5000000 /dev/zero | tr '\\0' x")
    outcome = action_of(hook).run(tool_event())
    assert outcome.exit_code == 0
    assert outcome.stdout_bytes == 5_000_000
    assert len(outcome.stdout) == OUTPUT_CAP_BYTES
    assert outcome.truncated


def test_command_that_ignores_a_large_stdin_completes() -> None:
    outcome = action_of(command_hook(["true"])).run(tool_event(blob="y" * 2_000_000))
    assert (outcome.exit_code, outcome.timed_out) == (0, False)


def test_failure_log_shows_a_shortened_output(pipe: TestPipeline) -> None:
    from structlog.testing import capture_logs

    pipe.register(
        {"id": "noisy", "type": "PreToolUse", "command": "head -c 100000 /dev/zero; exit 3"}
    )
    with capture_logs() as logs:
        run_tool(pipe)
    failed = next(e for e in logs if e["event"] == "command hook failed")
    assert failed["exit_code"] == 3
    assert len(failed["stdout"]) < 1000
    assert failed["output_bytes"] == 100_000


# -- exit codes ------------------------------------------------------------------------------------


def test_crashing_command_is_a_non_blocking_error(pipe: TestPipeline) -> None:
    pipe.register({"id": "crash", "type": "PreToolUse", "command": "echo boom >&2; exit 1"})
    result, seen = run_tool(pipe)
    assert result.content == "ran"
    assert seen
    assert invocations(pipe, "crash", "error") == 1
    errors = tool_span(pipe)[sc.HOOK_ERRORS]
    assert "exited with 1: boom" in errors[0]


def test_crashing_command_blocks_with_on_error_block(pipe: TestPipeline) -> None:
    pipe.register({"id": "crash", "type": "PreToolUse", "command": "exit 1", "on_error": "block"})
    _, seen = run_tool(pipe)
    assert not seen


def test_command_killed_by_a_signal_is_an_error() -> None:
    hook = command_hook("kill -KILL $$")
    with pytest.raises(Exception, match="killed by signal 9"):
        action_of(hook)(tool_event())


def test_command_that_cannot_start_is_an_error() -> None:
    hook = command_hook(["/nonexistent/otelhooks-hook"])
    outcome = action_of(hook).run(tool_event())
    assert outcome.start_error is not None
    with pytest.raises(Exception, match="cannot start"):
        action_of(hook)(tool_event())


def test_exit_two_denies_with_stderr_as_the_reason(pipe: TestPipeline) -> None:
    pipe.register({"id": "guard", "type": "PreToolUse", "command": "echo 'no shell' >&2; exit 2"})
    result, seen = run_tool(pipe)
    assert not seen
    assert result.content == "no shell"
    assert tool_span(pipe)[sc.HOOK_DECISION] == "deny"
    assert tool_span(pipe)[sc.HOOK_DECIDED_BY] == "guard"


def test_exit_two_without_stderr_uses_the_default_reason(pipe: TestPipeline) -> None:
    pipe.register({"id": "guard", "type": "PreToolUse", "command": "exit 2"})
    result, _ = run_tool(pipe)
    assert result.content == "Blocked by beforeToolCall hook."


def test_exit_two_blocks_a_user_prompt(pipe: TestPipeline) -> None:
    pipe.register({"id": "guard", "type": "UserPromptSubmit", "command": "echo spam >&2; exit 2"})
    with pipe.tracer.operation("agent", input="buy now") as op:
        assert op.blocked


def test_exit_two_on_an_observed_event_changes_nothing(pipe: TestPipeline) -> None:
    pipe.register({"id": "late", "type": "PostToolUse", "command": "exit 2"})
    result, _ = run_tool(pipe)
    pipe.flush()
    assert result.content == "ran"
    assert invocations(pipe, "late", "ok") == 1


def test_plain_stdout_is_output_not_a_decision(pipe: TestPipeline) -> None:
    pipe.register({"id": "chatty", "type": "PreToolUse", "command": "echo looks fine"})
    result, _ = run_tool(pipe)
    assert result.content == "ran"


def test_kernel_intercept_command_without_a_decision_allows(pipe: TestPipeline) -> None:
    pipe.register({"id": "k", "type": "before_tool_call", "command": "true", "intercept": True})
    result, _ = run_tool(pipe)
    assert result.content == "ran"


# -- JSON decisions --------------------------------------------------------------------------------


def permission(decision: str, **more: Any) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            **more,
        }
    }


def test_json_deny_blocks_with_its_reason(pipe: TestPipeline, tmp_path: Path) -> None:
    answer = permission("deny", permissionDecisionReason="not on Fridays")
    pipe.register({"id": "j", "type": "PreToolUse", "command": printing(tmp_path, "a", answer)})
    result, seen = run_tool(pipe)
    assert not seen
    assert result.content == "not on Fridays"


def test_json_allow_with_updated_input_rewrites_the_arguments(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    answer = permission("allow", updatedInput={"cmd": "ls -la"})
    pipe.register({"id": "j", "type": "PreToolUse", "command": printing(tmp_path, "a", answer)})
    result, seen = run_tool(pipe, {"cmd": "ls"})
    assert result.content == "ran"
    assert seen == [{"cmd": "ls -la"}]
    assert tool_span(pipe)[sc.HOOK_REWRITTEN_BY] == ("j",)


def test_json_allow_without_updated_input_changes_nothing(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    pipe.register(
        {"id": "j", "type": "PreToolUse", "command": printing(tmp_path, "a", permission("allow"))}
    )
    _, seen = run_tool(pipe, {"cmd": "ls"})
    assert seen == [{"cmd": "ls"}]


def test_updated_input_is_not_applied_on_ask(pipe: TestPipeline, tmp_path: Path) -> None:
    answer = permission("ask", updatedInput={"cmd": "rm -rf /"})
    pipe.register({"id": "j", "type": "PreToolUse", "command": printing(tmp_path, "a", answer)})
    result, seen = run_tool(pipe, {"cmd": "ls"})
    assert not seen
    assert "asks for confirmation" in result.content


def test_ask_keeps_the_call_from_running() -> None:
    hook = command_hook(decide(permission("ask", permissionDecisionReason="sure?")))
    result = action_of(hook)(tool_event())
    assert isinstance(result, CommandBlock)
    assert (result.decision, result.reason) == ("ask", "sure?")


def test_defer_keeps_the_call_from_running() -> None:
    result = action_of(command_hook(decide(permission("defer"))))(tool_event())
    assert isinstance(result, CommandBlock)
    assert result.decision == "defer"
    assert "deferred" in (result.reason or "")


def test_unknown_permission_decision_is_an_error(pipe: TestPipeline, tmp_path: Path) -> None:
    pipe.register(
        {"id": "j", "type": "PreToolUse", "command": printing(tmp_path, "a", permission("maybe"))}
    )
    result, _ = run_tool(pipe)
    assert result.content == "ran"
    assert "permissionDecision must be one of" in tool_span(pipe)[sc.HOOK_ERRORS][0]


def test_stdout_starting_with_a_brace_but_not_json_is_plain_text(pipe: TestPipeline) -> None:
    # Claude Code hooks reference, "JSON output": output that is not valid JSON is plain text.
    pipe.register({"id": "j", "type": "PreToolUse", "command": "echo '{not json'"})
    result, _ = run_tool(pipe)
    assert result.content == "ran"
    assert invocations(pipe, "j", "ok") == 1


def test_top_level_block_decision_blocks_an_intercept_event(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    answer = {"decision": "block", "reason": "off topic"}
    pipe.register(
        {"id": "j", "type": "UserPromptSubmit", "command": printing(tmp_path, "a", answer)}
    )
    with pipe.tracer.operation("agent", input="hello") as op:
        assert op.blocked


def test_async_runtime_gets_the_same_decision_without_blocking_the_loop(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    answer = permission("deny", permissionDecisionReason="async no")
    _, answer_file = printing(tmp_path, "a", answer)
    slow = f'sleep 0.1; cat "{answer_file}"'
    pipe.register({"id": "j", "type": "PreToolUse", "command": slow})
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.005)

    async def main() -> ToolResult:
        task = asyncio.create_task(ticker())
        async with pipe.tracer.operation("a") as op, op.step() as step:
            result = await step.arun_tool("shell", "exec", {"cmd": "ls"}, lambda cmd: "ran")
        task.cancel()
        return result

    assert asyncio.run(main()).content == "async no"
    assert len(ticks) > 1  # the loop kept running while the command ran


# -- precedence: deny > defer > ask > allow --------------------------------------------------------


def register_decisions(pipe: TestPipeline, tmp_path: Path, *decisions: str) -> None:
    pipe.register(
        *(
            {
                "id": f"{i}-{d}",
                "type": "PreToolUse",
                "command": printing(tmp_path, f"{i}", permission(d, permissionDecisionReason=d)),
            }
            for i, d in enumerate(decisions)
        )
    )


def test_deny_outranks_an_earlier_ask(pipe: TestPipeline, tmp_path: Path) -> None:
    register_decisions(pipe, tmp_path, "ask", "deny")
    result, _ = run_tool(pipe)
    assert result.content == "deny"
    assert tool_span(pipe)[sc.HOOK_DECIDED_BY] == "1-deny"


def test_defer_outranks_ask_in_either_order(pipe: TestPipeline, tmp_path: Path) -> None:
    register_decisions(pipe, tmp_path, "ask", "defer", "allow")
    result, _ = run_tool(pipe)
    assert result.content == "defer"


def test_ask_outranks_a_later_defer_only_when_stronger(pipe: TestPipeline, tmp_path: Path) -> None:
    register_decisions(pipe, tmp_path, "defer", "ask")
    result, _ = run_tool(pipe)
    assert result.content == "defer"


def test_the_earliest_of_equal_decisions_stands(pipe: TestPipeline, tmp_path: Path) -> None:
    register_decisions(pipe, tmp_path, "ask", "ask")
    run_tool(pipe)
    assert tool_span(pipe)[sc.HOOK_DECIDED_BY] == "0-ask"


def test_an_allow_rewrite_is_dropped_when_another_command_asks(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    pipe.register(
        {
            "id": "allow",
            "type": "PreToolUse",
            "command": printing(tmp_path, "a", permission("allow", updatedInput={"cmd": "x"})),
        },
        {"id": "ask", "type": "PreToolUse", "command": printing(tmp_path, "b", permission("ask"))},
    )
    _, seen = run_tool(pipe)
    assert not seen


def test_handlers_after_an_ask_do_not_run(pipe: TestPipeline, tmp_path: Path) -> None:
    ran: list[str] = []
    pipe.register(
        {"id": "ask", "type": "PreToolUse", "command": printing(tmp_path, "a", permission("ask"))},
        {"id": "py", "type": "PreToolUse", "handler": lambda e: ran.append("py")},
    )
    run_tool(pipe)
    assert ran == []


def test_a_deny_ends_the_chain(pipe: TestPipeline, tmp_path: Path) -> None:
    register_decisions(pipe, tmp_path, "deny", "ask")
    run_tool(pipe)
    assert invocations(pipe, "1-ask", "blocked") + invocations(pipe, "1-ask", "ok") == 0


# -- observers run in parallel ---------------------------------------------------------------------


def test_observer_commands_of_one_event_run_in_parallel(pipe: TestPipeline, tmp_path: Path) -> None:
    stamp = 'date +%s.%N > "{0}.start"; sleep 0.4; date +%s.%N > "{0}.end"'
    pipe.register(
        *(
            {"id": f"c{i}", "type": "PostToolUse", "command": stamp.format(tmp_path / f"c{i}")}
            for i in range(3)
        )
    )
    run_tool(pipe)
    pipe.flush()
    starts = [float((tmp_path / f"c{i}.start").read_text()) for i in range(3)]
    ends = [float((tmp_path / f"c{i}.end").read_text()) for i in range(3)]
    assert max(starts) < min(ends), "the three commands did not overlap"


def test_every_observer_settles_before_the_event_completes(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    order: list[str] = []
    pipe.register(
        {"id": "slow", "type": "PostToolUse", "command": f'sleep 0.3; touch "{tmp_path / "slow"}"'},
        {"id": "py", "type": "PostToolUse", "handler": lambda e: order.append("py")},
        {"id": "fail", "type": "PostToolUse", "command": "exit 1"},
    )
    run_tool(pipe)
    pipe.flush()
    assert (tmp_path / "slow").exists()
    assert order == ["py"]
    assert invocations(pipe, "fail", "error") == 1
    assert invocations(pipe, "slow", "ok") == 1


def test_observer_handlers_keep_registration_order_beside_commands(pipe: TestPipeline) -> None:
    order: list[str] = []
    pipe.register(
        {"id": "a", "type": "PostToolUse", "handler": lambda e: order.append("a")},
        {"id": "cmd", "type": "PostToolUse", "command": "true"},
        {"id": "b", "type": "PostToolUse", "handler": lambda e: order.append("b")},
    )
    run_tool(pipe)
    pipe.flush()
    assert order == ["a", "b"]


def test_timed_out_observer_command_is_recorded_as_a_timeout(pipe: TestPipeline) -> None:
    pipe.register({"id": "hang", "type": "PostToolUse", "command": "sleep 5", "timeout": 0.3})
    run_tool(pipe)
    pipe.flush()
    assert invocations(pipe, "hang", "timeout") == 1


def test_command_actions_are_marked_concurrent() -> None:
    assert action_of(command_hook("true")).concurrent is True


def _answering_then_hanging(tmp_path: Path, answer: dict[str, Any]) -> str:
    """A guard that prints its answer, then hangs on something else (an audit call that does
    not answer)."""
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(answer))
    return f'cat "{path}"; sleep 30'


def test_a_deny_printed_before_the_timeout_stands(pipe: TestPipeline, tmp_path: Path) -> None:
    """Before, the timeout threw the printed deny away: a non-blocking error, and the call ran."""
    deny = permission("deny", permissionDecisionReason="no rm")
    command = _answering_then_hanging(tmp_path, deny)
    pipe.register({"id": "g", "type": "PreToolUse", "command": command, "timeout": 2.0})
    result, seen = run_tool(pipe)
    assert seen == []
    assert result.content.startswith("no rm [otelhooks: printed before the hook timed out")
    assert invocations(pipe, "g", "blocked") == 1


def test_an_allow_printed_before_the_timeout_is_still_a_timeout(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    rewrite = permission("allow", updatedInput={"cmd": "ls -la"})
    command = _answering_then_hanging(tmp_path, rewrite)
    pipe.register({"id": "g", "type": "PreToolUse", "command": command, "timeout": 2.0})
    _, seen = run_tool(pipe)
    assert seen == [{"cmd": "ls"}]  # not rewritten: the hook did not finish
    assert invocations(pipe, "g", "timeout") == 1
