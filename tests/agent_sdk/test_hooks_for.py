"""``hooks_for(oh)`` in a real Claude Agent SDK program against the scripted Anthropic API.

The SDK (``claude-agent-sdk``, which bundles the Claude Code CLI) is asked, through the
scripted Messages API of ``tests/claude_code_cli``, to ``rm -rf victim`` and then to ``touch``
a harmless file. Without hooks the deletion happens (control); with ``hooks_for(oh)`` the
``@shell`` guard of ``oh`` denies it, the harmless call runs, and the run is one trace with
both ``execute_tool Bash`` spans, exported through ``oh``'s own span pipeline.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from tests._realparts import require
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)

pytestmark = pytest.mark.timeout(120)

GUARD = [
    {
        "id": "no-rm",
        "type": "PreToolUse",
        "matcher": "@shell",
        "command": "case \"$HOOK_TOOL_INPUT\" in *'rm -rf'*) echo 'no deleting' >&2; exit 2;; esac",
    }
]


def _sdk() -> Any:
    try:
        import claude_agent_sdk
    except ImportError:
        require("claude-agent-sdk (otelhooks[claude-agent-sdk])", False)
        raise
    return claude_agent_sdk


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "victim" / "keep.txt").write_text("precious")
    return root


def _steps() -> list[ToolStep]:
    return [
        ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim", "description": "clean"}),
        ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "touch"}),
    ]


def _run(project: Path, home: Path, url: str, hooks: Any, **options: Any) -> list[Any]:
    sdk = _sdk()
    env = {
        "ANTHROPIC_BASE_URL": url,
        **OFFLINE_ENV,
        "HOME": str(home),
    }
    home.mkdir(parents=True, exist_ok=True)
    options.setdefault("permission_mode", "bypassPermissions")
    sdk_options = sdk.ClaudeAgentOptions(cwd=str(project), env=env, hooks=hooks, **options)

    async def prompt() -> Any:  # a stream: the SDK takes can_use_tool only with one
        yield {"type": "user", "message": {"role": "user", "content": "clean up"}}

    async def main() -> list[Any]:
        return [message async for message in sdk.query(prompt=prompt(), options=sdk_options)]

    return asyncio.run(asyncio.wait_for(main(), 90))


def test_without_hooks_the_sdk_deletes_the_folder(project: Path, tmp_path: Path) -> None:
    api = MessagesApi(_steps())
    with serve_messages_api(api) as url:
        _run(project, tmp_path / "home", url, None)
    assert not (project / "victim").exists()
    assert (project / "harmless.txt").exists()


def _guarded(project: Path, tmp_path: Path) -> tuple[MessagesApi, InMemorySpanExporter]:
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    memory = InMemorySpanExporter()
    oh = otelhooks.configure(
        service_name="sdk-app", hooks=GUARD, otlp=False, set_global=False, span_exporters=[memory]
    )
    api = MessagesApi(_steps())
    try:
        with serve_messages_api(api) as url:
            _run(project, tmp_path / "home", url, hooks_for(oh, state=tmp_path / "s.sqlite3"))
    finally:
        oh.shutdown()
    return api, memory


def test_hooks_for_guard_stops_the_deletion_and_runs_the_harmless_call(
    project: Path, tmp_path: Path
) -> None:
    api, _ = _guarded(project, tmp_path)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert (project / "harmless.txt").exists()
    results = [
        block
        for body in api.requests
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") == "toolu_rm"
    ]
    assert results
    assert "no deleting" in str(results[-1]["content"])


def test_hooks_for_traces_the_run_through_the_pipelines_processors(
    project: Path, tmp_path: Path
) -> None:
    _, memory = _guarded(project, tmp_path)
    spans = memory.get_finished_spans()
    tools = [s for s in spans if s.name == "execute_tool Bash"]
    outcomes = sorted(str((s.attributes or {}).get("otelhooks.tool.outcome")) for s in tools)
    assert outcomes == ["denied", "success"]
    assert len({s.context.trace_id for s in spans}) == 1
    assert {s.resource.attributes.get("service.name") for s in spans} == {"sdk-app"}
    _ = os  # the environment is passed explicitly, never inherited from the test process


def test_hooks_for_maps_every_sdk_event_to_one_async_callback() -> None:
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False)
    try:
        hooks = hooks_for(oh)
    finally:
        oh.shutdown()
    assert set(hooks) == {
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PreToolUse",
        "PreSkillShellCommand",
        "PermissionRequest",
        "PermissionDenied",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Notification",
        "SubagentStart",
        "SubagentStop",
        "ConfigChange",
        "CwdChanged",
        "PreCompact",
        "PostCompact",
        "Stop",
        "Interrupt",
    }
    for event, matchers in hooks.items():
        (matcher,) = matchers
        assert isinstance(matcher, sdk.HookMatcher)
        assert len(matcher.hooks) == 1
        assert asyncio.iscoroutinefunction(matcher.hooks[0])
        tool_event = event in ("PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse")
        assert matcher.matcher == ("*" if tool_event or event == "PostToolUseFailure" else None)


def test_hooks_for_turn_is_one_invoke_agent_span_holding_the_tool_spans(
    project: Path, tmp_path: Path
) -> None:
    _, memory = _guarded(project, tmp_path)
    spans = memory.get_finished_spans()
    # UserPromptSubmit opens the turn and Stop ends it: the tool spans are its children
    (turn,) = [s for s in spans if s.name == "invoke_agent claude-agent-sdk"]
    tools = [s for s in spans if s.name == "execute_tool Bash"]
    assert len(tools) == 2
    assert {s.parent.span_id for s in tools if s.parent is not None} == {turn.context.span_id}
    assert (turn.attributes or {}).get("gen_ai.agent.name") == "claude-agent-sdk"


def test_callbacks_waiting_behind_a_slow_guard_leave_the_apps_threads_alone(
    tmp_path: Path,
) -> None:
    # the SDK calls PreToolUse for parallel tool calls at once; each waited for the bridge on a
    # thread of the application's asyncio.to_thread executor, so a slow guard took them all
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    slow = [{**GUARD[0], "command": "sleep 1.5; " + str(GUARD[0]["command"])}]
    oh = otelhooks.configure(hooks=slow, otlp=False, set_global=False, structured_logging=False)
    [matcher] = hooks_for(oh, state=tmp_path / "s.sqlite3")["PreToolUse"]
    [callback] = matcher.hooks

    async def main() -> tuple[float, list[Any]]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(2))
        calls = [
            asyncio.create_task(
                callback(
                    {
                        "session_id": "s-1",
                        "hook_event_name": "PreToolUse",
                        "tool_name": "Bash",
                        "tool_input": {"command": f"rm -rf victim-{i}"},
                    },
                    f"toolu_{i}",
                    None,
                )
            )
            for i in range(3)
        ]
        await asyncio.sleep(0.3)
        started = time.monotonic()
        await asyncio.to_thread(lambda: None)  # the application's own work
        waited = time.monotonic() - started
        return waited, await asyncio.gather(*calls)

    try:
        waited, answers = asyncio.run(main())
    finally:
        oh.shutdown()
    assert waited < 0.5
    assert [a["hookSpecificOutput"]["permissionDecision"] for a in answers] == ["deny"] * 3


def _pre_tool_use(tmp_path: Path, event: dict[str, Any], **options: Any) -> Any:
    """The answer of ``hooks_for``'s ``PreToolUse`` callback to ``event``, as the SDK calls it."""
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, structured_logging=False)
    try:
        [matcher] = hooks_for(oh, state=tmp_path / "s.sqlite3", **options)["PreToolUse"]
        [callback] = matcher.hooks
        return asyncio.run(callback(event, str(event.get("tool_use_id") or "toolu_1"), None))
    finally:
        oh.shutdown()


