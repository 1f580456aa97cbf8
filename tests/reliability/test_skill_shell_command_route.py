"""A skill's inline shell command (Claude Code 2.1.332's ``PreSkillShellCommand``) is judged by
the ``Bash`` guards wherever Claude Code's hooks reach otelhooks: serve's hook route (``install
--http``) and the command form. Before, the route took it for an event it does not know: ``200
{}``, and the command ran whatever the guard denies; an unreadable one under ``--fail-closed`` was
a ``400`` (a non-blocking error), not the deny a ``PreToolUse`` gets; and a command allowed by
the command form left its ``execute_tool`` span open (no ``PostToolUse`` follows it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability._procs import cli_env
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

ROUTE = "/v1/hooks/claude-code"
HOOK_AUTH = {"Authorization": f"Bearer {INGEST}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""
# a guard that asks a person about a push (Claude Code runs no skill command it is asked about)
ASKS = """\
  - id: ask-push
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'git push'; then echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "ask", "permissionDecisionReason": "push?"}}'; fi
"""


def _skill_command(use_id: str, command: str) -> dict[str, Any]:
    """The input Claude Code 2.1.332 gives a ``PreSkillShellCommand`` hook (as it sent it)."""
    return {
        "session_id": "s-skill",
        "hook_event_name": "PreSkillShellCommand",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"{use_id}:preamble-0",
        "command_name": "wipe",
        "command_source": "projectSettings",
        "invoked_by": "claude",
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProc]:
    tmp = tmp_path_factory.mktemp("skill-route")
    (tmp / "policy.yaml").write_text(POLICY)
    proc = ServeProc(tmp, "--hooks", str(tmp / "policy.yaml"), "--fail-closed")
    try:
        yield proc
    finally:
        proc.stop()


def _decision(response: httpx.Response) -> str | None:
    assert response.status_code == 200, response.text
    output = response.json().get("hookSpecificOutput") or {}
    decision = output.get("permissionDecision")
    return str(decision) if decision is not None else None


def test_serve_denies_a_skills_inline_rm_rf_and_lets_another_command_run(
    server: ServeProc,
) -> None:
    url = server.url + ROUTE
    denied = httpx.post(url, json=_skill_command("c1", "rm -rf victim"), headers=HOOK_AUTH)
    assert _decision(denied) == "deny"
    assert "rm -rf is not allowed here" in denied.text
    allowed = httpx.post(url, json=_skill_command("c2", "echo hello"), headers=HOOK_AUTH)
    assert _decision(allowed) is None


def test_an_unreadable_skill_command_is_denied_under_fail_closed(server: ServeProc) -> None:
    body = b'{"hook_event_name": "PreSkillShellCommand", "tool_input": {"command": "rm -rf /"'
    response = httpx.post(server.url + ROUTE, content=body, headers=HOOK_AUTH)
    assert _decision(response) == "deny"
    assert "fail-closed" in response.text


def test_the_command_forms_span_of_an_allowed_skill_command_ends_once_answered(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY + ASKS)
    traces = tmp_path / "traces.jsonl"
    answers = []
    calls = (("c1", "rm -rf victim"), ("c2", "echo hello"), ("c3", "git push --force"))
    for use_id, command in calls:
        done = subprocess.run(
            [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "policy.yaml",
             "--traces-out", str(traces), "--state", str(tmp_path / "state.sqlite3")],
            input=json.dumps(_skill_command(use_id, command)), capture_output=True, text=True,
            timeout=60, cwd=tmp_path, env=cli_env(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        answers.append(done.stdout)
    assert '"permissionDecision": "deny"' in answers[0]
    assert "permissionDecision" not in answers[1]
    spans = [s for line in traces.read_text().splitlines() for s in _spans(json.loads(line))]
    outcomes = {
        _attr(s, "gen_ai.tool.call.id"): _attr(s, "otelhooks.tool.outcome")
        for s in spans
        if s["name"] == "execute_tool Bash"
    }
    assert '"permissionDecision": "ask"' in answers[2]
    assert outcomes == {
        "c1:preamble-0": "denied",
        "c2:preamble-0": "allowed",
        "c3:preamble-0": "not_run",
    }


def _spans(export: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        span
        for resource in export.get("resourceSpans", [])
        for scope in resource.get("scopeSpans", [])
        for span in scope.get("spans", [])
    ]


def _attr(span: dict[str, Any], key: str) -> Any:
    for item in span.get("attributes", []):
        if item["key"] == key:
            return next(iter(item["value"].values()))
    return None


def test_validate_accepts_the_skill_command_entry_install_writes(tmp_path: Path) -> None:
    """What ``claude-code install`` writes passes ``validate --strict`` (before: ``unknown event
    'PreSkillShellCommand'``, exit 1); a user's own handler there is a warning (Claude Code runs
    it, otelhooks does not), not a hook run on every ``PreToolUse``."""
    env = cli_env(HOME=str(tmp_path / "home"))
    env.pop("CLAUDE_CONFIG_DIR", None)

    def otelhooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "otelhooks", *args],
            capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
        )  # fmt: skip

    assert otelhooks("claude-code", "install").returncode == 0
    settings = tmp_path / ".claude" / "settings.local.json"
    checked = otelhooks("validate", "--strict", str(settings))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    data = json.loads(settings.read_text())
    own = {"type": "command", "command": "./skill-guard.sh"}
    data["hooks"]["PreSkillShellCommand"][0]["hooks"].append(own)
    settings.write_text(json.dumps(data, indent=2))
    warned = otelhooks("validate", "--strict", str(settings))
    assert warned.returncode != 0
    assert "skill's inline shell command; otelhooks skips it" in warned.stdout + warned.stderr


def test_a_shell_guard_denies_a_powershell_skill_command(tmp_path: Path) -> None:
    """A skill whose inline command runs in PowerShell (``shell: powershell``; Claude Code's
    ``PreSkillShellCommand`` names ``tool_name: "PowerShell"``) meets a ``@shell`` guard, as
    Claude Code's PowerShell tool does (before, ``@shell`` named ``Bash`` alone: allowed)."""
    (tmp_path / "policy.yaml").write_text(
        "hooks:\n  - id: no-remove\n    type: PreToolUse\n    matcher: '@shell'\n"
        "    command: >-\n      if grep -q 'Remove-Item'; then echo 'no removal' >&2; exit 2; fi\n"
    )
    event = {**_skill_command("c1", "Remove-Item -Recurse victim"), "tool_name": "PowerShell"}
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "policy.yaml",
         "--state", str(tmp_path / "state.sqlite3")],
        input=json.dumps(event), capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env=cli_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"permissionDecision": "deny"' in done.stdout
    assert "no removal" in done.stdout
