"""A skill's inline shell command in a Claude Agent SDK app meets the guards of ``hooks_for``.

The CLI the SDK bundles (2.1.337) runs ``!`cmd` `` of a project skill's ``SKILL.md`` as the skill
loads, with no ``PreToolUse``: only ``PreSkillShellCommand`` (``tool_name: "Bash"``). The SDK's
``HookEvent`` does not name that event, but the SDK passes every hook name of
``ClaudeAgentOptions(hooks=...)`` to its CLI, which calls the callback and honours its deny.
Before, ``hooks_for`` hooked no such event: the scripted model loaded a skill whose command was
``rm -rf victim`` and the folder was gone, the ``@shell`` guard never asked.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from tests.agent_sdk.test_hooks_for import GUARD, _sdk
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)

pytestmark = pytest.mark.timeout(120)


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "victim" / "keep.txt").write_text("precious")
    for name, command in (("wipe", "rm -rf victim && echo wiped"), ("mark", "touch marked.txt")):
        folder = root / ".claude" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: runs {name}\n---\nDone: !`{command}`\n"
        )
    return root


def _run(project: Path, home: Path, url: str, hooks: Any, prompt: str) -> None:
    sdk = _sdk()
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "ANTHROPIC_BASE_URL": url,
        **OFFLINE_ENV,
        "HOME": str(home),
    }
    options = sdk.ClaudeAgentOptions(
        cwd=str(project), env=env, hooks=hooks, permission_mode="bypassPermissions"
    )

    async def stream() -> Any:  # a stream, as test_hooks_for's runs
        yield {"type": "user", "message": {"role": "user", "content": prompt}}

    async def main() -> None:
        async for _ in sdk.query(prompt=stream(), options=options):
            pass

    asyncio.run(asyncio.wait_for(main(), 90))


def _skills_run(
    tmp_path: Path, guarded: bool, prompt: str = "clean up", **options: Any
) -> tuple[Path, MessagesApi, InMemorySpanExporter]:
    """The scripted model loads the skills ``wipe`` then ``mark`` (a ``Skill`` call each)."""
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    _sdk()
    project = _project(tmp_path)
    memory = InMemorySpanExporter()
    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, span_exporters=[memory])
    api = MessagesApi([ToolStep(f"call_{n}", "Skill", {"skill": n}) for n in ("wipe", "mark")])
    try:
        with serve_messages_api(api) as url:
            if guarded:
                with hooks_for(oh, state=tmp_path / "s.sqlite3", **options) as hooks:
                    _run(project, tmp_path / "home", url, hooks, prompt)
            else:
                _run(project, tmp_path / "home", url, None, prompt)
    finally:
        oh.shutdown()
    return project, api, memory


@pytest.mark.parametrize("prompt", ["clean up", "/wipe"], ids=["model", "slash-command"])
def test_without_hooks_a_skills_inline_rm_rf_runs(tmp_path: Path, prompt: str) -> None:
    project, _, _ = _skills_run(tmp_path, guarded=False, prompt=prompt)
    assert not (project / "victim").exists()  # the attack is real: the CLI ran the command


def test_hooks_for_keeps_a_slash_commands_inline_rm_rf_from_running(tmp_path: Path) -> None:
    """The application's user types ``/wipe``: the CLI loads the skill itself, no ``Skill``
    call, the same event."""
    project, _, memory = _skills_run(tmp_path, guarded=True, prompt="/wipe")
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    tools = [s for s in memory.get_finished_spans() if s.name == "execute_tool Bash"]
    assert "denied" in [(s.attributes or {}).get("otelhooks.tool.outcome") for s in tools]


def test_hooks_for_keeps_a_skills_inline_rm_rf_from_running(tmp_path: Path) -> None:
    project, api, memory = _skills_run(tmp_path, guarded=True)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    # a command the guard allows still runs as its skill loads
    assert (project / "marked.txt").exists()
    sent = json.dumps(api.requests[-1].get("messages"))
    assert "no deleting" in sent  # the model is told why the skill's command did not run
    tools = [s for s in memory.get_finished_spans() if s.name == "execute_tool Bash"]
    outcomes = sorted(str((s.attributes or {}).get("otelhooks.tool.outcome")) for s in tools)
    assert outcomes == ["allowed", "denied"]


def test_a_skill_command_answered_after_close_is_denied(tmp_path: Path) -> None:
    """A callback that cannot judge the command (here: ``hooks_for`` already closed) denies
    it in the event's own name, as it denies a ``PreToolUse``."""
    _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    oh = otelhooks.configure(hooks=GUARD, otlp=False, set_global=False, structured_logging=False)
    try:
        hooks = hooks_for(oh, state=tmp_path / "s.sqlite3")
        [matcher] = hooks["PreSkillShellCommand"]
        [callback] = matcher.hooks
        hooks.close()
        event: dict[str, Any] = {
            "session_id": "s-1",
            "hook_event_name": "PreSkillShellCommand",
            "tool_name": "Bash",
            "tool_input": {"command": "touch fine.txt"},
        }
        answer = asyncio.run(callback(event, "call_mark:preamble-0", None))
    finally:
        oh.shutdown()
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreSkillShellCommand"
    assert specific["permissionDecision"] == "deny"


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "default"])
def test_a_skill_command_the_bridge_fails_on_is_denied_under_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_closed: bool
) -> None:
    """A fault of the bridge's own: under ``fail_closed=True`` the real CLI is told to deny the
    skill's command; by default the callback raises, which the CLI shows and then runs it."""
    from otelhooks.integrations.coding_agents import CodingAgentBridge

    real = CodingAgentBridge.handle

    def broken(self: Any, payload: Any, **kwargs: Any) -> Any:
        # only a Bash call fails: the prompt and the Skill calls are judged, the skills load
        if payload.get("hook_event_name") == "PreToolUse" and payload.get("tool_name") == "Bash":
            raise RuntimeError("a bug of the bridge")
        return real(self, payload, **kwargs)

    monkeypatch.setattr(CodingAgentBridge, "handle", broken)
    project, api, _ = _skills_run(tmp_path, guarded=True, fail_closed=fail_closed)
    assert (project / "victim").exists() is fail_closed
    assert (project / "marked.txt").exists() is not fail_closed
    if fail_closed:
        assert "could not check this tool call (fail-closed)" in json.dumps(api.requests[-1])
