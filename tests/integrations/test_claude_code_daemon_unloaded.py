"""A bridge daemon whose hooks do not load stays, and answers as the one-process bridge would.

It used to exit at once, so each event started a daemon and ran the one-process bridge (about
1.4 s an event for as long as the file was broken). Now it answers each event with the problem
(a deny under ``--fail-closed``, else exit 1), building the bridge again each time, so that its
answer is about the files as they are then; once they load it leaves, and the next daemon runs
the mended hooks. Real client and daemon processes. To tell the daemon's answer from the
one-process bridge's, later events run with a ``PYTHONPATH`` whose ``otelhooks`` only says it
ran: the daemon, already started, does not see it; a one-process bridge would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM_SCRIPT,
    SCRIPT_GUARD_HOOKS,
    bash,
    client_env,
    daemon_pid,
    hook,
    until_gone,
)

pytestmark = pytest.mark.timeout(90)

SHADOWED = "a one-process bridge ran"


@pytest.fixture
def shadow(tmp_path: Path) -> Path:
    """A ``PYTHONPATH`` on which ``python -m otelhooks`` only says that it ran."""
    package = tmp_path / "shadow" / "otelhooks"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(f"import sys\nprint({SHADOWED!r}, file=sys.stderr)\n")
    return package.parent


def _one_process(env: dict[str, str], event: dict[str, object], *flags: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "otelhooks.yaml", *flags],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        cwd=env["CLAUDE_PROJECT_DIR"],
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout


@pytest.mark.parametrize("flags", [(), ("--fail-closed",)], ids=["default", "fail-closed"])
def test_a_daemon_whose_hooks_do_not_load_answers_each_event_as_the_bridge_would(
    tmp_path: Path, runtime_dir: Path, shadow: Path, flags: tuple[str, ...]
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    (tmp_path / "guard.py").write_text("def guard(event):\n    if True\n")  # does not import
    env = client_env(tmp_path, runtime_dir)
    first = hook(env, bash("toolu_1", "rm -rf build"), *flags)  # the one-process bridge
    pid = daemon_pid(runtime_dir)

    later = client_env(tmp_path, runtime_dir, PYTHONPATH=str(shadow))
    for n in range(2, 5):
        answered = hook(later, bash(f"toolu_{n}", "rm -rf build"), *flags)
        assert SHADOWED not in answered.stderr
        assert NO_ANSWER not in answered.stderr
        assert (answered.returncode, answered.stdout) == (first.returncode, first.stdout)
        assert "guard.py" in answered.stderr + answered.stdout  # the problem, named
    assert daemon_pid(runtime_dir) == pid
    expected = _one_process(env, bash("toolu_9", "rm -rf build"), *flags)
    assert (first.returncode, first.stdout) == expected
    if flags:
        assert first.deny_reason().startswith("otelhooks could not check this tool call")
    else:
        assert (first.returncode, first.stdout) == (1, "")


def test_once_the_hooks_load_the_daemon_leaves_and_the_mended_guard_decides(
    tmp_path: Path, runtime_dir: Path, shadow: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    guard = tmp_path / "guard.py"
    guard.write_text("def guard(event):\n    if True\n")
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "rm -rf build"), "--fail-closed").deny_reason()
    broken = daemon_pid(runtime_dir)

    # guard.py is not in the socket's name: the same (unloaded) daemon gets the next event
    guard.write_text(NO_RM_SCRIPT)
    mended = hook(env, bash("toolu_2", "rm -rf build"), "--fail-closed")
    assert mended.deny_reason() == "no rm"
    assert NO_ANSWER not in mended.stderr
    assert until_gone(broken)

    assert hook(env, bash("toolu_3", "ls"), "--fail-closed").stdout == ""  # starts the next
    loaded = daemon_pid(runtime_dir)
    assert loaded != broken
    later = client_env(tmp_path, runtime_dir, PYTHONPATH=str(shadow))
    assert hook(later, bash("toolu_4", "rm -rf dist"), "--fail-closed").deny_reason() == "no rm"
    assert hook(later, bash("toolu_5", "ls"), "--fail-closed").stdout == ""
    assert daemon_pid(runtime_dir) == loaded


def test_an_input_that_is_not_json_is_answered_by_the_unloaded_daemon_as_by_the_bridge(
    tmp_path: Path, runtime_dir: Path, shadow: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text("hooks: [\n")  # not YAML
    env = client_env(tmp_path, runtime_dir)
    hook(env, bash("toolu_1", "ls"), "--fail-closed")
    daemon_pid(runtime_dir)
    later = client_env(tmp_path, runtime_dir, PYTHONPATH=str(shadow))
    done = hook(later, '{"hook_event_name": "PreToolUse", "tool_input": ', "--fail-closed")
    assert SHADOWED not in done.stderr
    reason = done.deny_reason()
    assert reason.startswith("otelhooks could not check this tool call (fail-closed): ")
    assert "JSON" in reason


def test_a_guard_whose_import_hangs_is_answered_as_a_failure_within_the_answer_time(
    tmp_path: Path, runtime_dir: Path, shadow: Path
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    guard = tmp_path / "guard.py"
    guard.write_text("def guard(event):\n    if True\n")
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="2")
    hook(env, bash("toolu_1", "rm -rf build"), "--fail-closed")
    pid = daemon_pid(runtime_dir)

    guard.write_text("import time\ntime.sleep(3600)\n")  # the next load never ends
    later = client_env(
        tmp_path, runtime_dir, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="2", PYTHONPATH=str(shadow)
    )
    hung = hook(later, bash("toolu_2", "rm -rf build"), "--fail-closed")
    assert SHADOWED not in hung.stderr
    assert hung.deny_reason() == (
        "otelhooks could not check this tool call (fail-closed): "
        "the hooks did not load: no answer within 2 s"
    )
    assert hung.seconds < 10
    assert daemon_pid(runtime_dir) == pid
