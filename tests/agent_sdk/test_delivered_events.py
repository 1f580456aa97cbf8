"""Which Claude Code hook events the Claude Agent SDK calls a Python callback for.

``fixtures/delivered_events.json`` is the table (its ``source`` names the SDK and CLI versions):
each run registers a recording callback on every Claude Code hook event in
``ClaudeAgentOptions(hooks=...)`` and, as the witness that the event happened, the same CLI's
command hook on every event in the project's ``.claude/settings.json``. An event whose command
hook ran and whose callback did not is one the SDK does not deliver: a hook of ``hooks_for`` on
it would never run. These tests fail when the SDK starts or stops delivering one, so the table,
:data:`SDK_EVENTS` and ``hooks_for``'s refusal stay true.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent_sdk.test_hooks_for import _sdk
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)

pytestmark = pytest.mark.timeout(180)

TABLE = json.loads((Path(__file__).parent / "fixtures" / "delivered_events.json").read_text())
# every event of the Claude Code hooks reference and of the pinned CLI (the bridge's table)
# (a label ``SessionStart:compact`` is the event with that source)
ALL_EVENTS = sorted(
    {
        label.split(":")[0]
        for key in ("delivered", "not_delivered", "not_triggered")
        for label in TABLE[key]
    }
)
# nothing listens on port 9 of the loopback, and the CLI never runs it
PIPE = "curl -s http://127.0.0.1:9/install.sh | sh"
# a call auto mode sends to its safety check (a plain ``rm -rf`` in the project it allows)
DENIED = [ToolStep("t_pipe", "Bash", {"command": PIPE, "description": "install"})]
# the field that tells a SessionStart (InstructionsLoaded) the callback got from another one
_KIND = {"SessionStart": "source", "InstructionsLoaded": "load_reason"}


def _label(payload: dict[str, Any]) -> str:
    name = str(payload.get("hook_event_name"))
    field = _KIND.get(name)
    return f"{name}:{payload.get(field)}" if field else name


def _record(
    project: Path,
    home: Path,
    steps: list[ToolStep],
    prompts: list[str],
    mode: str,
    **extra: Any,
) -> Any:
    """Run the SDK (``extra``: more ``ClaudeAgentOptions``); what reached a callback, and what
    reached the CLI's command hooks."""
    sdk = _sdk()
    (project / ".claude").mkdir(parents=True)
    (project / "sub").mkdir()
    (project / "CLAUDE.md").write_text("Be brief.\n")
    home.mkdir(parents=True)
    log = project.parent / "cli-hooks.jsonl"
    command = {"type": "command", "command": f"cat >> '{log}'; echo >> '{log}'"}
    settings = {"hooks": {e: [{"hooks": [command]}] for e in ALL_EVENTS if e != "WorktreeCreate"}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    called: set[str] = set()

    async def callback(input_data: Any, tool_use_id: str | None, context: Any) -> Any:
        label = _label(dict(input_data))
        called.add(label)
        (project.parent / f"called-{label}").touch()  # what a later step of the run waits for
        return {}

    # WorktreeCreate's hook output is the worktree's path: hooking it would change what it does
    hooks = {e: [sdk.HookMatcher(hooks=[callback])] for e in ALL_EVENTS if e != "WorktreeCreate"}
    api = MessagesApi(steps)
    with serve_messages_api(api) as url:
        env = {
            "ANTHROPIC_BASE_URL": url,
            **OFFLINE_ENV,
            "HOME": str(home),
        }
        options = sdk.ClaudeAgentOptions(
            cwd=str(project),
            env=env,
            hooks=hooks,
            permission_mode=mode,
            setting_sources=["project"],
            **extra,
        )

        async def stream() -> Any:
            for prompt in prompts:
                yield {"type": "user", "message": {"role": "user", "content": prompt}}

        async def main() -> None:
            try:
                async for _ in sdk.query(prompt=stream(), options=options):
                    pass
            except sdk.ClaudeSDKError:  # a run the CLI ends with an error result (auto mode's)
                pass

        asyncio.run(asyncio.wait_for(main(), 150))
    lines = log.read_text().splitlines() if log.exists() else []
    witnessed = {_label(json.loads(line)) for line in lines if line.strip()}
    return called, witnessed


def wait_for(path: Path) -> str:
    """A shell command that waits (up to 30 s) until ``path`` exists: the CLI's file watcher
    reports a settings change (``ConfigChange``) after the write returned, and a run that ended
    first would never see it."""
    return f"for i in $(seq 300); do [ -e '{path}' ] && exit 0; sleep 0.1; done"


async def _slow_refusal(tool: str, arguments: Any, context: Any) -> Any:
    """The application's ``can_use_tool`` taking longer than the CLI's 6 s before it tells a
    person a permission waits (its ``Notification`` of type ``permission_prompt``), then
    refusing: nothing runs. The wait is the scenario, not a synchronisation: 4 s past the CLI's
    timer leave its hooks (the callback and the witness's command) time to finish before the
    run ends."""
    sdk = _sdk()
    await asyncio.sleep(10)
    return sdk.PermissionResultDeny(message="not now")


def _runs(project: Path) -> dict[str, tuple[list[ToolStep], list[str], str, dict[str, Any]]]:
    local = project / ".claude" / "settings.local.json"
    changed = wait_for(project.parent / "called-ConfigChange")
    tools = [
        ToolStep("t_ok", "Bash", {"command": "echo hi", "description": "echo"}),
        ToolStep("t_fail", "Bash", {"command": "exit 3", "description": "fail"}),
        ToolStep("t_config", "Write", {"file_path": str(local), "content": "{}\n"}),  # ConfigChange
        ToolStep("t_wait", "Bash", {"command": changed, "description": "wait"}),
        ToolStep("t_cd", "Bash", {"command": "cd sub", "description": "cd"}),  # CwdChanged
        ToolStep(
            "t_agent",
            "Agent",
            {"subagent_type": "general-purpose", "description": "ask", "prompt": "say ok"},
        ),
    ]
    touch = [ToolStep("t_touch", "Bash", {"command": "touch x", "description": "touch"})]
    return {
        "tools": (tools, ["do it"], "bypassPermissions", {}),
        # no can_use_tool: the CLI asks for permission (PermissionRequest), nobody answers
        "permission": (touch, ["do it"], "default", {}),
        "compact": ([], ["hello", "/compact"], "bypassPermissions", {}),  # a SessionStart, compact
        # auto mode's safety check runs on Anthropic's side, which the scripted API (any
        # ANTHROPIC_BASE_URL of the application's own) does not pass: the CLI refuses a call
        # the check was to judge (PermissionDenied) and ends the run with an error result
        "denied": (DENIED, ["do it"], "auto", {}),
        # a permission still waiting after 6 s: the CLI notifies (Notification)
        "notification": (touch, ["do it"], "default", {"can_use_tool": _slow_refusal}),
    }


@pytest.mark.parametrize("run", sorted(TABLE["runs"]))
def test_the_sdk_delivers_the_events_the_table_says(tmp_path: Path, run: str) -> None:
    project = tmp_path / "project"
    steps, prompts, mode, extra = _runs(project)[run]
    called, witnessed = _record(project, tmp_path / "home", steps, prompts, mode, **extra)
    expected = TABLE["runs"][run]
    missing = sorted(set(expected["delivered"]) - called)
    assert not missing, f"the SDK no longer calls back for {missing}: update the table"
    for label in expected["not_delivered"]:
        assert label in witnessed, f"the run no longer triggers {label}"
        assert label not in called, f"the SDK now calls back for {label}: update the table"
    # nothing the table calls undelivered reached a callback in any form
    assert not called & set(TABLE["not_delivered"])
    # a callback only for events that happened
    assert called <= witnessed


def test_hooks_for_hooks_the_delivered_events_and_names_the_rest() -> None:
    """``SDK_EVENTS`` is the table's delivered events (but ``MessageDisplay``: a callback per
    batch of displayed lines, which ``install`` does not write either); every other event is
    one ``hooks_for`` warns about (or refuses a guard on)."""
    from otelhooks.integrations.claude_agent_sdk import SDK_EVENTS, UNDELIVERED_EVENTS

    delivered = {label.split(":")[0] for label in TABLE["delivered"]}
    assert set(SDK_EVENTS) == delivered - {"MessageDisplay", "SessionStart"}
    assert set(UNDELIVERED_EVENTS) == set(ALL_EVENTS) - set(SDK_EVENTS)
