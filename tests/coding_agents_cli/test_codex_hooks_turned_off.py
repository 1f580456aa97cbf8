"""Codex settings that turn hooks off: ``otelhooks codex install`` says so, and the real Codex CLI
0.171 shows why it must (the installed guard never runs and ``rm -r`` deletes).

``[features] hooks = false`` (or its older name ``codex_hooks``) turns every hook off, the first
config layer that sets the feature deciding: the legacy ``managed_config.toml``, the project's
``.codex/config.toml``, ``$CODEX_HOME/config.toml``, the system ``config.toml``. An
administrator's ``requirements.toml`` overrides them all: ``[features] hooks = false`` runs no
hook, ``allow_managed_hooks_only = true`` none of the user's or the project's.

Codex has no variable that moves its system folder (``/etc/codex``) and a test must not write to
the machine's ``/etc``: the system files are read from the folder
``OTELHOOKS_CODEX_SYSTEM_DIR`` names, and only the installer is checked for them (the real CLI's
behaviour under each was checked by hand, with ``/etc`` overlaid in a private mount namespace).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from otelhooks.testing import run_cli
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    CODEX_RM_GUARD,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

OFF = "[features]\nhooks = false\n"
ON = "[features]\nhooks = true\n"
# {"~" (the user's config.toml: a [features] line), "project" (.codex/config.toml): text}, the
# file the warning names (None: no warning)
CASES: dict[str, tuple[dict[str, str], str | None]] = {
    "user-hooks-false": ({"~": "hooks = false"}, "~"),
    "user-codex-hooks-false": ({"~": "codex_hooks = false"}, "~"),
    "project-hooks-false": ({"project": OFF}, "project"),
    "project-hooks-true-over-user-false": ({"~": "hooks = false", "project": ON}, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_codex_install_warns_when_no_installed_hook_will_run(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, named = CASES[case]
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("OTELHOOKS_CODEX_SYSTEM_DIR", str(tmp_path / "no-etc-codex"))
    user = codex_config(home, trusted=project) / "config.toml"
    if "~" in where:
        user.write_text(user.read_text().replace("[features]\n", f"[features]\n{where['~']}\n"))
    if "project" in where:
        (project / ".codex").mkdir()
        (project / ".codex" / "config.toml").write_text(where["project"])

    change = install_agent("codex", project=project, hooks_file="hooks.yaml")
    off = [w for w in change.warnings if w.startswith("no installed hook will run")]
    if named is None:
        assert off == []
    else:
        (warning,) = off
        assert str(user if named == "~" else project / ".codex" / "config.toml") in warning

    need_cli(CODEX)
    env = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}  # the bridge daemon leaves soon after the test
    run = run_codex(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists() is (named is None)


# {file in the system folder: text}, the user's [features] line, the file the warning names and
# what it says
SYSTEM_CASES: dict[str, tuple[dict[str, str], str | None, tuple[str, str] | None]] = {
    "managed-hooks-only": (
        {"requirements.toml": "allow_managed_hooks_only = true\n"},
        None,
        ("requirements.toml", "`allow_managed_hooks_only = true`"),
    ),
    "required-off-over-the-users-on": (
        {"requirements.toml": OFF},
        "hooks = true",
        ("requirements.toml", "only an administrator"),
    ),
    "managed-config-off-over-the-users-on": (
        {"managed_config.toml": OFF},
        "hooks = true",
        ("managed_config.toml", "only an administrator"),
    ),
    "system-config-off": ({"config.toml": OFF}, None, ("config.toml", "overrides it")),
    "the-users-on-over-the-system-configs-off": ({"config.toml": OFF}, "hooks = true", None),
    "managed-hooks-only-false": (
        {"requirements.toml": "allow_managed_hooks_only = false\n"},
        None,
        None,
    ),
}


@pytest.mark.parametrize("case", list(SYSTEM_CASES))
def test_codex_install_reads_the_administrators_files(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, user_line, warned = SYSTEM_CASES[case]
    home, system = tmp_path / "home", tmp_path / "etc-codex"
    system.mkdir()
    for name, text in files.items():
        (system / name).write_text(text)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("OTELHOOKS_CODEX_SYSTEM_DIR", str(system))
    user = codex_config(home) / "config.toml"
    if user_line is not None:
        user.write_text(user.read_text().replace("[features]\n", f"[features]\n{user_line}\n"))

    change = install_agent("codex", user=True, hooks_file=tmp_path / "hooks.yaml")
    off = [w for w in change.warnings if w.startswith("no installed hook will run")]
    if warned is None:
        assert off == []
        return
    (warning,) = off
    name, said = warned
    assert warning.startswith(f"no installed hook will run: {system / name} ")
    assert said in warning


def test_the_command_prints_it_as_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    system = tmp_path / "etc-codex"
    system.mkdir()
    (system / "requirements.toml").write_text("allow_managed_hooks_only = true\n")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("OTELHOOKS_CODEX_SYSTEM_DIR", str(system))
    hooks = tmp_path / "hooks.yaml"
    code = run_cli("codex", "install", "--user", "--no-traces", "--hooks", hooks)
    out, err = capsys.readouterr()
    assert code == 0, err
    requirements = system / "requirements.toml"
    assert f"warning: no installed hook will run: {requirements}" in err
    assert "no installed hook will run" not in out
