"""Tool kinds with the real OpenAI Agents SDK: ``@shell`` and ``@file_edit`` guards.

A ``FunctionTool`` declared as ``shell`` is denied by a ``@shell`` guard, the model is told why,
and a harmless tool in the same run still runs. The SDK's own ``ShellTool`` and
``LocalShellTool`` (their local executors run offline) and ``ApplyPatchTool`` (its editor) are
guarded the same way. A tool no otelhooks hook can see (a hosted tool) is named in an
``UnguardedToolWarning`` (``docs/adapters.md``, "Tool kinds").
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    ApplyPatchOperation,
    ApplyPatchResult,
    ApplyPatchTool,
    CodeInterpreterTool,
    LocalShellCommandRequest,
    LocalShellTool,
    Runner,
    ShellCommandOutput,
    ShellCommandRequest,
    ShellResult,
    ShellTool,
    WebSearchTool,
    function_tool,
    set_trace_processors,
)
from agents.mcp import MCPServerStdio
from agents.run_config import RunConfig, SandboxRunConfig
from agents.sandbox import SandboxAgent
from agents.sandbox.capabilities import Shell
from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient
from agents.testing import assistant_message, function_call
from openai.types.responses import ResponseApplyPatchToolCall, ResponseFunctionShellToolCall
from openai.types.responses.response_output_item import LocalShellCall
from opentelemetry.trace import StatusCode

from otelhooks import Block, HookEvent
from otelhooks.integrations.openai_agents import HookedRunner, UnguardedToolWarning, hook_agent
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def no_shell(event: HookEvent) -> Block:
    return Block("no shell commands in this agent")


GUARD = hook("no-shell", "beforeToolCall", no_shell, matcher="@shell")


def _run(pipe: TestPipeline, agent: Agent[Any]) -> None:
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "tidy up", session_id="s-kinds"))


def _denied(pipe: TestPipeline) -> list[str]:
    return [
        str((s.attributes or {}).get("gen_ai.tool.name"))
        for s in pipe.spans()
        if s.name.startswith("execute_tool")
        and (s.attributes or {}).get("otelhooks.hook.decision") == "deny"
    ]


def test_a_function_tool_declared_shell_is_denied_and_a_harmless_one_runs(
    pipe: TestPipeline,
) -> None:
    pipe.register(GUARD)
    ran: list[str] = []

    @function_tool(name_override="shell")
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(f"shell {command}")
        return "done"

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append("add")
        return a + b

    model = ScriptedModel(
        "scripted",
        [
            [
                function_call("shell", {"command": "rm -r victim"}, call_id="c1"),
                function_call("add", {"a": 2, "b": 3}, call_id="c2"),
            ],
            [assistant_message("done")],
        ],
    )
    _run(pipe, Agent(name="ops", model=model, tools=[run_shell, add]))
    assert ran == ["add"]
    told = model.tool_outputs()
    assert "no shell commands in this agent" in told["c1"]
    assert told["c2"] == "5"
    assert _denied(pipe) == ["shell"]


def no_removals(event: HookEvent) -> Block | None:
    args = event.args  # type: ignore[attr-defined]
    commands = args.get("commands") or args.get("command") or []
    return Block("no removals") if any("rm " in c for c in commands) else None


def shell_call(call_id: str, command: str) -> ResponseFunctionShellToolCall:
    return ResponseFunctionShellToolCall(
        id=f"sh_{call_id}",
        call_id=call_id,
        type="shell_call",
        status="completed",
        action={"commands": [command], "timeout_ms": 1000, "max_output_length": 1000},
    )


def _tool_spans(pipe: TestPipeline) -> dict[str, dict[str, Any]]:
    return {
        str((s.attributes or {}).get("gen_ai.tool.call.id")): dict(s.attributes or {})
        for s in pipe.spans()
        if s.name.startswith("execute_tool")
    }


def test_a_shell_guard_denies_the_sdks_shell_tool_and_a_harmless_command_runs(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    pipe.register(
        hook("no-rm", "beforeToolCall", no_removals, matcher="@shell"),
        hook("rec", "afterToolCall", recorder, matcher="@shell"),
    )
    ran: list[list[str]] = []

    def execute(request: ShellCommandRequest) -> str:
        ran.append(list(request.data.action.commands))
        return "a.txt b.txt"

    model = ScriptedModel(
        "scripted",
        [[shell_call("c1", "rm -r victim"), shell_call("c2", "ls")], [assistant_message("ok")]],
    )
    _run(pipe, Agent(name="ops", model=model, tools=[ShellTool(executor=execute)]))
    pipe.flush()

    assert ran == [["ls"]]
    told = model.tool_outputs()
    assert told["c1"] == "no removals"
    assert told["c2"] == "a.txt b.txt"
    spans = _tool_spans(pipe)
    assert spans["c1"]["otelhooks.hook.decision"] == "deny"
    assert spans["c1"]["otelhooks.tool.matcher_value"] == "ops/shell"
    assert spans["c2"]["otelhooks.tool.outcome"] == "success"
    seen = {(e.toolCallId, e.content) for e in recorder.of("after_tool_call")}  # type: ignore[attr-defined]
    assert seen == {("c1", "no removals"), ("c2", "a.txt b.txt")}


def test_a_shell_guard_denies_the_sdks_local_shell_tool(pipe: TestPipeline) -> None:
    pipe.register(hook("no-rm", "beforeToolCall", no_removals, matcher="@shell"))
    ran: list[list[str]] = []

    def execute(request: LocalShellCommandRequest) -> str:
        ran.append(list(request.data.action.command))
        return "listed"

    def call(call_id: str, command: list[str]) -> LocalShellCall:
        return LocalShellCall(
            id=f"ls_{call_id}",
            call_id=call_id,
            type="local_shell_call",
            status="completed",
            action={"type": "exec", "command": command, "env": {}},
        )

    model = ScriptedModel(
        "scripted",
        [[call("c1", ["rm -r", "victim"])], [call("c2", ["ls"])], [assistant_message("ok")]],
    )
    _run(pipe, Agent(name="ops", model=model, tools=[LocalShellTool(executor=execute)]))

    assert ran == [["ls"]]
    told = model.tool_outputs()
    assert told["c1"] == "no removals"
    assert told["c2"] == "listed"
    assert _denied(pipe) == ["local_shell"]


def test_a_failing_shell_executor_ends_its_span_with_the_error(pipe: TestPipeline) -> None:
    def execute(request: ShellCommandRequest) -> str:
        raise RuntimeError("disk on fire")

    model = ScriptedModel("scripted", [[shell_call("c1", "ls")], [assistant_message("ok")]])
    _run(pipe, Agent(name="ops", model=model, tools=[ShellTool(executor=execute)]))

    assert "disk on fire" in model.tool_outputs()["c1"]
    [span] = pipe.spans("execute_tool shell")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["otelhooks.tool.outcome"] == "error"


class Files:
    """An ``ApplyPatchEditor`` over a dict: what the model's patches really did."""

    def __init__(self) -> None:
        self.files = {"notes.md": "hello", "keep.md": "important"}

    def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        self.files[operation.path] = operation.diff or ""
        return ApplyPatchResult(output=f"created {operation.path}")

    def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        self.files[operation.path] += operation.diff or ""
        return ApplyPatchResult(output=f"updated {operation.path}")

    def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        del self.files[operation.path]
        return ApplyPatchResult(output=f"deleted {operation.path}")


