"""The Python variables of the CLI's environment never end the guard.

Codex CLI and Gemini CLI hand their hooks the environment they were started in. There, a
``PYTHONPATH`` of another project or Python version (a ROS workspace's, a ``src`` holding a
``yaml`` package built for another Python) or a ``PYTHONHOME`` of another Python shadowed the
bridge's own modules: the one-process bridge the hook client starts ended at import (exit 1),
and each real CLI ran the scripted ``rm -r victim`` past an installed guard. The bridge now
imports the otelhooks of its hook client first, its dependencies from its own interpreter, and
the ``PYTHONPATH`` folders last, where a guard's own modules are still found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    REPO,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

# a guard whose rule is a module of the user's, found through PYTHONPATH
HOOKS = """\
hooks:
  - id: policy
    type: PreToolUse
    matcher: "@shell"
    script: guard.py:guard
"""
GUARD = """\
import userpolicy


def guard(event):
    if userpolicy.forbidden(str(event.args)):
        event.deny(userpolicy.REASON)
"""
POLICY = """\
REASON = "userpolicy keeps victim"


def forbidden(command):
    return "rm -r" in command
"""


def _environment(tmp_path: Path, variable: str) -> dict[str, str]:
    """A folder of the user's on ``PYTHONPATH`` (the policy module, and a ``yaml`` package
    built for another Python), and with ``PYTHONHOME`` another Python's home as well."""
    user = tmp_path / "user-python"
    (user / "yaml").mkdir(parents=True)
    (user / "yaml" / "__init__.py").write_text("raise ImportError('a yaml for Python 3.8')\n")
    (user / "userpolicy.py").write_text(POLICY)
    env = {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
        # the checkout the hook client runs from stays on the path too, as in the other tests
        "PYTHONPATH": f"{user}:{REPO}",
    }
    if variable == "PYTHONHOME":
        home = tmp_path / "other-python"
        (home / "lib").mkdir(parents=True)
        env["PYTHONHOME"] = str(home)
    return env


def _project(project: Path, cli: str) -> None:
    (project / "hooks.yaml").write_text(HOOKS)
    (project / "guard.py").write_text(GUARD)
    install_agent(cli, project=project, hooks_file="hooks.yaml")


@pytest.mark.parametrize("variable", ["PYTHONPATH", "PYTHONHOME"])
def test_the_real_codex_cli_is_guarded_under_a_foreign_python_environment(
    project: Path, tmp_path: Path, variable: str
) -> None:
    need_cli(CODEX)
    _project(project, "codex")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    env = _environment(tmp_path, variable)
    run = run_codex(project, home, [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "userpolicy keeps victim" in run.told(), skip_reason(run)


@pytest.mark.parametrize("variable", ["PYTHONPATH", "PYTHONHOME"])
def test_the_real_gemini_cli_is_guarded_under_a_foreign_python_environment(
    project: Path, tmp_path: Path, variable: str
) -> None:
    need_cli(GEMINI)
    _project(project, "gemini")
    env = _environment(tmp_path, variable)
    run = run_gemini(project, tmp_path / "home", [("call_rm", "rm -r victim")], extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").exists(), skip_reason(run)
    assert "userpolicy keeps victim" in run.told(), skip_reason(run)
