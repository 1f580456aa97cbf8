"""A tool call's arguments or a result a hook changes in place are what runs and what is kept.

A sanitizer written the Python way changes the event it was given (``event.args["path"] =
...``, ``data.result["content"] = ...``) and returns ``None`` or the event. Before, the later
guards judged the changed arguments and allowed, and the runtime ran the call with the ones the
agent asked for (the model read the result the hook meant to redact). Nothing here is mocked:
the in-process runtime runs the tool function, the one-process Claude Code bridge answers on
its stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Block
from otelhooks import semconv as sc
from otelhooks.testing import pipeline
from tests.integrations._daemon_procs import bash, one_process

pytestmark = pytest.mark.timeout(60)


def sanitize(event: Any) -> None:
    if event.args.get("path") == "/etc":
        event.args["path"] = "/tmp/x"
    event.args["opts"]["recursive"] = False  # deep inside


def sanitize_and_return(event: Any) -> Any:
    sanitize(event)
    return event


@pytest.mark.parametrize("handler", [sanitize, sanitize_and_return], ids=["None", "event"])
def test_arguments_changed_in_place_are_the_ones_the_later_guard_judged_and_the_tool_got(
    handler: Any,
) -> None:
    ran: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []

    def rm(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "removed"

    def guard(event: Any) -> Block | None:
        judged.append(json.loads(json.dumps(event.args)))
        return Block("no") if event.args["path"] == "/etc" else None

    with pipeline() as pipe:
        pipe.register(
            {"id": "sanitize", "type": "beforeToolCall", "handler": handler},
            {"id": "guard", "type": "beforeToolCall", "handler": guard},
        )
        with pipe.tracer.operation("agent") as op, op.step() as step:
            args = {"path": "/etc", "opts": {"recursive": True}}
            content = step.run_tool("fs", "rm", args, rm).content
        pipe.flush()
        span = pipe.span("execute_tool rm")
    expected = {"path": "/tmp/x", "opts": {"recursive": False}}
    assert (content, judged, ran) == ("removed", [expected], [expected])
    assert span.attributes[sc.HOOK_REWRITTEN_BY] == ("sanitize",)  # type: ignore[index]


def test_what_a_failed_hook_changed_in_place_is_not_run() -> None:
    # on_error: continue ignores the failed hook: the next hook and the call see the arguments
    # as if it had not run
    ran: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []

    def half_done(event: Any) -> None:
        event.args["recursive"] = False
        event.args["opts"]["dir"] = "/"  # deep inside: the caller's own object is not changed
        raise RuntimeError("half done")

    with pipeline() as pipe:
        pipe.register(
            {"id": "half", "type": "beforeToolCall", "handler": half_done},
            {"id": "guard", "type": "beforeToolCall", "handler": lambda e: judged.append(e.args)},
        )
        with pipe.tracer.operation("agent") as op, op.step() as step:
            args = {"recursive": True, "opts": {"dir": "."}}
            step.run_tool("fs", "ls", args, lambda **kw: ran.append(kw))
    first = {"recursive": True, "opts": {"dir": "."}}
    assert (judged, ran, args) == ([first], [first], first)


def test_a_result_redacted_in_place_is_the_result_the_model_reads() -> None:
    def redact(data: Any) -> None:
        data.result["content"] = data.result["content"].replace("hunter2", "[redacted]")

    with pipeline() as pipe:
        pipe.register({"id": "redact", "type": "tool_result_persist", "handler": redact})
        with pipe.tracer.operation("agent") as op, op.step() as step:
            result = step.run_tool("vault", "read", {}, lambda: "the password is hunter2")
    assert result.content == "the password is [redacted]"


def test_the_bridge_answers_with_the_arguments_a_hook_changed_in_place(tmp_path: Path) -> None:
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        "  - {id: safe-rm, type: PreToolUse, matcher: Bash, script: hooks.py:safe_rm}\n"
        "  - {id: guard, type: PreToolUse, matcher: Bash, script: hooks.py:guard}\n"
    )
    (tmp_path / "hooks.py").write_text(
        "from otelhooks import Block\n"
        "def safe_rm(event):\n"
        "    event.args['command'] = event.args['command'].replace('rm -rf /', 'rm -rf ./build')\n"
        "def guard(event):\n"
        "    return Block('no') if event.args['command'] == 'rm -rf /' else None\n"
    )
    answer = one_process(tmp_path, bash("t1", "rm -rf /", "s1"))
    assert answer.returncode == 0, answer.stderr
    specific = json.loads(answer.stdout)["hookSpecificOutput"]
    assert specific["updatedInput"] == {"command": "rm -rf ./build"}


def test_the_bridge_answers_with_arguments_and_output_changed_in_place_deep_inside(
    tmp_path: Path,
) -> None:
    # the bridge's own copy of what the agent sent was changed with the hooks', so it told no
    # change and answered nothing: the agent ran the first edit and showed the secret
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        "  - {id: tame, type: PreToolUse, matcher: MultiEdit, script: hooks.py:tame}\n"
        "  - {id: redact, type: tool_result_persist, matcher: Bash, script: hooks.py:redact}\n"
    )
    (tmp_path / "hooks.py").write_text(
        "def tame(event):\n"
        "    event.args['edits'][0]['new_string'] = 'safe'\n"
        "def redact(data):\n"
        "    data.result['stdout'] = data.result['stdout'].replace('S-42-SECRET', '***')\n"
    )
    edits = {"file_path": "a.py", "edits": [{"old_string": "x", "new_string": "rm -rf /"}]}
    pre = {**bash("t1", "", "s1"), "tool_name": "MultiEdit", "tool_input": edits}
    answer = one_process(tmp_path, pre)
    assert answer.returncode == 0, answer.stderr
    specific = json.loads(answer.stdout)["hookSpecificOutput"]
    assert specific["updatedInput"]["edits"] == [{"old_string": "x", "new_string": "safe"}]
    post = {
        **bash("t2", "cat .env", "s1"),
        "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": "KEY=S-42-SECRET", "stderr": ""},
    }
    answer = one_process(tmp_path, post)
    assert answer.returncode == 0, answer.stderr
    output = json.loads(answer.stdout)["hookSpecificOutput"]["updatedToolOutput"]
    assert output["stdout"] == "KEY=***"


@pytest.mark.parametrize("on_error", ["continue", "block"])
def test_a_message_rewrite_naming_a_field_the_message_has_not_follows_on_error(
    on_error: str,
) -> None:
    # {"text": ...} where message_sending's field is content: before, recorded as a rewrite
    # (rewritten_by) while the message went out as it was, whatever on_error said
    delivered: list[str] = []
    with pipeline() as pipe:
        pipe.register(
            {
                "id": "redact",
                "type": "message_sending",
                "handler": lambda data: {"text": "[redacted]"},
                "on_error": on_error,
            }
        )
        with pipe.tracer.operation("agent") as op:
            op.send_message("chat", "user-1", "hunter2", deliver=delivered.append)
        pipe.flush()
        span = pipe.span("send_message chat")
    assert sc.HOOK_REWRITTEN_BY not in (span.attributes or {})
    assert "redact: rewrote text, which message_sending has no field for" in str(
        span.attributes[sc.HOOK_ERRORS]  # type: ignore[index]
    )
    assert delivered == (["hunter2"] if on_error == "continue" else [])
