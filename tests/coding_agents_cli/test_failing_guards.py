"""A guard that cannot decide, with the real Codex CLI and Gemini CLI: never silent.

Installed with ``--fail-closed``, a hooks file that does not load denies the scripted ``rm -r``
in each CLI's own format: the folder survives and the model is told why. Installed as by
default (fail open), Gemini CLI shows the person why a guard did not decide: the bridge's
refusal when the hooks file does not load, and a ``systemMessage`` naming the guard whose
command cannot run (the tool call goes on, as the install's note says), on one line. Codex CLI
0.171 shows neither in ``codex exec`` (``docs/adapters.md``, "What each CLI cannot do").

A guard whose interpreter is gone (a removed virtualenv) never reaches the bridge: Codex runs the
tool after a hook that cannot start, ``--fail-closed`` or not, and neither CLI has Claude Code's
``onFailure``. Under ``--fail-closed`` the installed command itself turns any exit that is not
the bridge's answer into a block with the reason; the control shows Codex without it.

A guard that hangs (its module never finishes importing) is answered by the bridge at its answer
time, a deny under ``--fail-closed``. Measured without that (the answer time set past Codex's
30 s hook timeout): Codex CLI 0.171 was still waiting when the test's 60 s ran out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import hooks_path, install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

NOT_YAML = "hooks: [ {id: no-rm, type: PreToolUse, command: 'exit 2'"
BROKEN_COMMAND = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "no-such-guard-binary"
"""
STEPS = [("call_rm", "rm -r victim")]


def _install(dialect: str, project: Path, hooks: str, *, fail_closed: bool) -> None:
    (project / "hooks.yaml").write_text(hooks)
    install_agent(dialect, project=project, hooks_file="hooks.yaml", fail_closed=fail_closed)


def test_codex_fail_closed_denies_when_the_hooks_file_does_not_load(
    project: Path, tmp_path: Path
) -> None:
    need_cli(CODEX)
    _install("codex", project, NOT_YAML, fail_closed=True)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    told = run.told()
    assert "otelhooks could not check this tool call (fail-closed)" in told
    assert "invalid YAML" in told


def test_gemini_fail_closed_denies_when_the_hooks_file_does_not_load(
    project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    _install("gemini", project, NOT_YAML, fail_closed=True)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    told = run.told()
    assert "otelhooks could not check this tool call (fail-closed)" in told
    assert "invalid YAML" in told


def test_gemini_shows_why_a_fail_open_guard_did_not_decide(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    _install("gemini", project, NOT_YAML, fail_closed=False)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()  # fail open, as install warned
    assert "otelhooks gemini: " in run.stderr
    assert "invalid YAML" in run.stderr


def test_gemini_shows_a_guard_whose_command_cannot_run(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    _install("gemini", project, BROKEN_COMMAND, fail_closed=False)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()
    assert "otelhooks: a hook failed and did not decide: no-rm" in run.stderr
    assert "no-such-guard-binary: not found" in run.stderr


LOUD_COMMAND = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "printf 'policy server down\\\\nretry later\\\\n' >&2; exit 1"
"""
ONE_LINE = "otelhooks: a hook failed and did not decide: no-rm: "


def test_gemini_shows_a_failed_guard_s_reason_on_one_line(project: Path, tmp_path: Path) -> None:
    """The guard's stderr holds two lines: Gemini CLI showed the person the first on the
    status line and the second apart from it. Now the reason is one line."""
    need_cli(GEMINI)
    _install("gemini", project, LOUD_COMMAND, fail_closed=False)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()  # fail open, as install warned
    (line,) = [line for line in run.stderr.splitlines() if ONE_LINE in line]
    assert line.endswith("exited with 1: policy server down retry later"), line


def test_codex_exec_shows_no_system_message_of_a_failed_guard(
    project: Path, tmp_path: Path
) -> None:
    """The bridge tells Codex CLI in ``systemMessage`` (one line) that a guard failed, as it
    tells Gemini CLI; ``codex exec`` 0.171 shows it nowhere, in its text output or with
    ``--json`` (``docs/adapters.md``, "What each CLI cannot do"). When this fails, Codex shows
    it: say so there."""
    need_cli(CODEX)
    _install("codex", project, LOUD_COMMAND, fail_closed=False)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()  # fail open, as install warned
    assert "did not decide" not in run.stdout + run.stderr + run.told()
    assert '"type":"command_execution"' in run.stdout.replace(" ", "")  # the tool ran, told


ALLOW_ALL = "hooks:\n  - {id: look, type: PostToolUse, command: 'true'}\n"


def _interpreter_gone(dialect: str, project: Path, *, fail_closed: bool) -> None:
    """Install, then do what removing the virtualenv does: the tool guard's command names an
    interpreter that no longer exists (its other events keep theirs)."""
    _install(dialect, project, ALLOW_ALL, fail_closed=fail_closed)
    path = hooks_path(dialect, project=project)
    data = json.loads(path.read_text())
    (group,) = data["hooks"]["PreToolUse" if dialect == "codex" else "BeforeTool"]
    handler = group["hooks"][0]
    handler["command"] = "/nonexistent/venv/bin/python3 " + handler["command"].split(" ", 1)[1]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "control"])
def test_codex_guard_whose_interpreter_is_gone(
    project: Path, tmp_path: Path, fail_closed: bool
) -> None:
    need_cli(CODEX)
    _interpreter_gone("codex", project, fail_closed=fail_closed)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    if not fail_closed:  # Codex runs the tool after a hook that cannot start
        assert not (project / "victim").exists()
        return
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "the guard could not run (exit 127): blocked (--fail-closed)" in run.told()


def test_gemini_fail_closed_guard_whose_interpreter_is_gone(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    _interpreter_gone("gemini", project, fail_closed=True)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "the guard could not run (exit 127): blocked (--fail-closed)" in run.told()


HANGING_GUARD = """\
hooks:
  - id: policy
    type: PreToolUse
    matcher: "@shell"
    script: policy.py:guard
"""


def test_codex_fail_closed_denies_when_the_guard_hangs(
    project: Path, tmp_path: Path, runtime_dir: Path
) -> None:
    """A guard whose module never finishes importing (a policy fetched from a host that does not
    answer): the bridge answers at its answer time, 3 s here, and Codex is told why, where it
    used to wait for Codex's own 30 s timeout and then run the ``rm``."""
    need_cli(CODEX)
    (project / "policy.py").write_text("import time\ntime.sleep(3600)\n")
    _install("codex", project, HANGING_GUARD, fail_closed=True)
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = {
        **bridge_env(tmp_path),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S": "1",
    }
    run = run_codex(project, home, STEPS, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "otelhooks could not check this tool call (fail-closed): no answer within 1 s" in (
        run.told()
    )
