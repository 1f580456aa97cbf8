"""Gemini CLI settings that turn hooks off: ``otelhooks gemini install`` says so, and the real
Gemini CLI 0.61 shows why it must (the installed guard never runs and ``rm -r`` deletes).

``hooksConfig.enabled: false`` in the project's or the user's settings turns every hook off
(the project's value, when it sets one, wins); ``otelhooks`` (the name install gives its
handlers) in any file's ``hooksConfig.disabled`` turns ours off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    GEMINI,
    gemini_settings,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(150)

GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "echo 'deleting is not allowed here' >&2; exit 2"
"""
OFF = {"hooksConfig": {"enabled": False}}
ON = {"hooksConfig": {"enabled": True}}
# (the user's settings, the project's, the file the warning names: "~" or "project" or None)
CASES: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]] = {
    "user-enabled-false": (OFF, None, "~"),
    "project-enabled-false": (None, OFF, "project"),
    "project-enabled-true-over-user-false": (OFF, ON, None),
    "ours-named-in-the-users-disabled-list": (
        {"hooksConfig": {"disabled": ["otelhooks"]}},
        {"hooksConfig": {"disabled": []}},
        "~",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_gemini_install_warns_when_no_installed_hook_will_run(
    case: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, own, named = CASES[case]
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    user_file = gemini_settings(home, user)
    project_file = project / ".gemini" / "settings.json"
    if own is not None:
        project_file.parent.mkdir(parents=True)
        project_file.write_text(json.dumps(own))
    (project / "hooks.yaml").write_text(GUARD)

    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    off = [w for w in change.warnings if w.startswith("no installed hook will run")]
    if named is None:
        assert off == []
    else:
        (warning,) = off
        assert str(user_file if named == "~" else project_file) in warning

    need_cli(GEMINI)
    env = {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",  # the bridge daemon leaves soon after the test
    }
    run = run_gemini(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists() is (named is None)
