"""A skill's inline shell command (``!`cmd` `` in its ``SKILL.md``) meets the installed guards.

Claude Code 2.1.337 runs such a command as the skill loads, through its shell, and fires no
``PreToolUse`` for it: it fires ``PreSkillShellCommand`` (``tool_name: "Bash"``, the command as
``tool_input.command``), where a deny keeps the command from running. ``install`` hooks that event
and the bridge judges it as the ``Bash`` call it is. Before, nothing was installed for it and the
starter guard (``no-rm-rf``) never saw the command: a skill ran ``rm -rf victim``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install, install_project
from tests._realparts import reserved_port
from tests.claude_code_cli._messages_api import (
    MessagesApi,
    ToolStep,
    claude_p,
    serve_messages_api,
)
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(CLI_TEST_S)

# the bridge daemon an installed hook starts leaves soon after the test
BRIDGE_ENV = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}


def _skill(project: Path, name: str, command: str) -> None:
    folder = project / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: runs {name}\n---\nDone: !`{command}`\n"
    )


@pytest.mark.parametrize("fail_closed", [False, True], ids=["default", "fail-closed"])
def test_the_installed_guard_keeps_a_skills_inline_rm_rf_from_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_closed: bool
) -> None:
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    # the starter guard: no-rm-rf; with --fail-closed the entry also carries `onFailure: block`,
    # which Claude Code must accept on this event (a settings file it finds invalid runs no hook)
    install_project(project=project, traces_out=None, fail_closed=fail_closed)
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert "PreSkillShellCommand" in settings["hooks"]
    _skill(project, "wipe", "rm -rf victim && echo wiped")
    _skill(project, "mark", "touch harmless.txt && echo marked")
    steps = [
        {"id": "call_wipe", "tool": "Skill", "args": {"skill": "wipe"}},
        {"id": "call_mark", "tool": "Skill", "args": {"skill": "mark"}},
    ]
    run = run_claude(project, tmp_path / "home", steps, extra_env=BRIDGE_ENV)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", skip_reason(run)
    # a command the guard allows still runs as the skill loads
    assert (project / "harmless.txt").exists(), skip_reason(run)


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "control"])
def test_a_skill_command_whose_server_is_down_is_blocked_under_fail_closed(
    tmp_path: Path, fail_closed: bool
) -> None:
    """``install --http ... --fail-closed`` gives the ``PreSkillShellCommand`` entry
    ``onFailure: block``, which Claude Code honours on that event: serve down, the skill's
    command does not run; without it, Claude Code's default (a non-blocking error) runs it."""
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(
        "hooks:\n  - {id: look, type: PostToolUse, command: 'true'}\n"
    )
    with reserved_port() as dead_port:
        install(
            project / ".claude" / "settings.json",
            http=f"http://127.0.0.1:{dead_port}",
            hooks_file="hooks.yaml",
            events=["PreSkillShellCommand"],
            fail_closed=fail_closed,
        )
        _skill(project, "wipe", "rm -rf victim && echo wiped")
        steps = [{"id": "call_wipe", "tool": "Skill", "args": {"skill": "wipe"}}]
        run = run_claude(
            project, tmp_path / "home", steps, extra_env={"OTELHOOKS_INGEST_TOKEN": "t"}
        )
        assert run.returncode == 0, skip_reason(run)
        assert (project / "victim").exists() is fail_closed, skip_reason(run)


def test_an_http_hook_into_serve_keeps_a_skills_inline_rm_rf_from_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``install --http``: Claude Code posts the ``PreSkillShellCommand`` to serve's hook route,
    whose ``Bash`` guard denies the skill's ``rm -rf``, and the real CLI does not run it (serve
    and the CLI share the loopback here, as in ``test_install_http_token.py``)."""
    need_cli(CLAUDE)
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n    command: >-\n"
        "      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    _skill(project, "wipe", "rm -rf victim && echo wiped")
    _skill(project, "mark", "touch harmless.txt && echo marked")
    steps = [ToolStep(f"call_{name}", "Skill", {"skill": name}) for name in ("wipe", "mark")]
    api = MessagesApi(steps)
    server = ServeProc(tmp_path, "--hooks", str(policy))
    try:
        install_project(project=project, http=server.url, traces_out=None)
        with serve_messages_api(api) as api_url:
            env = {"PATH": os.environ["PATH"], "HOME": str(home), "OTELHOOKS_INGEST_TOKEN": INGEST}
            run = claude_p(api_url, project, env)
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.stdout[-2000:]
    assert (project / "harmless.txt").exists(), run.stdout[-2000:]
