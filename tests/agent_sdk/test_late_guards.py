"""Guards ``hooks_for`` learns of after it was called, in a real Claude Agent SDK program.

``hooks_for`` refuses a guard on an event the SDK never calls back for, but it checked only the
engine's global hooks as they were when it was called. Two kinds of guard were taken after that
and never ran, silently: a global hook registered later on such an event (``SessionStart``), and
every hook of an ``oh.operation(..., hooks=[guard])`` the SDK runs inside (the bridge dispatches
each of the SDK's turns as an operation of its own, so none of them ever ran: the scripted
``rm -rf`` deleted the folder its ``PreToolUse`` guard was to keep). Now each callback applies
the same rule before the bridge runs its event: it refuses the event and stops the run, with the
reason in the SDK's stream, and names every such hook in an ``UndeliveredHookWarning``.
"""

from __future__ import annotations

import asyncio
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
) -> list[Any]:
    """The SDK's messages for one prompt (inside ``operation``'s ``async with`` when given); an
    error the SDK raises ends the list."""
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
            if operation is None:
                await messages(got)
            else:
                async with operation:
                    await messages(got)
        except sdk.ClaudeSDKError as exc:  # the CLI's error result for a stopped run
            got.append(exc)
        return got

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


def test_an_operations_guard_the_bridge_never_runs_refuses_the_run(
    project: Path, tmp_path: Path
) -> None:
    from otelhooks.integrations.claude_agent_sdk import UndeliveredHookWarning, hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    api = MessagesApi(_steps())
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
            pytest.warns(UndeliveredHookWarning, match=r"no-rm \(before_tool_call") as caught,
        ):
            got = _run(project, tmp_path / "home", url, hooks, oh.operation("app", hooks=GUARD))
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert not _tool_ran(api)
    assert "oh.register" in str(caught[0].message)
    assert "no-rm" in str(got), "the refusal's reason never reached the application"


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
