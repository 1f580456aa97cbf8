"""Claude Code's managed settings (an administrator's ``managed-settings.json`` and its
``managed-settings.d/*.json`` drop-ins, later files over earlier ones) override every user,
project and local file: ``allowManagedHooksOnly: true`` or hooks in
``strictPluginOnlyCustomization`` ignore the hooks install writes, ``disableAllHooks: true``
runs none at all. ``otelhooks claude-code install`` warns, naming the file and the key.

Claude Code has no variable that moves its managed folder (``/etc/claude-code`` on Linux), and
a test must not write to the machine's ``/etc``: these tests point the installer at a folder of
their own with ``OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR``. That the real CLI 2.1 then runs no
user, project or local hook was checked by hand, with ``/etc`` overlaid in a private mount
namespace (the report of the change that added this file says how).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install_project
from otelhooks.testing import run_cli

# {managed file relative to the managed folder: its content}, user settings, the warned file
# and key (None: no warning)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any] | None, tuple[str, str] | None]] = {
    "managed-hooks-only": (
        {"managed-settings.json": {"allowManagedHooksOnly": True}},
        None,
        ("managed-settings.json", "allowManagedHooksOnly"),
    ),
    "a-drop-in-disables-all-hooks": (
        {
            "managed-settings.json": {"permissions": {}},
            "managed-settings.d/10-hooks.json": {"disableAllHooks": True},
        },
        None,
        ("managed-settings.d/10-hooks.json", "disableAllHooks: true"),
    ),
    "a-later-drop-in-lifts-hooks-only": (
        {
            "managed-settings.json": {"allowManagedHooksOnly": True},
            "managed-settings.d/20-open.json": {"allowManagedHooksOnly": False},
        },
        None,
        None,
    ),
    "a-hidden-drop-in-is-not-read": (
        {"managed-settings.d/.10-hooks.json": {"allowManagedHooksOnly": True}},
        None,
        None,
    ),
    "hooks-locked-to-plugins": (
        {"managed-settings.json": {"strictPluginOnlyCustomization": ["skills", "hooks"]}},
        None,
        ("managed-settings.json", "strictPluginOnlyCustomization"),
    ),
    "managed-false-over-the-users-true": (
        {"managed-settings.json": {"disableAllHooks": False}},
        {"disableAllHooks": True},
        None,
    ),
}


def _write(root: Path, files: dict[str, dict[str, Any]]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))


@pytest.mark.parametrize("case", list(CASES))
def test_install_warns_when_managed_settings_keep_its_hooks_from_running(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    managed, user, warned = CASES[case]
    home, project = tmp_path / "home", tmp_path / "project"
    _write(tmp_path / "managed", managed)
    if user is not None:
        _write(home / ".claude", {"settings.json": user})
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR", str(tmp_path / "managed"))

    result = install_project(project=project, traces_out=None)
    off = [w for w in result.changes[-1].warnings if w.startswith("no installed hook will run")]
    if warned is None:
        assert off == []
        return
    (warning,) = off
    name, key = warned
    assert f"{tmp_path / 'managed' / name} (managed settings" in warning
    assert f"`{key}" in warning
    assert "administrator" in warning


def test_the_command_prints_the_managed_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "managed", {"managed-settings.json": {"allowManagedHooksOnly": True}})
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR", str(tmp_path / "managed"))
    project = tmp_path / "project"
    code = run_cli("claude-code", "install", "--no-traces", "--project", project)
    err = capsys.readouterr().err
    assert code == 0, err
    managed = tmp_path / "managed" / "managed-settings.json"
    assert f"warning: no installed hook will run: {managed}" in err
    assert "`allowManagedHooksOnly: true`" in err
