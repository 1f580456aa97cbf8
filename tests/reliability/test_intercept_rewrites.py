"""A rewrite of a message or a run's input reaches the runtime, or follows ``on_error``.

Kernel apps (a manifest and its ``script:`` hooks, loaded from a file as users write them) and
LobeHub-shaped handlers on the in-process runtime: ``Operation.send_message`` /
``asend_message`` deliver the text, ``operation(input=...)`` runs with it. Nothing here is
mocked: the delivered text is what ``deliver`` got.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Hook, load_config
from otelhooks import semconv as sc
from otelhooks.events import BeforeAgentStartEvent, MessageSendingEvent
from otelhooks.testing import TestPipeline, pipeline

# The kernel's own example (docs/config-formats.md, "no-shouting"), written the Python way: the
# handler changes the data it was given and returns it.
APP_HOOKS = """
def lower_case(data):
    data.content = data.content.lower()
    return data

def add_context(data):
    data.input = "[ctx] " + data.input
    return data
"""


def kernel_app(tmp_path: Path) -> list[Hook]:
    (tmp_path / "hooks.py").write_text(APP_HOOKS, encoding="utf-8")
    app = {
        "name": "moderation",
        "capabilities": {
            "hooks": {"subscribes": [], "intercepts": ["message_sending", "before_agent_start"]}
        },
        "hooks": [
            {"id": "no-shouting", "type": "message_sending", "script": "hooks.py:lower_case"},
            {"id": "context", "type": "before_agent_start", "script": "hooks.py:add_context"},
        ],
    }
    (tmp_path / "app.json").write_text(json.dumps(app), encoding="utf-8")
    return load_config([tmp_path / "app.json"]).hooks


def send(pipe: TestPipeline, content: str, *, use_async: bool) -> tuple[str | None, list[str]]:
    """One message through the runtime: (what send_message returned, what was delivered)."""
    delivered: list[str] = []
    if not use_async:
        with pipe.tracer.operation("agent") as op:
            return op.send_message("chat", "user-1", content, deliver=delivered.append), delivered

    async def main() -> str | None:
        async with pipe.tracer.operation("agent") as op:
            return await op.asend_message("chat", "user-1", content, deliver=delivered.append)

    return asyncio.run(main()), delivered


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_kernel_hook_that_changes_the_data_in_place_and_returns_it_rewrites(
    tmp_path: Path, pipe: TestPipeline, use_async: bool
) -> None:
    pipe.register(*kernel_app(tmp_path))
    assert send(pipe, "STOP SHOUTING", use_async=use_async) == (
        "stop shouting",
        ["stop shouting"],
    )
    with pipe.tracer.operation("agent", input="hello") as op:
        pass
    assert (op.input, op.blocked) == ("[ctx] hello", False)
    pipe.flush()
    assert pipe.span("send_message chat").attributes[sc.HOOK_REWRITTEN_BY] == ("no-shouting",)  # type: ignore[index]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_guard_after_an_in_place_change_decides_on_the_text_that_is_sent(
    pipe: TestPipeline, use_async: bool
) -> None:
    # The guard sees what the redactor left; before, the runtime sent the text the guard
    # never saw (the secret), because no hook had "returned" a rewrite.
    def redact(data: MessageSendingEvent) -> None:
        data.content = data.content.replace("hunter2", "***")

    def guard(data: MessageSendingEvent) -> Any:
        return None if "hunter2" not in data.content else {"content": "[withheld]"}

    pipe.register(
        {"id": "redact", "type": "message_sending", "handler": redact},
        {"id": "guard", "type": "message_sending", "handler": guard},
    )
    sent, delivered = send(pipe, "the password is hunter2", use_async=use_async)
    assert (sent, delivered) == ("the password is ***", ["the password is ***"])


def _dict_42(field: str) -> Any:
    return lambda data: {field: 42}


def _copy_42(field: str) -> Any:
    return lambda data: data.model_copy(update={field: 42})


def _in_place_42(field: str) -> Any:
    def handler(data: Any) -> Any:
        setattr(data, field, 42)
        return data

    return handler


SHAPES = {"dict": _dict_42, "model_copy": _copy_42, "in_place": _in_place_42}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("on_error", ["block", "continue"])
def test_a_message_rewritten_to_a_number_follows_on_error(
    pipe: TestPipeline, shape: str, on_error: str
) -> None:
    # Before: model_copy made send_message raise TypeError; in place, the rewrite was ignored
    # and the message sent under on_error: block.
    pipe.register(
        {
            "id": "bad",
            "type": "message_sending",
            "handler": SHAPES[shape]("content"),
            "intercept": True,
            "on_error": on_error,
        }
    )
    sent, delivered = send(pipe, "hello", use_async=False)
    if on_error == "block":
        assert (sent, delivered) == (None, [])
    else:
        assert (sent, delivered) == ("hello", ["hello"])
    pipe.flush()
    errors = pipe.span("send_message chat").attributes[sc.HOOK_ERRORS]  # type: ignore[index]
    assert errors[0].startswith("bad: returned")  # type: ignore[index]


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("on_error", ["block", "continue"])
def test_a_run_input_rewritten_to_a_number_follows_on_error(
    pipe: TestPipeline, shape: str, on_error: str
) -> None:
    # Before: model_copy ran the agent with input 42 under on_error: block; in place, the
    # rewrite was ignored and the run not blocked.
    pipe.register(
        {
            "id": "bad",
            "type": "before_agent_start",
            "handler": SHAPES[shape]("input"),
            "intercept": True,
            "on_error": on_error,
        }
    )
    with pipe.tracer.operation("agent", input="hello") as op:
        pass
    assert (op.input, op.blocked) == ("hello", on_error == "block")


def test_what_a_timed_out_hook_changes_in_place_after_its_deadline_is_not_sent(
    pipe: TestPipeline,
) -> None:
    def late(data: MessageSendingEvent) -> None:
        time.sleep(0.4)
        data.content = "LATE"

    def slow_allow(data: BeforeAgentStartEvent | MessageSendingEvent) -> None:
        time.sleep(0.5)  # the late hook's change lands while this one runs

    pipe.register(
        {"id": "late", "type": "message_sending", "handler": late, "timeout": 0.1},
        {"id": "slow", "type": "message_sending", "handler": slow_allow},
    )
    assert send(pipe, "hello", use_async=False) == ("hello", ["hello"])


def test_a_tool_call_rewritten_as_a_model_is_validated_and_reaches_the_tool() -> None:
    # Before: a kernel handler's model_copy of toolInput ran the tool with the first
    # arguments, and args of 42 made the tool call raise TypeError under on_error: block.
    ran: list[dict[str, Any]] = []

    def rm(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "removed"

    def call(hook: dict[str, Any]) -> str:
        with pipeline() as pipe:
            pipe.register(hook)
            with pipe.tracer.operation("agent") as op, op.step() as step:
                return step.run_tool("fs", "rm", {"path": "/etc"}, rm).content

    safe = {"path": "/tmp/scratch"}
    kernel = {"id": "safe", "type": "before_tool_call", "intercept": True}
    assert call({**kernel, "handler": lambda e: e.model_copy(update={"toolInput": safe})}) == (
        "removed"
    )
    assert ran == [safe]
    bad = {"id": "bad", "type": "before_tool_call", "on_error": "block"}
    denied = call({**bad, "handler": lambda e: e.model_copy(update={"args": 42})})
    assert denied.startswith("hook bad failed")
    assert ran == [safe]


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda data: {"userMessage": "[redacted]"},
        lambda data: data.model_copy(update={"userMessage": "[redacted]"}),
    ],
    ids=["dict", "model_copy"],
)
def test_a_prompt_rewritten_in_the_workspace_engines_field_is_the_input_the_run_gets(
    pipe: TestPipeline, rewrite: Any
) -> None:
    # The workspace reference tells consumers to read userMessage; before, a UserPromptSubmit
    # hook's rewrite of it was accepted ("rewritten") and the run got its first input.
    pipe.register({"id": "redact", "type": "UserPromptSubmit", "handler": rewrite})
    with pipe.tracer.operation("agent", input="my password is hunter2") as op:
        pass
    assert (op.input, op.blocked) == ("[redacted]", False)


def test_a_tool_input_rewritten_to_a_non_object_follows_on_error() -> None:
    # Before: toolInput "rm -rf /" was taken as a rewrite and dropped (args kept), so the call
    # ran with its first arguments under on_error: block.
    ran: list[dict[str, Any]] = []
    with pipeline() as pipe:
        pipe.register(
            {
                "id": "bad",
                "type": "before_tool_call",
                "handler": lambda data: {**data.model_dump(), "toolInput": "rm -rf /"},
                "intercept": True,
                "on_error": "block",
            }
        )
        with pipe.tracer.operation("agent") as op, op.step() as step:
            result = step.run_tool("sh", "run", {"cmd": "ls"}, lambda **kw: ran.append(kw))
    assert ran == []
    assert result.content.startswith("hook bad failed")
