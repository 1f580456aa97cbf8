"""Guards ``hooks_for`` learns of after it was called, in a real Claude Agent SDK program.

``hooks_for`` refuses a guard on an event the SDK never calls back for, but it checked only the
engine's global hooks as they were when it was called. Three kinds of hook were taken after that
without a word: a global hook registered later on such an event (``SessionStart``); the hooks of
an ``oh.operation(..., hooks=[guard])`` the SDK runs inside, which never ran (the bridge
dispatches each of the SDK's turns as an operation of its own: the scripted ``rm -rf`` deleted
the folder its ``PreToolUse`` guard was to keep; the previous pass refused the run instead); and
hooks registered for a turn's own operation id (``event.operationId``) on such an event.

Now each turn's operation runs within the application's operation (as a sub-agent's run within
the run that called it), so the operation's hooks run on every event of the turn, in either form
of ``with``; and each callback applies the delivery rule to the global hooks, the operation's and
the turn's before the bridge runs its event: a guard that would never run refuses the event and
stops the run, with the reason in the SDK's stream, and is named in an
``UndeliveredHookWarning``.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

import otelhooks
from tests.agent_sdk.test_hooks_for import GUARD, _sdk, _steps
from tests.claude_code_cli._messages_api import OFFLINE_ENV, MessagesApi, serve_messages_api

pytestmark = pytest.mark.timeout(120)

START_GUARD = {"id": "start-policy", "type": "SessionStart", "command": "exit 2"}


def _run(
    project: Path,
    home: Path,
    url: str,
    hooks: Any,
    operation: Any = None,
    permission_mode: str = "bypassPermissions",
    entered_async: bool = True,
) -> list[Any]:
    """The SDK's messages for one prompt (inside ``operation``'s ``async with``, or its plain
    ``with`` around the event loop, when given); an error the SDK raises ends the list."""
    sdk = _sdk()
    home.mkdir(parents=True, exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": url, **OFFLINE_ENV, "HOME": str(home)}
    options = sdk.ClaudeAgentOptions(
        cwd=str(project), env=env, hooks=hooks, permission_mode=permission_mode
    )

    async def prompt() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "clean up"}}

    async def messages(into: list[Any]) -> None:
        async for message in sdk.query(prompt=prompt(), options=options):
            into.append(message)

    async def main() -> list[Any]:
        got: list[Any] = []
        try:
            if operation is None or not entered_async:
                await messages(got)
            else:
                async with operation:
                    await messages(got)
        except sdk.ClaudeSDKError as exc:  # the CLI's error result for a stopped run
            got.append(exc)
        return got

    if operation is not None and not entered_async:
        with operation:  # asyncio.run copies the context the operation made current
            return asyncio.run(asyncio.wait_for(main(), 90))
    return asyncio.run(asyncio.wait_for(main(), 90))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "victim" / "keep.txt").write_text("precious")
    return root


def _tool_ran(api: MessagesApi) -> bool:
    return any(
        block.get("type") == "tool_result"
        for body in api.requests
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _tool_result(api: MessagesApi, use_id: str) -> str:
    return " ".join(
        str(block.get("content"))
        for body in api.requests
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") == use_id
    )


@pytest.mark.parametrize("entered_async", [True, False], ids=["async-with", "with"])
def test_an_operations_guard_runs_on_every_turn_the_sdk_runs_inside_it(
    project: Path, tmp_path: Path, entered_async: bool
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    seen: list[tuple[bool, str]] = []
    heard = {
        "id": "heard",
        "type": "after_tool_call",
        "handler": lambda event: seen.append((event.success, str(event.operationId))),
    }
    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    api = MessagesApi(_steps())
    operation = oh.operation("app", hooks=[*GUARD, heard])
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("error", UndeliveredHookWarning)
            got = _run(
                project, tmp_path / "home", url, hooks, operation, entered_async=entered_async
            )
        oh.engine.flush_observers()
        left = oh.engine.registry.has_any()
    finally:
        oh.shutdown()
    # the operation's guard denied the deletion, and told the model why; the run went on
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "no deleting" in _tool_result(api, "toolu_rm")
    assert (project / "harmless.txt").exists()
    assert not any(isinstance(m, Exception) for m in got), got
    # its observer heard both calls' ends (the denied one unsuccessful), dispatched with the
    # SDK turn's own operation id
    assert sorted(success for success, _ in seen) == [False, True]
    assert {op for _, op in seen} - {operation.operation_id} == {op for _, op in seen}
    assert not left, "a turn's scope outlived its turn"


def test_an_operations_guard_on_an_event_the_sdk_never_delivers_refuses_the_run(
    project: Path, tmp_path: Path
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    api = MessagesApi(_steps())
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            pytest.warns(UndeliveredHookWarning, match=r"start-policy \(session_start") as caught,
        ):
            got = _run(
                project, tmp_path / "home", url, hooks, oh.operation("app", hooks=[START_GUARD])
            )
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert not _tool_ran(api)
    assert "operation" in str(caught[0].message)
    assert "start-policy" in str(got), "the refusal's reason never reached the application"


def test_a_guard_registered_for_a_turns_own_operation_is_judged_by_the_same_rule(
    project: Path, tmp_path: Path
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    start_guard = {"id": "run-start", "type": "SessionStart", "command": "exit 2"}

    def per_turn(event: Any) -> None:
        # an application's hook giving each run guards of its own, by the id its events carry
        oh.engine.register([start_guard], operation_id=event.operationId)

    oh.register([{"id": "per-turn", "type": "before_agent_start", "handler": per_turn}])
    api = MessagesApi(_steps())
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            pytest.warns(UndeliveredHookWarning, match=r"run-start \(session_start"),
        ):
            got = _run(project, tmp_path / "home", url, hooks)
    finally:
        oh.shutdown()
    # the first tool call of the turn is refused: SessionStart never reaches a callback
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "run-start" in str(got), "the refusal's reason never reached the application"


@pytest.mark.parametrize("accept", [False, True], ids=["refused", "accepted"])
def test_a_guard_registered_after_hooks_for_is_judged_by_the_same_rule(
    project: Path, tmp_path: Path, accept: bool
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    api = MessagesApi(_steps())
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3", accept_undelivered=accept) as hooks,
        ):
            oh.register([START_GUARD])  # after hooks_for: it never runs under the SDK
            with pytest.warns(UndeliveredHookWarning, match=r"start-policy \(session_start"):
                got = _run(project, tmp_path / "home", url, hooks)
    finally:
        oh.shutdown()
    # accepted, the run goes on without the guard (the deletion runs); refused, nothing runs
    assert (project / "victim").exists() is not accept
    assert _tool_ran(api) is accept
    assert ("start-policy" in str(got)) is not accept


def test_an_operations_guard_runs_in_a_turn_and_is_refused_outside_one(tmp_path: Path) -> None:
    """The callbacks called as the SDK calls them, inside the application's operation: a
    ``ConfigChange`` before any prompt is sent in no turn (the operation's hooks run only on a
    turn's events), after ``UserPromptSubmit`` in the turn it opened. No real CLI was seen
    sending an event outside a turn (a query's first is its prompt); this pins the rule."""
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    no_config = {
        "id": "no-config",
        "type": "ConfigChange",
        "command": "echo 'settings are frozen' >&2; exit 2",
    }
    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    change = {"session_id": "s-1", "source": "project_settings", "file_path": "x.json"}
    prompt = {"session_id": "s-1", "prompt": "hello", "cwd": str(tmp_path)}

    async def main(hooks: Any) -> tuple[Any, Any, Any]:
        def callback(event: str) -> Any:
            return hooks[event][0].hooks[0]

        async with oh.operation("app", hooks=[no_config]):
            outside = await callback("ConfigChange")(dict(change), None, None)
            started = await callback("UserPromptSubmit")(dict(prompt), None, None)
            inside = await callback("ConfigChange")(dict(change), None, None)
        return outside, started, inside

    try:
        with (
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            pytest.warns(UndeliveredHookWarning, match="outside any turn"),
        ):
            outside, started, inside = asyncio.run(main(hooks))
    finally:
        oh.shutdown()
    assert outside["continue_"] is False
    assert "no-config" in outside["stopReason"]
    assert started == {}
    assert inside == {"decision": "block", "reason": "settings are frozen"}


@pytest.mark.parametrize("connected", ["inside", "before", "used-after"])
def test_a_client_connected_before_the_operation_says_its_guards_do_not_see_it(
    project: Path, tmp_path: Path, connected: str
) -> None:
    """A ``ClaudeSDKClient`` runs its callbacks in the context it was connected in: connected
    before ``async with oh.operation(..., hooks=[guard])`` began, no turn runs inside the
    operation and its guard never runs (the folder is deleted), silently before; now an
    ``UndeliveredHookWarning`` names the operation's hooks and the fix. Connected inside it,
    the guard denies; used after the operation ended, its hooks (gone with it) do not see the
    next turn, which a warning says too."""
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    sdk = _sdk()
    home = tmp_path / "home"
    home.mkdir()
    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    api = MessagesApi(_steps())

    async def turn(client: Any) -> None:
        await client.query("clean up")
        async for _ in client.receive_response():
            pass

    async def main(hooks: Any, url: str) -> None:
        env = {"ANTHROPIC_BASE_URL": url, **OFFLINE_ENV, "HOME": str(home)}
        options = sdk.ClaudeAgentOptions(
            cwd=str(project), env=env, hooks=hooks, permission_mode="bypassPermissions"
        )
        if connected == "inside":
            async with oh.operation("app", hooks=GUARD), sdk.ClaudeSDKClient(options) as client:
                await turn(client)
        elif connected == "used-after":  # connected inside the operation, used after it ended
            client = sdk.ClaudeSDKClient(options)
            async with oh.operation("app", hooks=GUARD):
                await client.connect()
                await turn(client)
            try:
                await turn(client)
            finally:
                await client.disconnect()
        else:
            async with sdk.ClaudeSDKClient(options) as client, oh.operation("app", hooks=GUARD):
                await turn(client)

    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always", UndeliveredHookWarning)
            asyncio.run(asyncio.wait_for(main(hooks, url), 90))
    finally:
        oh.shutdown()
    told = [str(w.message) for w in caught if issubclass(w.category, UndeliveredHookWarning)]
    if connected == "inside":
        assert (project / "victim" / "keep.txt").read_text() == "precious"
        assert told == []
    elif connected == "used-after":  # its hooks ended with it: the second turn is not seen
        assert (project / "victim" / "keep.txt").read_text() == "precious"
        assert len(told) == 1
        assert "has ended" in told[0]
        assert "no-rm" in told[0]
    else:  # not prevented: which operation the SDK serves cannot be told; said, not silent
        assert len(told) == 1
        assert "outside the operation" in told[0]
        assert "no-rm" in told[0]


def test_an_operations_hooks_hear_a_call_that_ends_after_its_turns_stop(tmp_path: Path) -> None:
    """The callbacks called as the CLI calls them for a background sub-agent: its call starts in
    the turn and ends after the turn's ``Stop``. The turn's scope (the operation's hooks) is
    kept until that call ends, so the operation's observer hears it; before, the scope went
    with ``Stop`` and the end reached only the global hooks."""
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    ended: list[str] = []
    heard = {
        "id": "heard",
        "type": "after_tool_call",
        "handler": lambda e: ended.append(e.toolName),
    }
    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    call = {"session_id": "s-1", "tool_name": "Bash", "tool_input": {"command": "ls"}}

    async def main(hooks: Any) -> None:
        def callback(event: str) -> Any:
            return hooks[event][0].hooks[0]

        async with oh.operation("app", hooks=[heard]):
            await callback("UserPromptSubmit")({"session_id": "s-1", "prompt": "go"}, None, None)
            await callback("PreToolUse")(dict(call), "toolu_bg", None)
            await callback("Stop")({"session_id": "s-1", "stop_hook_active": False}, None, None)
            done = {**call, "tool_response": {"stdout": "a.txt"}}
            await callback("PostToolUse")(done, "toolu_bg", None)

    try:
        with hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks:
            asyncio.run(main(hooks))
        oh.engine.flush_observers()
        left = oh.engine.registry.has_any()
    finally:
        oh.shutdown()
    assert ended == ["Bash"]
    assert not left, "the turn's scope outlived its last call"