@pytest.mark.parametrize("field", ["session_id", "tool_use_id"])
def test_a_lone_surrogate_in_an_id_is_no_way_past_the_guard(tmp_path: Path, field: str) -> None:
    # json.loads of the CLI's "\ud800" escape gives a str no file or span can take: the
    # bridge failed, the callback raised, and the CLI ran the tool
    event = {
        "session_id": "s-1",
        "tool_use_id": "toolu_1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"},
        field: "id-\ud800",
    }
    answer = _pre_tool_use(tmp_path, event)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("fail_closed", [True, False])
def test_fail_closed_denies_when_the_bridge_itself_fails(
    tmp_path: Path, fail_closed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otelhooks.integrations.coding_agents import CodingAgentBridge

    def broken(*_: Any, **__: Any) -> Any:  # a fault of the bridge's own
        raise RuntimeError("a bug of the bridge")

    monkeypatch.setattr(CodingAgentBridge, "handle", broken)
    event = {
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    if not fail_closed:  # the callback raises: the CLI shows it and runs the tool
        with pytest.raises(RuntimeError, match="a bug of the bridge"):
            _pre_tool_use(tmp_path, event)
        return
    answer = _pre_tool_use(tmp_path, event, fail_closed=True)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"] == (
        "otelhooks could not check this tool call (fail-closed): RuntimeError: a bug of the bridge"
    )


@pytest.mark.parametrize("beside", ["allowing_callback", "allowing_can_use_tool"])
def test_the_deny_holds_beside_the_applications_own_allow(
    project: Path, tmp_path: Path, beside: str
) -> None:
    # the CLI asks every PreToolUse callback and takes the strictest answer, then asks
    # can_use_tool only about calls no hook denied: an allow of the application's own is
    # no way past the guard (a PermissionRequest hook, unlike PreToolUse, races can_use_tool)
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    asked: list[str] = []

    async def allow(_: Any, __: Any, ___: Any) -> Any:
        decision = {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
        return {"hookSpecificOutput": decision}

    async def can_use_tool(_: str, tool_input: dict[str, Any], __: Any) -> Any:
        asked.append(str(tool_input.get("command")))
        return sdk.PermissionResultAllow()

    memory = InMemorySpanExporter()
    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, span_exporters=[memory])
    hooks = hooks_for(oh, state=tmp_path / "s.sqlite3")
    options: dict[str, Any] = {}
    if beside == "allowing_callback":
        hooks["PreToolUse"].insert(0, sdk.HookMatcher(matcher="Bash", hooks=[allow]))
    else:
        options = {"permission_mode": "default", "can_use_tool": can_use_tool}
    try:
        with serve_messages_api(MessagesApi(_steps())) as url:
            _run(project, tmp_path / "home", url, hooks, **options)
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert (project / "harmless.txt").exists()
    assert "rm -rf victim" not in asked
    tools = [s for s in memory.get_finished_spans() if s.name == "execute_tool Bash"]
    outcomes = sorted(str((s.attributes or {}).get("otelhooks.tool.outcome")) for s in tools)
    assert outcomes == ["denied", "success"]


# An approval on Bash that nobody answers: its default allow applies at 2 s, longer than the
# callback's 1 s these tests give hooks_for
ASK_SHELL = {
    "id": "ask-shell",
    "type": "before_tool_call",
    "matcher": "Bash",
    "approval": {"timeout": 2, "default": "allow"},
}


def test_the_cli_waits_for_an_approval_longer_than_the_callbacks_timeout(
    project: Path, tmp_path: Path
) -> None:
    # an approval holds the call until a person answers (here nobody does, and its default
    # allow applies at 2 s): the CLI gave up at hooks_for's 1 s and refused the call, so an
    # approval longer than timeout_s was cut short whatever the person answered
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(
        hooks=[ASK_SHELL], otlp=False, set_global=False, structured_logging=False
    )
    hooks = hooks_for(oh, state=tmp_path / "s.sqlite3", timeout_s=1)
    assert [m.timeout for m in hooks["Notification"]] == [1]  # no approval holds it
    touch = ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "t"})
    try:
        with serve_messages_api(MessagesApi([touch])) as url:
            _run(project, tmp_path / "home", url, hooks)
    finally:
        oh.shutdown()
    assert (project / "harmless.txt").exists()