def patch_call(call_id: str, operation: dict[str, str]) -> ResponseApplyPatchToolCall:
    return ResponseApplyPatchToolCall(
        id=f"ap_{call_id}",
        call_id=call_id,
        type="apply_patch_call",
        status="completed",
        operation=operation,
    )


def test_a_file_edit_guard_denies_the_sdks_apply_patch_tool(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    def no_deletes(event: HookEvent) -> Block | None:
        args = event.args  # type: ignore[attr-defined]
        return Block("files stay") if args["type"] == "delete_file" else None

    pipe.register(
        hook("keep-files", "beforeToolCall", no_deletes, matcher="@file_edit"),
        hook("rec", "afterToolCall", recorder, matcher="@file_write"),
    )
    files = Files()
    model = ScriptedModel(
        "scripted",
        [
            [patch_call("c1", {"type": "delete_file", "path": "keep.md"})],
            [patch_call("c2", {"type": "update_file", "path": "notes.md", "diff": "+ world"})],
            [assistant_message("ok")],
        ],
    )
    agent = Agent(name="writer", model=model, tools=[ApplyPatchTool(editor=files)])
    _run(pipe, agent)

    assert files.files == {"notes.md": "hello+ world", "keep.md": "important"}
    told = model.tool_outputs()
    assert told["c1"] == "failed: files stay"
    assert told["c2"] == "completed: updated notes.md"
    assert _denied(pipe) == ["apply_patch"]
    values = {
        (s.attributes or {}).get("otelhooks.tool.matcher_value")
        for s in pipe.spans()
        if s.name == "execute_tool apply_patch"
    }
    assert values == {"writer/apply_patch"}
    pipe.flush()
    seen = [(e.args["type"], e.content) for e in recorder.of("after_tool_call")]  # type: ignore[attr-defined]
    assert seen == [("delete_file", "files stay"), ("update_file", "updated notes.md")]


def test_rewritten_arguments_reach_the_shell_executor_and_the_editor(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    def redirect(event: Any) -> dict[str, Any] | None:
        if event.apiName == "shell":
            return {"args": {**event.args, "commands": ["ls -a"]}}
        if event.apiName == "apply_patch":
            return {"args": {**event.args, "path": "scratch.md"}}
        return None

    pipe.register(
        hook("redirect", "before_tool_call", redirect),
        hook("rec", "afterToolCall", recorder, matcher="@shell"),
    )
    ran: list[list[str]] = []

    def execute(request: ShellCommandRequest) -> ShellResult:
        ran.append(list(request.data.action.commands))
        return ShellResult(output=[ShellCommandOutput(stdout="listed", stderr="one hidden")])

    files = Files()
    model = ScriptedModel(
        "scripted",
        [
            [shell_call("c1", "ls")],
            [patch_call("c2", {"type": "create_file", "path": "keep.md", "diff": "new"})],
            [assistant_message("ok")],
        ],
    )
    tools: list[Any] = [ShellTool(executor=execute), ApplyPatchTool(editor=files)]
    _run(pipe, Agent(name="ops", model=model, tools=tools))

    assert ran == [["ls -a"]]
    assert "listed" in model.tool_outputs()["c1"]
    [shell] = pipe.spans("execute_tool shell")
    assert (shell.attributes or {})["otelhooks.tool.outcome"] == "success"
    pipe.flush()
    [after] = recorder.of("after_tool_call")
    assert after.content == "listed\none hidden"  # type: ignore[attr-defined]
    assert files.files == {"notes.md": "hello", "keep.md": "important", "scratch.md": "new"}
    assert model.tool_outputs()["c2"] == "completed: created scratch.md"


def test_hooking_leaves_the_users_agent_and_tools_as_they_were(pipe: TestPipeline) -> None:
    pipe.register(GUARD)

    def execute(request: ShellCommandRequest) -> str:
        return "ran"

    def local(request: LocalShellCommandRequest) -> str:
        return "ran"

    files = Files()
    shell, local_shell, patch = (
        ShellTool(executor=execute),
        LocalShellTool(executor=local),
        ApplyPatchTool(editor=files),
    )
    tools: list[Any] = [shell, local_shell, patch]
    model = ScriptedModel("scripted", [[shell_call("c1", "ls")], [assistant_message("ok")]])
    agent = Agent(name="ops", model=model, tools=tools)
    _run(pipe, agent)

    assert model.tool_outputs()["c1"] == "no shell commands in this agent"
    assert agent.tools is tools
    assert agent.tools == [shell, local_shell, patch]
    assert shell.executor is execute
    assert local_shell.executor is local
    assert patch.editor is files


def test_hosted_tools_are_named_in_one_warning_once_per_agent(pipe: TestPipeline) -> None:
    model = ScriptedModel("scripted", [[assistant_message("ok")], [assistant_message("ok")]])
    agent = Agent(
        name="researcher",
        model=model,
        tools=[
            WebSearchTool(),
            CodeInterpreterTool(
                tool_config={"type": "code_interpreter", "container": {"type": "auto"}}
            ),
        ],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per message and place
        _run(pipe, agent)
        _run(pipe, agent)
    [warning] = [w for w in caught if w.category is UnguardedToolWarning]
    text = str(warning.message)
    assert text.startswith("otelhooks: agent 'researcher': no otelhooks tool hook sees ")
    assert "'web_search' (WebSearchTool" in text
    assert "'code_interpreter' (CodeInterpreterTool" in text


def test_a_hosted_shell_is_named_in_the_warning_and_mcp_servers_no_longer_are() -> None:
    hosted = ShellTool(environment={"type": "container_auto"})
    server = MCPServerStdio(params={"command": "true"}, name="files")
    agent = Agent(name="ops", tools=[hosted], mcp_servers=[server])
    with pytest.warns(UnguardedToolWarning) as caught:
        hooked = hook_agent(agent)
    [warning] = caught
    assert "'shell' (ShellTool: a hosted shell the model's API runs)" in str(warning.message)
    assert "MCP" not in str(warning.message)  # their calls are hooked (test_openai_agents_mcp.py)
    assert hooked.tools == [hosted]


def test_a_sandbox_agents_capability_tools_are_named_in_the_warning(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    # The SDK adds a SandboxAgent's exec_command to its own clone of the agent at each run, so no
    # guard sees it: the real sandbox deletes the folder past a @shell deny. Before, without a
    # word (no warning at all); now the capability is named as the hosted tools are.
    pipe.register(GUARD)
    victim = tmp_path / "victim"
    victim.mkdir()
    model = ScriptedModel(
        "scripted",
        [
            [function_call("exec_command", {"cmd": f"rm -r {victim}"}, call_id="c1")],
            [assistant_message("done")],
        ],
    )
    agent = SandboxAgent(name="sandboxed", model=model, capabilities=[Shell()])
    config = RunConfig(sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))
    with pytest.warns(UnguardedToolWarning) as caught:
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "tidy up", run_config=config))
    [warning] = caught
    assert "'sandboxed'" in str(warning.message)
    assert "the tools of its sandbox capabilities Shell (exec_command" in str(warning.message)
    assert not victim.exists()
    assert not [s for s in pipe.spans() if s.name.startswith("execute_tool")]


def test_a_renamed_shell_tool_is_named_in_a_warning(pipe: TestPipeline) -> None:
    def execute(request: ShellCommandRequest) -> str:
        return "ran"

    model = ScriptedModel("scripted", [[assistant_message("ok")]])
    agent = Agent(name="ops", model=model, tools=[ShellTool(executor=execute, name="sh")])
    with pytest.warns(UnguardedToolWarning, match="'sh' .*a @shell guard does not match it"):
        _run(pipe, agent)


def test_a_hooked_tool_run_outside_the_hooked_runner_says_no_hook_saw_it(
    pipe: TestPipeline,
) -> None:
    # the SDK's own Runner (as for run_streamed) gives the hooked tools no run to report to: the
    # guard cannot decide, and the call must not look guarded
    pipe.register(GUARD)
    ran: list[str] = []

    @function_tool(name_override="shell")
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "done"

    model = ScriptedModel(
        "scripted",
        [[function_call("shell", {"command": "ls"}, call_id="c1")], [assistant_message("ok")]],
    )
    hooked = hook_agent(Agent(name="ops", model=model, tools=[run_shell]))
    with pytest.warns(UnguardedToolWarning, match="'shell' of a hooked agent ran outside"):
        asyncio.run(Runner.run(hooked, "list"))
    assert ran == ["ls"]
    assert not [s for s in pipe.spans() if s.name.startswith("execute_tool")]
