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


@pytest.mark.parametrize("where", ["user", "project"])
def test_codex_install_reads_a_config_that_starts_with_a_bom(
    where: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex reads a config.toml that starts with a byte order mark (an editor on Windows
    writes one) and runs no hook under its ``hooks = false``; install read it with tomllib
    alone, which refuses the mark, took it for no file and said nothing."""
    home = tmp_path / "home"
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("OTELHOOKS_CODEX_SYSTEM_DIR", str(tmp_path / "no-etc-codex"))
    user = codex_config(home, trusted=project) / "config.toml"
    if where == "user":
        off = user
        text = user.read_text().replace("[features]\n", "[features]\nhooks = false\n")
    else:
        off = project / ".codex" / "config.toml"
        off.parent.mkdir()
        text = OFF
    off.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())

    change = install_agent("codex", project=project, hooks_file="hooks.yaml")
    (warning,) = [w for w in change.warnings if w.startswith("no installed hook will run")]
    assert warning.startswith(f"no installed hook will run: {off} sets `[features] hooks = false`")

    need_cli(CODEX)
    env = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}
    run = run_codex(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()


# the project's .codex/config.toml (None: none), whether install warns of `--profile ci`
PROFILE_CASES: dict[str, tuple[str | None, bool]] = {
    "profile-hooks-false": (None, True),
    "project-hooks-true-over-the-profile": (ON, False),
}


@pytest.mark.parametrize("case", list(PROFILE_CASES))
def test_codex_install_warns_of_a_profile_that_turns_hooks_off(
    case: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codex --profile ci`` reads ``$CODEX_HOME/ci.config.toml`` over the user's config.toml
    and under the project's: its ``hooks = false`` ran ``rm -r`` past the installed guard while
    install, reading only the default run's files, said nothing."""
    project_config, warned = PROFILE_CASES[case]
    home = tmp_path / "home"
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("OTELHOOKS_CODEX_SYSTEM_DIR", str(tmp_path / "no-etc-codex"))
    profile = codex_config(home, trusted=project) / "ci.config.toml"
    profile.write_text(OFF)
    if project_config is not None:
        (project / ".codex").mkdir()
        (project / ".codex" / "config.toml").write_text(project_config)

    change = install_agent("codex", project=project, hooks_file="hooks.yaml")
    off = [w for w in change.warnings if w.startswith("no installed hook will run")]
    if warned:
        (warning,) = off
        assert warning.startswith(
            f"no installed hook will run under `codex --profile ci`: {profile} "
        )
    else:
        assert off == []

    need_cli(CODEX)
    env = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}
    steps = [("call_rm", "rm -r victim")]
    run = run_codex(project, home, steps, extra_env=env, options=["--profile", "ci"])
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists() is not warned
    # the default run reads no profile: the guard holds
    (project / "victim").mkdir(exist_ok=True)
    run = run_codex(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists()


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
