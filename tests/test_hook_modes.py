"""``mode: enforce | permissive | disabled`` on every hook (#27 pt 5; the names of IBM's MCP
ContextForge gateway): enforce acts, permissive decides and records but never acts, disabled
never runs. In the Python API, both runtime paths, ``hooks test``, and every config dialect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import hook
from structlog.testing import capture_logs

from otelhooks import Block, ConfigError, Hook, HookRegistry, ToolCallEvent, load_config
from otelhooks import semconv as sc
from otelhooks.testing import TestPipeline, run_cli

DENY_JSON = json.dumps(
    {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}
)


def run_tool(pipe: TestPipeline, ran: list[dict[str, Any]]) -> str:
    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("shell", "rm", {"path": "/"}, tool).content


def span_attrs(pipe: TestPipeline) -> dict[str, Any]:
    return dict(pipe.span("execute_tool rm").attributes or {})


# -- the Python API ------------------------------------------------------------------------------


def test_the_default_mode_is_enforce() -> None:
    assert Hook(id="h", type="beforeToolCall", handler=print).mode == "enforce"


def test_registering_an_unknown_mode_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="field 'mode'"):
        HookRegistry().register([hook("h", "beforeToolCall", print, mode="audit")])


def test_a_permissive_block_is_recorded_and_not_enforced(pipe: TestPipeline) -> None:
    pipe.register(hook("no-rm", "beforeToolCall", lambda e: Block("no rm"), mode="permissive"))
    ran: list[dict[str, Any]] = []
    with capture_logs() as logs:
        assert run_tool(pipe, ran) == "ran"
    assert ran == [{"path": "/"}]
    attrs = span_attrs(pipe)
    assert attrs[sc.HOOK_DECISION] == "allow"
    assert attrs[sc.HOOK_PERMISSIVE] == ("no-rm: deny: no rm",)
    assert sc.HOOK_DECIDED_BY not in attrs
    metric = {sc.ATTR_HOOK_ID: "no-rm", sc.ATTR_OUTCOME: "blocked", sc.ATTR_HOOK_MODE: "permissive"}
    assert pipe.metric_total(sc.METRIC_HOOK_INVOCATIONS, metric) == 1
    (line,) = [e for e in logs if e["event"] == "permissive hook not enforced"]
    assert (line["hook_id"], line["would"]) == ("no-rm", "deny: no rm")


def test_a_permissive_deny_is_in_the_event_log_record_and_what_observers_see(
    pipe: TestPipeline,
) -> None:
    from otelhooks import AgentEventsConfig
    from otelhooks._eventlog import entry_from_event

    seen: list[Any] = []
    pipe.register(
        hook("no-rm", "beforeToolCall", lambda e: Block("no rm"), mode="permissive"),
        hook("watch", "afterToolCall", seen.append),
    )
    assert run_tool(pipe, []) == "ran"
    pipe.flush()
    (payload,) = seen
    assert payload.permissive == ["no-rm: deny: no rm"]
    entry = entry_from_event(AgentEventsConfig(), payload)
    assert entry is not None
    assert (entry.success, entry.detail) == (True, "ok (permissive: no-rm would deny)")


def test_a_permissive_block_is_not_enforced_in_an_async_runtime(pipe: TestPipeline) -> None:
    async def guard(event: ToolCallEvent) -> Block:
        await asyncio.sleep(0)
        return Block("no rm")

    pipe.register(hook("no-rm", "beforeToolCall", guard, mode="permissive"))
    ran: list[str] = []

    async def main_() -> str:
        async with pipe.tracer.operation("a") as op, op.step() as step:
            result = await step.arun_tool("shell", "rm", {"path": "/"}, lambda path: "ran")
            ran.append(result.content)
        return result.content

    assert asyncio.run(main_()) == "ran"
    assert span_attrs(pipe)[sc.HOOK_PERMISSIVE] == ("no-rm: deny: no rm",)


def test_a_permissive_deny_mock_and_rewrite_change_nothing(pipe: TestPipeline) -> None:
    def deny(event: ToolCallEvent) -> None:
        event.deny("no")

    def mock(event: ToolCallEvent) -> None:
        event.mock("fake")

    def rewrite(event: ToolCallEvent) -> dict[str, Any]:
        return {"args": {"path": "/tmp"}}

    def in_place(event: ToolCallEvent) -> ToolCallEvent:
        event.args["path"] = "/elsewhere"  # a kernel handler changing the event it was given
        return event

    pipe.register(
        hook("deny", "beforeToolCall", deny, mode="permissive"),
        hook("mock", "beforeToolCall", mock, mode="permissive"),
        hook("rewrite", "beforeToolCall", rewrite, mode="permissive"),
        hook("in-place", "beforeToolCall", in_place, mode="permissive"),
    )
    ran: list[dict[str, Any]] = []
    assert run_tool(pipe, ran) == "ran"
    assert ran == [{"path": "/"}]
    assert span_attrs(pipe)[sc.HOOK_PERMISSIVE] == (
        "deny: deny: no",
        "mock: mock",
        "rewrite: rewrite",
        "in-place: rewrite",
    )


def test_a_permissive_kernel_intercept_returning_none_would_deny(pipe: TestPipeline) -> None:
    pipe.register(hook("k", "before_tool_call", lambda e: None, intercept=True, mode="permissive"))
    assert run_tool(pipe, []) == "ran"
    assert span_attrs(pipe)[sc.HOOK_PERMISSIVE] == ("k: deny",)


def test_a_failing_permissive_hook_with_on_error_block_does_not_block(pipe: TestPipeline) -> None:
    def broken(event: ToolCallEvent) -> None:
        raise RuntimeError("bug")

    pipe.register(hook("broken", "beforeToolCall", broken, on_error="block", mode="permissive"))
    assert run_tool(pipe, []) == "ran"
    (entry,) = span_attrs(pipe)[sc.HOOK_PERMISSIVE]
    assert entry.startswith("broken: error: would block: RuntimeError: bug")


def test_a_permissive_hook_does_not_stop_an_enforcing_one_after_it(pipe: TestPipeline) -> None:
    pipe.register(
        hook("trial", "beforeToolCall", lambda e: Block("trial"), mode="permissive"),
        hook("real", "beforeToolCall", lambda e: Block("real")),
    )
    ran: list[dict[str, Any]] = []
    assert run_tool(pipe, ran) == "real"
    assert span_attrs(pipe)[sc.HOOK_DECIDED_BY] == "real"


def test_a_permissive_command_deny_is_not_enforced(pipe: TestPipeline) -> None:
    pipe.register(
        {
            "id": "cmd",
            "type": "PreToolUse",
            "command": f"echo '{DENY_JSON}'; exit 1",
            "mode": "permissive",
        }
    )
    assert run_tool(pipe, []) == "ran"
    assert span_attrs(pipe)[sc.HOOK_PERMISSIVE] == ("cmd: deny: no rm",)


def test_a_disabled_hook_never_runs(pipe: TestPipeline) -> None:
    called: list[str] = []
    pipe.register(
        hook("off", "beforeToolCall", lambda e: called.append("x") or Block(), mode="disabled"),
        hook("seen", "afterToolCall", lambda e: called.append("after"), mode="disabled"),
    )
    assert run_tool(pipe, []) == "ran"
    pipe.flush()
    assert called == []
    assert sc.HOOK_MATCHED not in span_attrs(pipe)


# -- hooks test ----------------------------------------------------------------------------------


def test_hooks_test_says_permissive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "hooks:\n"
        "  - id: no-rm\n"
        "    type: PreToolUse\n"
        "    mode: permissive\n"
        "    command: \"echo 'no rm' >&2; exit 2\"\n"
    )
    code = run_cli("hooks", "test", str(policy), "--event", "PreToolUse", "--tool", "shell/rm")
    out = capsys.readouterr().out
    assert code == 0
    assert "- no-rm [command] (permissive): blocked" in out
    assert "permissive: would deny: no rm; not enforced" in out
    assert "verdict: allowed" in out
    assert "permissive: no-rm would deny: no rm (not enforced)" in out


# -- every dialect -------------------------------------------------------------------------------

DIALECTS: dict[str, tuple[str, str]] = {
    "otelhooks-yaml": (
        "hooks.yaml",
        "hooks:\n  - id: h\n    type: before_tool_call\n    command: 'true'\n    mode: {mode}\n",
    ),
    "lobehub-list": (
        "lobehub.yaml",
        "- id: h\n  type: beforeToolCall\n  matcher: '^fs/'\n  command: 'true'\n  mode: {mode}\n",
    ),
    "kernel-app": (
        "app.json",
        json.dumps(
            {
                "name": "app",
                "capabilities": {"hooks": {"subscribes": [], "intercepts": ["before_tool_call"]}},
                "hooks": [
                    {"id": "h", "type": "before_tool_call", "command": "true", "mode": "{mode}"}
                ],
            }
        ),
    ),
    "agent-os": (
        "audit.yaml",
        "kind: script_hook\nname: h\non: [after_tool_result]\nscript: s.py\nmode: {mode}\n",
    ),
    "claude-settings": (
        "settings.json",
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"hooks": [{"type": "command", "command": "true", "mode": "{mode}"}]}
                    ]
                }
            }
        ),
    ),
    "workspace": (
        "audit.hook.json",
        json.dumps(
            {
                "name": "w",
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "*", "type": "command", "command": "true", "mode": "{mode}"}
                    ]
                },
            }
        ),
    ),
}


def dialect_file(tmp_path: Path, dialect: str, mode: str) -> Path:
    name, text = DIALECTS[dialect]
    (tmp_path / "s.py").write_text("def after_tool_result(event):\n    return None\n")
    path = tmp_path / name
    path.write_text(text.replace("{mode}", mode))
    return path


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("mode", ["enforce", "permissive", "disabled"])
def test_every_dialect_takes_the_mode(tmp_path: Path, dialect: str, mode: str) -> None:
    (loaded,) = load_config([dialect_file(tmp_path, dialect, mode)]).hooks
    assert loaded.mode == mode


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_dialect_refuses_an_unknown_mode_naming_the_field(
    tmp_path: Path, dialect: str
) -> None:
    path = dialect_file(tmp_path, dialect, "audit")
    with pytest.raises(ConfigError) as caught:
        load_config([path])
    assert "mode" in str(caught.value)
    assert path.name in str(caught.value)


def test_a_persisted_webhook_hook_keeps_its_mode() -> None:
    from otelhooks._actions import build_hook

    hook = build_hook(
        {
            "id": "w",
            "type": "beforeToolCall",
            "webhook": {"url": "http://127.0.0.1:9/hook"},
            "mode": "permissive",
        }
    )
    assert build_hook(hook.serializable()).mode == "permissive"


# -- the Claude Code bridge ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["enforce", "permissive"])
def test_the_claude_code_bridge_answers_what_the_mode_says(tmp_path: Path, mode: str) -> None:
    from otelhooks.integrations.claude_code import BridgeOptions, run_hook

    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "hooks:\n  - id: no-rm\n    type: PreToolUse\n"
        f"    mode: {mode}\n    command: \"echo 'no rm' >&2; exit 2\"\n"
    )
    options = BridgeOptions(
        hooks=(str(policy),),
        traces_out=str(tmp_path / "traces.jsonl"),
        state=str(tmp_path / "state.sqlite3"),
    )
    pre_tool_use = {
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
        "tool_use_id": "toolu_1",
        "cwd": str(tmp_path),
    }
    response = run_hook(pre_tool_use, options, environ={})
    assert response.exit_code == 0, response.stderr
    denied = '"permissionDecision":"deny"' in response.stdout.replace(" ", "")
    assert denied is (mode == "enforce")
