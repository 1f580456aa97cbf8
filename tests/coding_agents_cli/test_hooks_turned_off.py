"""Gemini CLI settings that turn hooks off: ``otelhooks gemini install`` says so, and the real
Gemini CLI 0.61 shows why it must (the installed guard never runs and ``rm -r`` deletes).

``hooksConfig.enabled: false`` turns every hook off, the first of the system settings, the
project's, the user's and the system defaults that sets the key deciding (the system settings,
an administrator's, override the rest; the defaults are under them all); ``otelhooks`` (the
name install gives its handlers) in any file's ``hooksConfig.disabled`` turns ours off. The
system files are moved where the test wants them with the variables Gemini CLI reads,
``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` and ``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``, into a folder
of the home of the root user running the tests: Gemini CLI reads a system file only when root
owns it and every folder above it, none writable by a group or others, so one under ``/tmp``
is skipped (the last case shows it, and that install then does not warn).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

OFF = {"hooksConfig": {"enabled": False}}
ON = {"hooksConfig": {"enabled": True}}
OURS_OFF = {"hooksConfig": {"disabled": ["otelhooks"]}}
# {"~" (the user's), "project", "system" or "defaults": its settings}, and the file the
# warning names (None: no warning)
CASES: dict[str, tuple[dict[str, dict[str, Any]], str | None]] = {
    "user-enabled-false": ({"~": OFF}, "~"),
    "project-enabled-false": ({"project": OFF}, "project"),
    "project-enabled-true-over-user-false": ({"~": OFF, "project": ON}, None),
    "ours-named-in-the-users-disabled-list": (
        {"~": OURS_OFF, "project": {"hooksConfig": {"disabled": []}}},
        "~",
    ),
    "system-enabled-false-over-project-true": ({"system": OFF, "project": ON}, "system"),
    "ours-named-in-the-system-disabled-list": ({"system": OURS_OFF}, "system"),
    "system-defaults-enabled-false": ({"defaults": OFF}, "defaults"),
    "user-enabled-true-over-system-defaults-false": ({"defaults": OFF, "~": ON}, None),
    "a-system-file-under-tmp-is-not-read": ({"tmp-system": OFF}, None),
}


@pytest.fixture
def secure_dir() -> Iterator[Path | None]:
    """A folder only root can write, and every folder above it (as Gemini CLI wants its system
    files), removed after the test; None when the tests do not run as root."""
    home = Path.home()
    secure = os.geteuid() == 0 and all(
        p.stat().st_uid == 0 and not p.stat().st_mode & 0o022 for p in [home, *home.parents]
    )
    if not secure:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="otelhooks-test-", dir=home))
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("case", list(CASES))
def test_gemini_install_warns_when_no_installed_hook_will_run(
    case: str,
    project: Path,
    tmp_path: Path,
    secure_dir: Path | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    where, named = CASES[case]
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    if secure_dir is None:
        if "system" in where or "defaults" in where:
            pytest.skip("Gemini CLI reads system settings only from folders only root can write")
        secure_dir = tmp_path / "no-system"
    files = {
        "~": gemini_settings(home, where.get("~")),
        "project": project / ".gemini" / "settings.json",
        "system": secure_dir / "settings.json",
        "defaults": secure_dir / "system-defaults.json",
        "tmp-system": tmp_path / "etc" / "settings.json",
    }
    system = files["tmp-system" if "tmp-system" in where else "system"]
    system_env = {
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(files["defaults"]),
    }
    for name, value in system_env.items():
        monkeypatch.setenv(name, value)
    for name, settings in where.items():
        if name != "~":
            files[name].parent.mkdir(parents=True, exist_ok=True)
            files[name].write_text(json.dumps(settings))
    (project / "hooks.yaml").write_text(DENY_SHELL_GUARD)

    change = install_agent("gemini", project=project, hooks_file="hooks.yaml")
    off = [w for w in change.warnings if w.startswith("no installed hook will run")]
    if named is None:
        assert off == []
    else:
        (warning,) = off
        assert str(files[named]) in warning
        assert ("only an administrator" in warning) is (named == "system")

    need_cli(GEMINI)
    env = {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",  # the bridge daemon leaves soon after the test
        **system_env,
    }
    run = run_gemini(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists() is (named is None)
