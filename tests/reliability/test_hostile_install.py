"""``otelhooks claude-code install`` against hostile settings files (issue 34): a user's own
otelhooks entry, a symlinked file, numbers Python cannot carry, text that cannot be round-tripped,
and edits racing the installer. Real files, the real command line."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install, is_ours, uninstall
from otelhooks.testing import run_cli


def _ours(data: dict[str, object]) -> bool:
    hooks = data.get("hooks")
    return isinstance(hooks, dict) and any(
        is_ours(h) for groups in hooks.values() for g in groups for h in g["hooks"]
    )


TEAM_ENTRY = "otelhooks claude-code --hooks .claude/team-policy.yaml --fail-closed"


def test_a_users_own_otelhooks_entry_is_never_ours(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    team = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": TEAM_ENTRY}]}]}}
    settings.write_text(json.dumps(team, indent=2))
    install(settings)
    groups = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert groups[0] == team["hooks"]["PreToolUse"][0]  # kept, not replaced by the default
    uninstall(settings)
    assert json.loads(settings.read_text()) == team  # kept, not deleted


def test_entries_an_older_version_wrote_are_recognised_as_ours() -> None:
    legacy_command = "/usr/bin/python3 -I -S '/opt/x/otelhooks/integrations/claude_code/hook_client.py' --hooks .claude/otelhooks.yaml --fail-closed"  # noqa: E501
    assert is_ours({"type": "command", "command": legacy_command, "timeout": 30})
    legacy_http = {
        "type": "http",
        "url": "http://127.0.0.1:4318/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer $OTELHOOKS_INGEST_TOKEN"},
        "allowedEnvVars": ["OTELHOOKS_INGEST_TOKEN"],
        "timeout": 10,
    }
    assert is_ours(legacy_http)
    # the same url with the user's own timeout is theirs
    assert not is_ours({**legacy_http, "timeout": 5})
    assert not is_ours({"type": "command", "command": TEAM_ENTRY})


def test_install_writes_through_a_symlinked_settings_file(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "x"}\n')
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    install(link, http="http://127.0.0.1:4318")
    assert link.is_symlink()
    assert _ours(json.loads(dotfiles.read_text()))
    uninstall(link)
    assert link.is_symlink()
    assert dotfiles.read_text() == '{"model": "x"}\n'


ODD = """{
    "model": "claude",
    "cleanupPeriodDays": 1e400,
    "env": {"RATIO": 1.50, "BIG": 12345678901234567890123},
    "hooks": {
        "Stop": [ {"hooks": [ {"type": "command", "command": "say done"} ]} ]
    }
}
"""


def test_numbers_and_formatting_are_kept_and_uninstall_gives_back_the_bytes_and_mode(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(ODD)
    path.chmod(0o644)
    install(path, http="http://127.0.0.1:4318")
    text = path.read_text()
    assert '"cleanupPeriodDays": 1e400' in text
    assert '"RATIO": 1.50, "BIG": 12345678901234567890123' in text
    assert "Infinity" not in text
    assert path.stat().st_mode & 0o777 == 0o644
    uninstall(path)
    assert path.read_text() == ODD
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "text",
    [
        '{"hooks": {"Stop": []}, "hooks": {}}',
        '{"model": NaN}',
        '{"model": "x",}',
        '// comment\n{"model": "x"}',
    ],
)
def test_what_cannot_be_round_tripped_is_refused_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    before = path.stat()
    assert (
        run_cli("claude-code", "install", "--project", str(tmp_path), "--http", "http://h:1") == 1
    )
    assert "nothing was changed" in capsys.readouterr().err
    assert path.read_text() == text
    assert path.stat().st_mtime_ns == before.st_mtime_ns


def _locked_user_edit(path: Path, n: int) -> None:
    """What a tool following the documented protocol does: flock the folder, then edit."""
    import fcntl

    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        # uninstall removes a file once only its hooks were in it: then there is nothing to keep
        data = json.loads(path.read_text()) if path.exists() else {}
        data.setdefault("env", {})[f"K{n}"] = str(n)
        tmp = path.with_name(f".edit-{n}")
        tmp.write_text(json.dumps(data, indent=2))
        os.replace(tmp, path)
    finally:
        os.close(folder)


def test_concurrent_locked_edits_are_never_lost(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{}")
    stop = threading.Event()
    cycles: list[int] = []
    errors: list[BaseException] = []

    def installer() -> None:
        try:
            while not stop.is_set():
                install(path, http="http://127.0.0.1:4318")
                uninstall(path)
                cycles.append(1)
        except BaseException as exc:  # the assertion below names it
            errors.append(exc)

    worker = threading.Thread(target=installer)
    worker.start()
    try:
        for n in range(40):
            _locked_user_edit(path, n)
            if n == 19:  # the installer has run between the edits, whatever the scheduler did
                _until(lambda: len(cycles) >= 2 or bool(errors))
    finally:
        stop.set()
        worker.join(60)
    assert errors == []
    env = json.loads(path.read_text()).get("env", {})
    assert all(f"K{n}" in env for n in range(40))


def _until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)