@pytest.mark.parametrize("where", ["registered-later", "operation"])
def test_an_approval_hooks_for_did_not_see_still_gets_the_longer_wait(
    project: Path, tmp_path: Path, where: str
) -> None:
    # the approval is registered after hooks_for (or given to the operation the SDK runs in):
    # the CLI was told hooks_for's 1 s, gave up on the approval (nobody answers; its default
    # allow applies at 2 s) and refused the call. The wait is now read as the SDK starts the CLI
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    hooks = hooks_for(oh, state=tmp_path / "s.sqlite3", timeout_s=1)
    touch = ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "t"})
    try:
        with serve_messages_api(MessagesApi([touch])) as url:
            if where == "operation":
                with oh.operation("app", hooks=[ASK_SHELL]):
                    _run(project, tmp_path / "home", url, hooks)
            else:
                oh.register([ASK_SHELL])
                _run(project, tmp_path / "home", url, hooks)
    finally:
        hooks.close()
        oh.shutdown()
    assert (project / "harmless.txt").exists()
    assert [m.timeout for m in hooks["Notification"]] == [1]  # no approval holds it


def test_each_cli_is_answered_by_the_wait_it_was_told(project: Path, tmp_path: Path) -> None:
    # one hooks_for, two clients: the first connected in an operation with an approval (told
    # 17 s), the second in a context of its own (told hooks_for's 1 s) before the first is
    # asked anything.
    # Answered by the last wait told, the first client's approval was cut at 0.75 s and its call
    # refused; each callback now keeps to the wait its own CLI was told
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(otlp=False, set_global=False, structured_logging=False)
    hooks = hooks_for(oh, state=tmp_path / "s.sqlite3", timeout_s=1)
    touch = ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "t"})
    home = tmp_path / "home"
    home.mkdir()

    async def main(url: str) -> None:
        env = {"ANTHROPIC_BASE_URL": url, **OFFLINE_ENV, "HOME": str(home)}
        options = sdk.ClaudeAgentOptions(
            cwd=str(project), env=env, hooks=hooks, permission_mode="bypassPermissions"
        )

        async def second() -> None:
            async with sdk.ClaudeSDKClient(options):  # told 1 s: no operation, no approval
                pass

        async with oh.operation("app", hooks=[ASK_SHELL]), sdk.ClaudeSDKClient(options) as first:
            await asyncio.create_task(second(), context=contextvars.Context())
            await first.query("touch it")
            async for _ in first.receive_response():
                pass

    try:
        with serve_messages_api(MessagesApi([touch])) as url:
            asyncio.run(asyncio.wait_for(main(url), 90))
    finally:
        hooks.close()
        oh.shutdown()
    assert (project / "harmless.txt").exists()


