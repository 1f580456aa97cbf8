"""``otelhooks claude-code install`` / ``uninstall`` on real settings files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks._cli import main
from otelhooks.integrations.claude_code._install import EVENTS, install, is_ours, uninstall

THEIRS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}],
        "Stop": [{"hooks": [{"type": "http", "url": "https://example.test/stop"}]}],
    },
}


@pytest.fixture
def settings(tmp_path: Path) -> Path:
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
    assert handler["headers"] == {"Authorization": "Bearer $OTELHOOKS_INGEST_TOKEN"}
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
    assert {"Notification", "PreCompact", "PostCompact", "SubagentStart"} <= async_events
    deciding_or_ordered = {"PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert not deciding_or_ordered & async_events
    command = ours["PreToolUse"][0]["command"]
    assert command.endswith(
        "/otelhooks/integrations/claude_code/hook_client.py --hooks cfg/hooks.yaml"
    )


def test_install_warns_that_guards_fail_open(settings: Path) -> None:
    http = install(settings, http="http://127.0.0.1:4318")
    assert any("fail open" in w for w in http.warnings)
    closed = install(settings, fail_closed=True)
    assert closed.warnings == []
    assert "--fail-closed" in _ours(json.loads(settings.read_text()))["PreToolUse"][0]["command"]


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
    assert main(["claude-code", "install", "--user", "--http", "http://127.0.0.1:9"]) == 0
    out = capsys.readouterr()
    written = tmp_path / ".claude" / "settings.json"
    assert str(written) in out.out
    assert "PreToolUse" in out.out
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9" in out.out
    assert "fail open" in out.err
    assert _ours(json.loads(written.read_text()))
    assert main(["claude-code", "uninstall", "--user"]) == 0
    assert not _ours(json.loads(written.read_text()))
