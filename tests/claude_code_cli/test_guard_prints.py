"""A Python guard that prints (a debugging ``print``) must not cost its deny, with the real
Claude Code CLI.

Claude Code reads a command hook's stdout as its JSON answer only when stdout is that JSON: a
line printed before it makes the whole stdout plain text, and the tool runs. The one-process
bridge (the first event, before a bridge daemon runs) printed a ``script:`` guard's own output on
the stdout it answers on. A scripted ``rm -r victim``: the folder must survive.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests.coding_agents_cli._runs import CLAUDE, CLI_TEST_S, need_cli, run_claude, skip_reason

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HOOKS = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    script: guard.py:guard
"""
GUARD = """\
import os


def guard(event):
    print("checking", event.apiName)  # Python's stdout
    os.system("echo checked by a shell")  # the process's own stdout, inherited
    if "rm -r" in str(event.args):
        event.deny("no rm here")
"""
RM = [{"id": "call_rm", "tool": "Bash", "args": {"command": "rm -r victim"}}]


def _denied_by_the_one_process_bridge(tmp_path: Path, guard: str) -> None:
    """Claude Code runs the scripted ``rm -r victim`` under ``guard``, the first event of a
    session: the one-process bridge answers it. The folder survives; the model is told why."""
    need_cli(CLAUDE)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(HOOKS)
    (project / "guard.py").write_text(guard)
    install(project / ".claude" / "settings.json", hooks_file="hooks.yaml", events=["PreToolUse"])
    # a socket folder of its own: no bridge daemon runs yet, the one-process bridge answers
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    run = run_claude(project, tmp_path / "home", RM, extra_env={"XDG_RUNTIME_DIR": str(runtime)})
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "no rm here" in run.told(), run.told()


def test_a_guard_that_prints_still_denies(tmp_path: Path) -> None:
    _denied_by_the_one_process_bridge(tmp_path, GUARD)


LEAVES_A_CHILD = """\
import pathlib, subprocess

HERE = pathlib.Path(__file__).parent


def guard(event):
    if "rm -r" in str(event.args):
        # a notifier it starts and does not wait for, on the hook process's stdout and stderr
        child = subprocess.Popen(["sleep", "120"])
        (HERE / "child.pid").write_text(str(child.pid))
        event.deny("no rm here")
"""


def test_a_guard_that_leaves_a_child_running_still_denies(tmp_path: Path) -> None:
    """The child inherits the hook process's descriptors 1 and 2. When they were Claude Code's
    pipes, Claude Code waited for them to close (the child's 120 s) past the hook's 30 s
    timeout, then ran the tool: the folder was deleted, and nothing said the guard denied."""
    try:
        _denied_by_the_one_process_bridge(tmp_path, LEAVES_A_CHILD)
    finally:
        with contextlib.suppress(OSError, ValueError):
            pid = (tmp_path / "project" / "child.pid").read_text()
            os.kill(int(pid), signal.SIGKILL)