def test_a_guard_the_cli_gave_up_on_holds_back_no_other_event(tmp_path: Path) -> None:
    # the CLI stops waiting for a callback at its timeout and refuses the call; the guard went
    # on holding hooks_for's one thread, so every later event, of any session, timed out too
    # and was refused whatever its guards decided
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    stuck = [
        {
            **GUARD[0],
            "id": "stuck",
            "command": 'case "$HOOK_TOOL_INPUT" in *stuck*) sleep 3;; esac; ',
        }
    ]
    hooks = [*stuck, *GUARD]
    oh = otelhooks.configure(hooks=hooks, otlp=False, set_global=False, structured_logging=False)
    [matcher] = hooks_for(oh, state=tmp_path / "s.sqlite3", timeout_s=2)["PreToolUse"]
    [callback] = matcher.hooks

    def call(session: str, command: str, n: int) -> Any:
        event = {
            "session_id": session,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
        # the CLI's own wait: an answer after it is refused whatever it says
        return asyncio.wait_for(callback(event, f"toolu_{n}", None), 2)

    async def main() -> list[Any]:
        first = asyncio.ensure_future(call("s-1", "stuck", 0))
        await asyncio.sleep(0.2)
        later = [call("s-1", "rm -rf victim", 1), call("s-2", "rm -rf victim", 2)]
        answers = [await first, *await asyncio.gather(*later)]
        await asyncio.sleep(1.7)  # the stuck guard ends before oh shuts down
        return answers

    try:
        answers = [a["hookSpecificOutput"] for a in asyncio.run(main())]
    finally:
        oh.shutdown()
    assert [a["permissionDecision"] for a in answers] == ["deny"] * 3
    assert answers[0]["permissionDecisionReason"].startswith(
        # fail_closed is not on: the reason claimed "(fail-closed)"
        "otelhooks could not check this tool call, so it is blocked: "
    )
    assert "no answer within 1.5 s" in answers[0]["permissionDecisionReason"]
    assert [a["permissionDecisionReason"] for a in answers[1:]] == ["no deleting"] * 2


ASK = [
    {
        "id": "ask-rm",
        "type": "PreToolUse",
        "matcher": "Bash",
        "command": 'case "$HOOK_TOOL_INPUT" in *\'rm -rf\'*) echo \'{"hookSpecificOutput": '
        '{"hookEventName": "PreToolUse", "permissionDecision": "ask", '
        '"permissionDecisionReason": "sure?"}}\';; esac',
    }
]


def test_closing_the_hooks_records_a_call_the_cli_refused_after_pre_tool_use(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # under the SDK nobody answers a guard's "ask": the CLI refuses the call and sends no
    # event more (no PermissionDenied, no SessionEnd), so its span stayed open, never exported
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    memory = InMemorySpanExporter()
    oh = otelhooks.configure(hooks=ASK, otlp=False, set_global=False, span_exporters=[memory])
    try:
        with hooks_for(oh) as hooks, serve_messages_api(MessagesApi(_steps())) as url:
            _run(project, tmp_path / "home", url, hooks)
            assert list((tmp_path / "temp").iterdir())  # the session file's folder
        assert not list((tmp_path / "temp").iterdir())
        answer = asyncio.run(
            hooks["PreToolUse"][0].hooks[0](
                {"session_id": "s-9", "tool_name": "Bash", "tool_input": {"command": "ls"}},
                "toolu_9",
                None,
            )
        )
    finally:
        oh.shutdown()
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    tools = {
        str((s.attributes or {}).get("gen_ai.tool.call.id")): s.attributes or {}
        for s in memory.get_finished_spans()
        if s.name == "execute_tool Bash"
    }
    assert tools["toolu_ok"]["otelhooks.tool.outcome"] == "success"
    refused = tools["toolu_rm"]
    assert refused["otelhooks.hook.decision"] == "ask"
    assert refused["otelhooks.tool.outcome"] == "error"
    assert refused["error.type"] == "SessionEnded"
    # closed, it refuses rather than let a call through unchecked
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
