"""What a hook's own code does never takes its decision away from the agent.

A Python hook (handler, ``script:``, plugin) is the user's code running inside the agent's
process or the command bridge. Whatever it raises is the hook's failure and follows its
``on_error``: a ``script:`` guard's ``sys.exit()`` used to end the one-process bridge and the
daemon's answer with exit 0 and no output, which every CLI reads as an allow (``on_error:
block`` and ``--fail-closed`` or not); ``KeyboardInterrupt``, ``BaseException`` and a
``CancelledError`` it raised itself were a non-blocking exit 1; and an observer's ``sys.exit()``
ended the observer worker in silence, so no observer of the process ran again. Real processes:
the one-process bridge and the hook client with its daemon.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Block, ToolCallEvent
from otelhooks.testing import TestPipeline, pipeline
from tests.integrations._daemon_procs import (
    Hooked,
    bash,
    client_env,
    daemon_pid,
    deny_reason,
    hook,
    one_process,
    runtime_folder,
)

pytestmark = pytest.mark.timeout(120)

GUARD = """\
hooks:
  - id: guard
    type: PreToolUse
    matcher: Bash
    script: guard.py:guard
    on_error: block
"""
# what the guard's code does instead of deciding, and the class its failure names
RAISES = {
    "sys.exit()": ("import sys\n    sys.exit()", "SystemExit"),
    "sys.exit(0)": ("import sys\n    sys.exit(0)", "SystemExit"),
    "KeyboardInterrupt": ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    "BaseException": ("raise BaseException('no')", "BaseException"),
    "CancelledError": ("import asyncio\n    raise asyncio.CancelledError", "CancelledError"),
}


def _project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "otelhooks.yaml").write_text(GUARD)
    (tmp_path / "guard.py").write_text(f"def guard(event):\n    {body}\n")
    return tmp_path


def _denied_for_failing(answer: Hooked, dialect: str, raised: str) -> None:
    # Codex CLI's deny is exit 2 too (its reason on stderr), read whatever stdout holds
    assert answer.returncode == (2 if dialect == "codex" else 0), answer.stderr
    assert deny_reason(dialect, answer.stdout).startswith(f"hook guard failed: {raised}")


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
@pytest.mark.parametrize("does", list(RAISES), ids=list(RAISES))
def test_a_script_guard_that_exits_or_raises_any_exception_denies_in_the_bridge(
    tmp_path: Path, does: str, dialect: str
) -> None:
    body, raised = RAISES[does]
    answer = one_process(
        _project(tmp_path, body), bash("t1", "rm -rf build", "s1"), dialect=dialect
    )
    _denied_for_failing(answer, dialect, raised)


def test_a_script_guard_that_exits_denies_through_the_daemon(tmp_path: Path) -> None:
    project = _project(tmp_path, RAISES["sys.exit(0)"][0])
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        first = hook(env, bash("t1", "rm -rf build", "s1"))
        pid = daemon_pid(runtime)
        second = hook(env, bash("t2", "rm -rf dist", "s1"))  # answered by that daemon
        assert daemon_pid(runtime) == pid
    for answer in (first, second):
        _denied_for_failing(answer, "claude-code", "SystemExit")


def _exits(event: ToolCallEvent) -> None:
    sys.exit(0)


async def _exits_async(event: ToolCallEvent) -> None:
    await asyncio.sleep(0)
    sys.exit(0)


def _deny(event: ToolCallEvent) -> Block:
    return Block("no rm")


def _call(pipe: TestPipeline, ran: list[str]) -> Any:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("fs", "rm", {}, lambda **kw: ran.append("rm"))


@pytest.mark.parametrize("handler", [_exits, _exits_async], ids=["sync", "async"])
def test_an_interceptor_that_exits_is_a_failure_and_the_next_guard_still_denies(
    handler: Callable[[ToolCallEvent], Any],
) -> None:
    ran: list[str] = []
    with pipeline() as pipe:
        pipe.register({"id": "exits", "type": "beforeToolCall", "handler": handler})
        pipe.register({"id": "deny", "type": "beforeToolCall", "handler": _deny})
        result = _call(pipe, ran)
        assert (ran, result.success, result.error) == ([], False, "no rm")
        assert dict(pipe.span("execute_tool rm").attributes or {})["otelhooks.hook.errors"] == (
            "exits: SystemExit: 0",
        )


def test_an_async_interceptor_that_exits_on_another_threads_loop_blocks_with_on_error_block() -> (
    None
):
    ran: list[str] = []
    results: list[Any] = []
    with pipeline() as pipe:
        pipe.register(
            {"id": "exits", "type": "beforeToolCall", "handler": _exits_async, "on_error": "block"}
        )

        async def agent() -> Any:
            async with pipe.tracer.operation("agent") as op, op.step() as step:
                return await step.arun_tool("fs", "rm", {}, lambda **kw: ran.append("rm"))

        thread = threading.Thread(target=lambda: results.append(asyncio.run(agent())))
        thread.start()
        thread.join(30)
    (result,) = results
    assert (ran, result.success, result.error) == ([], False, "hook exits failed: SystemExit: 0")


def test_an_observer_that_exits_leaves_the_other_observers_running() -> None:
    seen: list[str] = []
    with pipeline() as pipe:
        pipe.register({"id": "exits", "type": "afterToolCall", "handler": _exits})
        pipe.register(
            {"id": "sees", "type": "afterToolCall", "handler": lambda e: seen.append(e.apiName)}
        )
        for _ in range(3):
            _call(pipe, [])
        assert pipe.flush(5.0)
    assert seen == ["rm", "rm", "rm"]


async def _asks_again_whatever_happens(event: ToolCallEvent) -> None:
    """A guard whose retry loop catches everything, its own cancellation included, and allows
    when it could not ask."""
    for _ in range(2):
        try:
            await asyncio.sleep(1.0)  # a policy server that does not answer
        except BaseException:  # what the guard does wrong
            continue
    return None


@pytest.mark.parametrize("on_error", ["block", "continue"])
def test_an_async_guard_that_catches_its_cancellation_is_cut_at_its_deadline(on_error: str) -> None:
    ran: list[str] = []
    with pipeline() as pipe:
        pipe.register(
            {
                "id": "asks",
                "type": "beforeToolCall",
                "handler": _asks_again_whatever_happens,
                "timeout": 0.3,
                "on_error": on_error,
            }
        )

        async def agent() -> tuple[Any, float]:
            started = time.monotonic()
            async with pipe.tracer.operation("agent") as op, op.step() as step:
                result = await step.arun_tool("fs", "rm", {}, lambda **kw: ran.append("rm"))
            return result, time.monotonic() - started

        result, seconds = asyncio.run(agent())
    assert seconds < 0.9  # its deadline, not the 1 s its loop waits after being cancelled
    if on_error == "block":
        assert (ran, result.error) == ([], "hook asks failed: timed out after 0.3s")
    else:
        assert ran == ["rm"]  # a failed guard that continues, at its deadline


PRINTS = """\
import atexit, subprocess, sys, threading, time

