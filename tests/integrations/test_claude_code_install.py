"""``otelhooks claude-code install`` / ``uninstall`` on real settings files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks._cli import _claude_code_install_cmd as cli
from otelhooks._starter import starter_hooks_yaml
from otelhooks.integrations.claude_code import INSTALLED_EVENTS as EVENTS
from otelhooks.integrations.claude_code import _install, install, is_ours, uninstall
from otelhooks.integrations.claude_code._install import ASYNC_EVENTS, MARK, MARK_HEADER
from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS
from otelhooks.testing import run_cli

THEIRS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}],
        "Stop": [{"hooks": [{"type": "http", "url": "https://example.test/stop"}]}],
    },
}


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # the http form warns when the token Claude Code must send is not set (its own test)
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "t")
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(THEIRS))
    return path


def _ours(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_ours(handler):
                    out.setdefault(event, []).append(handler)
    return out


def test_install_http_writes_one_hook_per_event_with_the_token_from_the_environment(
    settings: Path,
) -> None:
    install(settings, http="http://127.0.0.1:4318")
    data = json.loads(settings.read_text())
    ours = _ours(data)
    assert sorted(ours) == sorted(EVENTS)
    handler = ours["PreToolUse"][0]
    assert handler["url"] == "http://127.0.0.1:4318/v1/hooks/claude-code"
    assert handler["headers"]["Authorization"] == "Bearer $OTELHOOKS_INGEST_TOKEN"
    assert handler["headers"][MARK_HEADER] == "1"  # how uninstall knows it is ours
    assert handler["allowedEnvVars"] == ["OTELHOOKS_INGEST_TOKEN"]


def test_install_is_idempotent_and_never_touches_other_hooks(settings: Path) -> None:
    install(settings, http="http://127.0.0.1:4318")
    once = settings.read_text()
    change = install(settings, http="http://127.0.0.1:4318")
    assert settings.read_text() == once
    assert not change.changed
    data = json.loads(once)
    assert data["permissions"] == THEIRS["permissions"]
    assert data["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]
    assert data["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]


def test_switching_forms_replaces_ours_instead_of_adding(settings: Path) -> None:
    install(settings, http="http://127.0.0.1:4318")
    install(settings)  # now the command form
    ours = _ours(json.loads(settings.read_text()))
    assert all(len(handlers) == 1 for handlers in ours.values())
    assert ours["PreToolUse"][0]["type"] == "command"


def test_command_form_runs_only_safe_observers_async(settings: Path) -> None:
    install(settings, hooks_file="cfg/hooks.yaml")
    ours = _ours(json.loads(settings.read_text()))
    async_events = {e for e, hs in ours.items() if hs[0].get("async")}
    assert {"Notification", "PostCompact", "FileChanged"} <= async_events
    # Claude Code does not wait for an async hook: an event a hook can answer must be sync
    assert not ANSWERING_EVENTS & async_events
    ordered = {"PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert not ordered & async_events
    command = ours["PreToolUse"][0]["command"]
    assert command.endswith(
        "/otelhooks/integrations/claude_code/hook_client.py --hooks cfg/hooks.yaml "
        f"--hook-timeout 30 {MARK}"  # the entry's timeout, told to the bridge
    )


def test_install_warns_that_guards_fail_open(settings: Path) -> None:
    http = install(settings, http="http://127.0.0.1:4318")
    assert any("fail open" in w and "--fail-closed" in w for w in http.warnings)
    assert install(settings, http="http://127.0.0.1:4318", fail_closed=True).warnings == []
    closed = install(settings, fail_closed=True)
    assert closed.warnings == []
    assert "--fail-closed" in _ours(json.loads(settings.read_text()))["PreToolUse"][0]["command"]


@pytest.mark.parametrize("http", [None, "http://127.0.0.1:4318"], ids=["command", "http"])
def test_fail_closed_guards_ask_claude_code_to_block_when_the_hook_cannot_answer(
    settings: Path, http: str | None
) -> None:
    # Claude Code's own default for a hook that cannot start, times out or exits with another
    # code than 0 or 2 is to run the tool; onFailure: block (its handler schema, CLI 2.1.332)
    # turns that into a block, on every event whose hook can stop or change what goes through
    # and where Claude Code honours it (not Stop, SubagentStop, TaskCompleted, TeammateIdle)
    change = install(settings, http=http, fail_closed=True)
    assert change.warnings == []
    ours = _ours(json.loads(settings.read_text()))
    blocking = {e for e, hs in ours.items() if hs[0].get("onFailure") == "block"}
    assert blocking == {
        *("PreToolUse", "PreSkillShellCommand", "UserPromptSubmit", "UserPromptExpansion"),
        *("PostToolUse", "PostToolUseFailure", "PostToolBatch"),
        *("ConfigChange", "PreCompact", "TaskCreated", "Elicitation", "ElicitationResult"),
        "PreModelSwitch",
    }
    assert not blocking & {"Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"}
    assert not blocking & ASYNC_EVENTS  # Claude Code ignores it on an async hook
    assert all(h.get("onFailure") in (None, "block") for hs in ours.values() for h in hs)
    assert install(settings, http=http, fail_closed=True).changed is False  # still ours
    install(settings, http=http)  # fail open again: no entry keeps onFailure
    ours = _ours(json.loads(settings.read_text()))
    assert not [h for hs in ours.values() for h in hs if "onFailure" in h]
    assert sorted(uninstall(settings).removed) == sorted(EVENTS)


def test_uninstall_removes_exactly_ours(settings: Path) -> None:
    install(settings, http="http://127.0.0.1:4318")
    change = uninstall(settings)
    assert sorted(change.removed) == sorted(EVENTS)
    assert json.loads(settings.read_text()) == THEIRS
    assert uninstall(settings).removed == []


def test_cli_install_user_writes_home_settings_and_says_how_to_see_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run_cli("claude-code", "install", "--user", "--http", "http://127.0.0.1:9") == 0
    out = capsys.readouterr()
    written = tmp_path / ".claude" / "settings.json"
    assert f"{written}: created" in out.out
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9" in out.out
    assert "fail open" in out.err
    assert _ours(json.loads(written.read_text()))
    assert run_cli("claude-code", "uninstall", "--user") == 0
    assert not written.exists()  # install made it; uninstall leaves no file


ODD = """{
    "model": "claude",
    "cleanupPeriodDays": 1e400,
    "env": {"RATIO": 1.50, "BIG": 12345678901234567890123},
    "hooks": {
        "Stop": [ {"hooks": [ {"type": "command", "command": "say done"} ]} ]
    }
}
"""


# -- issue 31: a fresh project ------------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_install_on_a_fresh_project_writes_a_starter_hook_file_that_validates(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    starter = fresh / ".claude" / "otelhooks.yaml"
    assert starter.read_text() == starter_hooks_yaml(".claude/otelhooks.yaml")
    assert f"{starter}: created" in capsys.readouterr().out
    assert run_cli("validate", str(starter)) == 0


def test_the_command_form_keeps_machine_paths_out_of_the_shared_settings(fresh: Path) -> None:
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    assert not (fresh / ".claude" / "settings.json").exists()
    local = json.loads((fresh / ".claude" / "settings.local.json").read_text())
    assert sys.executable in json.dumps(local)  # machine-specific: the local file only


def test_an_older_install_in_the_shared_file_moves_to_the_local_file(fresh: Path) -> None:
    shared = fresh / ".claude" / "settings.json"
    shared.parent.mkdir()
    legacy = f"{sys.executable} -I -S /x/{_install.CLIENT_FILE} --hooks .claude/otelhooks.yaml"
    old = {"model": "m", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": legacy}]}]}}
    shared.write_text(json.dumps(old))
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    assert json.loads(shared.read_text()) == {"model": "m"}


def test_switching_forms_into_a_file_claude_code_ignores_keeps_the_guard_where_it_runs(
    fresh: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the http form goes to the shared file, which Claude Code ignores whole ("model": 5):
    # install refuses it before it takes ours out of the local file, where the guard runs
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "t")
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    local = fresh / ".claude" / "settings.local.json"
    shared = fresh / ".claude" / "settings.json"
    shared.write_text('{"model": 5}\n')
    kept = local.read_bytes()
    capsys.readouterr()
    url = "http://127.0.0.1:4319"
    assert run_cli("claude-code", "install", "--project", str(fresh), "--http", url) == 1
    err = capsys.readouterr().err
    assert f'{shared}: Claude Code ignores this whole file, hooks included, because "model"' in err
    assert (local.read_bytes(), shared.read_text()) == (kept, '{"model": 5}\n')


def test_install_records_traces_where_tree_reads_them_by_default(fresh: Path) -> None:
    assert cli.DEFAULT_TRACES == _install.DEFAULT_TRACES
    assert cli.DEFAULT_HOOKS_FILE == _install.DEFAULT_HOOKS_FILE
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    local = json.loads((fresh / ".claude" / "settings.local.json").read_text())
    command = local["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert f"--traces-out {_install.DEFAULT_TRACES}" in command.replace("'", "")
    assert (fresh.parent / "home" / ".otelhooks").is_dir()


def test_messages_say_what_happened_to_each_file(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = fresh / ".claude" / "settings.local.json"
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    assert f"{local}: created" in capsys.readouterr().out
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    assert f"{local}: unchanged" in capsys.readouterr().out
    assert run_cli("claude-code", "install", "--project", str(fresh), "--fail-closed") == 0
    out = capsys.readouterr().out
    assert f"{local}: updated" in out
    assert "unchanged" not in out


def test_uninstall_leaves_no_file_where_there_was_none(fresh: Path) -> None:
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    assert run_cli("claude-code", "uninstall", "--project", str(fresh)) == 0
    assert sorted(p.name for p in (fresh / ".claude").iterdir()) == []


def test_uninstall_gives_back_the_shared_files_bytes_and_mode(fresh: Path) -> None:
    shared = fresh / ".claude" / "settings.json"
    shared.parent.mkdir()
    shared.write_text(ODD)
    shared.chmod(0o644)
    args = ["--project", str(fresh), "--http", "http://127.0.0.1:4318"]
    assert run_cli("claude-code", "install", *args) == 0
    assert shared.read_text() != ODD
    assert run_cli("claude-code", "uninstall", "--project", str(fresh)) == 0
    assert shared.read_text() == ODD
    assert shared.stat().st_mode & 0o777 == 0o644


def test_uninstall_keeps_a_starter_file_the_user_edited(fresh: Path) -> None:
    assert run_cli("claude-code", "install", "--project", str(fresh)) == 0
    starter = fresh / ".claude" / "otelhooks.yaml"
    starter.write_text(starter.read_text() + "# mine\n")
    assert run_cli("claude-code", "uninstall", "--project", str(fresh)) == 0
    assert starter.exists()


def test_tree_without_traces_says_where_it_looked_and_what_records_them(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("claude-code", "tree") == 1
    err = capsys.readouterr().err
    assert "claude-code-traces.jsonl" in err
    assert "otelhooks claude-code install" in err


def test_a_handler_the_user_added_to_our_group_stays_through_reinstall_and_uninstall(
    settings: Path,
) -> None:
    install(settings, http="http://127.0.0.1:4318")
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][-1]["hooks"].append({"type": "command", "command": "mine"})
    settings.write_text(json.dumps(data, indent=2))
    install(settings, http="http://127.0.0.1:4318")
    uninstall(settings)
    groups = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert groups[-1]["hooks"] == [{"type": "command", "command": "mine"}]
    assert not _ours(json.loads(settings.read_text()))


def test_file_changed_gets_its_watch_list_as_matcher(tmp_path: Path) -> None:
    # Claude Code's FileChanged matcher is the list of file names it watches: "*" or none
    # watches nothing and the hook never fires (hooks reference, "FileChanged")
    settings = tmp_path / ".claude" / "settings.json"
    install(settings, hooks_file="otelhooks.yaml")
    (group,) = json.loads(settings.read_text())["hooks"]["FileChanged"]
    assert group["matcher"] == ".envrc|.env"


def test_file_changed_watches_the_files_the_hooks_file_names(tmp_path: Path) -> None:
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        "  - id: lockfile\n"
        "    type: file_changed\n"
        "    matcher: package-lock.json|/srv/app/.env\n"
        "    command: 'true'\n"
        "  - id: regex-only\n"
        "    type: file_changed\n"
        "    matcher: '^.*\\.py$'\n"
        "    command: 'true'\n"
    )
    settings = tmp_path / ".claude" / "settings.json"
    install(settings, hooks_file="otelhooks.yaml")
    (group,) = json.loads(settings.read_text())["hooks"]["FileChanged"]
    assert group["matcher"] == "package-lock.json|.env"


def test_a_hooks_file_that_hangs_as_it_loads_does_not_hang_install(settings: Path) -> None:
    """Install reads the hooks file once, for its approvals and its watch list, and loading it
    imports its script guards: one that hangs as it is imported is given 5 s, then install goes
    on with Claude Code's default timeouts and says why (before, it hung with the guard). Run
    as its own process: the hung import holds the script loader's lock while the process lives."""
    project = settings.parent.parent
    (project / "policy.py").write_text("import time\ntime.sleep(3600)\n")
    (project / "hooks.yaml").write_text(
        "hooks:\n  - {id: policy, type: PreToolUse, matcher: Bash, script: policy.py:guard}\n"
    )
    command = [sys.executable, "-m", "otelhooks", "claude-code", "install", "--project"]
    done = subprocess.run(
        [*command, str(project), "--hooks-file", "hooks.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "did not load within 5 s" in done.stdout + done.stderr
