"""Gemini CLI settings with comments, read by ``otelhooks gemini install`` as the real CLI does.

Gemini CLI 0.61 reads each settings file as JSON with ``//`` and ``/* */`` comments. The user's
file holding a comment and ``hooksConfig.enabled: false`` turns every hook off (the real CLI
deletes ``victim`` past the installed guard); install read that file with Python's JSON alone,
found it unparsable, took it for no file and said nothing. Now it warns, naming the file, and
names a neighbour hook of the tool guard's event in such a file too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import DENY_SHELL_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    GEMINI,
    gemini_settings,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


def _commented(settings: dict[str, object], form: str) -> str:
    text = json.dumps(settings, indent=2)
    if form == "line-comments-crlf":
        lines = ["// the team's Gemini settings", *text.splitlines()]
        lines.insert(2, '  // "hooksConfig" is ours: "quiet runs" // not a string')
        return "\r\n".join(lines) + "\r\n"
    return f'/* the team\'s "settings" */\n{text[:1]} /* hooks off */ {text[1:]}\n'


@pytest.mark.parametrize("form", ["line-comments-crlf", "block-comments"])
def test_install_warns_of_hooks_turned_off_in_a_commented_user_file(
    form: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(home / "no-system-settings.json"))
    user = gemini_settings(home)
    settings = json.loads(user.read_text())
    user.write_text(_commented({**settings, "hooksConfig": {"enabled": False}}, form))
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)

    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    (off,) = [w for w in change.warnings if w.startswith("no installed hook will run")]
    assert str(user) in off

    need_cli(GEMINI)
    env = {"OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3")}
    run = run_gemini(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists(), skip_reason(run)  # what the warning says


def test_install_names_a_neighbour_hook_in_a_commented_user_file(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(home / "no-system-settings.json"))
    user = gemini_settings(home)
    rewriter = {"name": "rewriter", "type": "command", "command": "rewrite-args"}
    hooks = {"BeforeTool": [{"matcher": "*", "hooks": [rewriter]}]}
    settings = {**json.loads(user.read_text()), "hooks": hooks}
    user.write_text(_commented(settings, "block-comments"))
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)

    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    (note,) = [w for w in change.warnings if "runs other BeforeTool hooks" in w]
    assert f"`rewriter` ({user})" in note


def test_install_names_a_variable_a_commented_user_file_has_gemini_remove(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(home / "no-system-settings.json"))
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "ingest-token")
    user = gemini_settings(home)
    settings = json.loads(user.read_text())
    settings["security"]["environmentVariableRedaction"] = {"enabled": True}
    user.write_text(_commented(settings, "line-comments-crlf"))
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)

    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    (note,) = [w for w in change.warnings if w.startswith("Gemini CLI removes")]
    assert "OTELHOOKS_INGEST_TOKEN" in note