atexit.register(print, "guard: as the process ends")


def guard(event):
    print("guard: checking", event.args)  # its own debugging, on stdout
    subprocess.run(["echo", "guard: a child process says hello"], check=True)
    sys.stdout.write("guard: no newline, no flush")
    threading.Thread(target=lambda: (time.sleep(0.2), print("guard: after the answer"))).start()
    if "hang" in str(event.args):
        time.sleep(30)
    event.deny("no rm")
"""
ANSWERS = {
    "claude-code": {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no rm",
        }
    },
    "codex": {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no rm",
        }
    },
    "gemini": {"decision": "deny", "reason": "no rm"},
}


@pytest.mark.parametrize("dialect", list(ANSWERS))
def test_what_a_guard_prints_goes_to_stderr_and_stdout_is_the_answer_alone(
    tmp_path: Path, dialect: str
) -> None:
    project = _project(tmp_path, "pass")
    (project / "guard.py").write_text(PRINTS)
    answer = one_process(project, bash("t1", "rm -rf build", "s1"), dialect=dialect)
    assert answer.returncode == (2 if dialect == "codex" else 0), answer.stderr
    assert json.loads(answer.stdout) == ANSWERS[dialect]  # the JSON object alone
    for printed in (
        "guard: checking",
        "a child process says hello",
        "no newline, no flush",
        "after the answer",
        "as the process ends",
    ):
        assert printed in answer.stderr


def test_the_late_answer_is_alone_on_stdout_too(tmp_path: Path) -> None:
    project = _project(tmp_path, "pass")
    (project / "guard.py").write_text(PRINTS)
    late = one_process(
        project,
        bash("t1", "rm -rf build # hang", "s1"),
        "--fail-closed",
        OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="1",
    )
    assert late.returncode == 0, late.stderr
    assert "no answer within 1 s" in deny_reason("claude-code", late.stdout)
    assert "guard: checking" in late.stderr


# a deny whose reason is not text: the object a handler had at hand
NOT_TEXT = {
    "Block(exception)": (
        "from otelhooks import Block\n    return Block(ValueError('nope'))",
        "nope",
    ),
    "event.deny(42)": ("event.deny(42)", "42"),
    "Block(bytes)": ("from otelhooks import Block\n    return Block(b'no')", "b'no'"),
}


@pytest.mark.parametrize("does", list(NOT_TEXT), ids=list(NOT_TEXT))
def test_a_deny_whose_reason_is_not_text_still_denies_in_the_bridge(
    tmp_path: Path, does: str
) -> None:
    body, reason = NOT_TEXT[does]
    answer = one_process(_project(tmp_path, body), bash("t1", "rm -rf build", "s1"))
    assert answer.returncode == 0, answer.stderr
    specific = json.loads(answer.stdout)["hookSpecificOutput"]
    assert (specific["permissionDecision"], specific["permissionDecisionReason"]) == (
        "deny",
        reason,
    )


def test_a_deny_whose_reason_is_not_text_still_denies_in_process() -> None:
    ran: list[str] = []
    with pipeline() as pipe:
        pipe.register(
            {"id": "deny", "type": "beforeToolCall", "handler": lambda e: Block(ValueError("no"))}
        )
        result = _call(pipe, ran)
    assert (ran, result.success, result.error) == ([], False, "no")


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_rewrite_the_answer_cannot_hold_as_it_is_is_written_as_strict_json(
    tmp_path: Path,
) -> None:
    body = (
        "import pathlib\n"
        "    return {'args': {'command': pathlib.Path('ls'), 'flags': {'-l'},"
        " 'n': float('nan')}}"
    )
    answer = one_process(_project(tmp_path, body), bash("t1", "rm -rf build", "s1"))
    assert answer.returncode == 0, answer.stderr
    specific = _strict_json(answer.stdout)["hookSpecificOutput"]
    assert specific["updatedInput"] == {"command": "ls", "flags": ["-l"], "n": None}


async def _blocks_the_loop(event: ToolCallEvent) -> None:
    time.sleep(0.6)  # a blocking call in async code: no timer can fire meanwhile
    return None  # allows, past its deadline


def test_an_async_guard_that_blocks_the_loop_past_its_deadline_is_late_not_an_allow() -> None:
    ran: list[str] = []
    with pipeline() as pipe:
        pipe.register(
            {
                "id": "blocks",
                "type": "beforeToolCall",
                "handler": _blocks_the_loop,
                "timeout": 0.2,
                "on_error": "block",
            }
        )

        async def agent() -> Any:
            async with pipe.tracer.operation("agent") as op, op.step() as step:
                return await step.arun_tool("fs", "rm", {}, lambda **kw: ran.append("rm"))

        result = asyncio.run(agent())
    # as a sync guard that slept on the handler pool: a timeout, which blocks
    assert (ran, result.error) == ([], "hook blocks failed: timed out after 0.2s")
