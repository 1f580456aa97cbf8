"""A guard edited while its bridge daemon runs: the next event runs the edited guard.

The daemon loads the hooks once. The socket name covers the hook files given on the command line
(their modification times), not a ``script:`` guard's Python file, so an edited guard used to be
answered by the old code for as long as events kept the daemon from going idle. The daemon now
checks, before each event, the files its hooks were built from (the hook files, each config file
read, the file of each Python function a hook calls); when one changed it answers
``{"stale": true}`` and leaves, and the client answers with the one-process bridge, which loads
them afresh, and starts a new daemon. Real client and daemon processes.
"""

from __future__ import annotations

import os
import py_compile
import time
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

NO_RM_NO_CURL = """\
def guard(event):
    if "rm -rf" in str(event.args) or "curl" in str(event.args):
        event.deny("no rm, no curl")
"""


def _edit(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns
    path.write_text(text)
    # a file system with a coarse clock could keep the time: the edit must show
    os.utime(path, ns=(time.time_ns(), max(time.time_ns(), before + 1_000_000)))


def test_an_edited_script_guard_decides_the_next_event(tmp_path: Path, runtime_dir: Path) -> None:
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    guard = tmp_path / "guard.py"
    guard.write_text(NO_RM_SCRIPT)
    env = client_env(tmp_path, runtime_dir)
    curl = bash("toolu_1", "curl -s http://127.0.0.1:9/x")
    assert hook(env, curl).stdout == ""  # starts the daemon, allowed by the one-process bridge
    old = daemon_pid(runtime_dir)
    assert hook(env, bash("toolu_2", "curl -s http://127.0.0.1:9/y")).stdout == ""  # the daemon

    _edit(guard, NO_RM_NO_CURL)
    edited = hook(env, bash("toolu_3", "curl -s http://127.0.0.1:9/z"))
    assert edited.deny_reason() == "no rm, no curl"
    assert NO_ANSWER not in edited.stderr  # not a daemon found dead: one that knew it was stale
    assert until_gone(old)

    hook(env, bash("toolu_4", "ls"))  # starts the next daemon, which loads the edited guard
    new = daemon_pid(runtime_dir)
    assert new != old
    served = hook(env, bash("toolu_5", "curl -s http://127.0.0.1:9/w"))
    assert served.deny_reason() == "no rm, no curl"
    assert served.seconds < 2  # answered by the new daemon, not by a fallback


def test_an_edited_hooks_file_in_the_env_file_is_seen_too(
    tmp_path: Path, runtime_dir: Path
) -> None:
    # hook files named by OTELHOOKS_HOOKS are not in the socket name's digest either
    more = tmp_path / "more.yaml"
    more.write_text("hooks: []\n")
    (tmp_path / "otelhooks.yaml").write_text("hooks: []\n")
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_HOOKS=str(more))
    assert hook(env, bash("toolu_1", "rm -rf build")).stdout == ""
    old = daemon_pid(runtime_dir)
    (tmp_path / "guard.py").write_text(NO_RM_SCRIPT)
    _edit(more, SCRIPT_GUARD_HOOKS)
    assert hook(env, bash("toolu_2", "rm -rf build")).deny_reason() == "no rm"
    assert until_gone(old)


# An old guard that allows everything and, in the daemon alone, takes 2 s to import: time for
# the test to save the new one while the daemon builds its hooks.
SLOW_TO_IMPORT_IN_THE_DAEMON = """\
import os, time

if b"daemon" in open(f"/proc/{os.getpid()}/cmdline", "rb").read().split(b"\\0"):
    open(os.environ["IMPORTING_MARKER"], "w").close()
    time.sleep(2)


def guard(event):
    pass
"""


def test_a_guard_saved_while_the_daemon_loads_it_decides_the_next_event(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """The daemon took the files' times after loading them: a guard saved meanwhile kept the
    time of its new text while the daemon ran the old one, allowing the ``rm -rf`` the
    one-process bridge denied, for as long as events kept coming."""
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    guard = tmp_path / "guard.py"
    guard.write_text(SLOW_TO_IMPORT_IN_THE_DAEMON)
    importing = tmp_path / "importing"
    env = client_env(tmp_path, runtime_dir, IMPORTING_MARKER=str(importing))
    assert hook(env, bash("toolu_1", "ls")).stdout == ""  # starts the daemon
    deadline = time.monotonic() + 30
    while not importing.exists():  # the daemon has read the old guard
        assert time.monotonic() < deadline, "the daemon never imported the guard"
        time.sleep(0.02)
    _edit(guard, NO_RM_SCRIPT)
    daemon_pid(runtime_dir)
    for n in (2, 3):  # the one-process bridge, then the daemon it starts
        assert hook(env, bash(f"toolu_{n}", "rm -rf /")).deny_reason() == "no rm"


def _guard_denying(word: str) -> str:
    return (
        f'def guard(event):\n    if "{word}" in str(event.args):\n        event.deny("no {word}")\n'
    )


GUARD_WITH_HELPER = """\
from guard_words import WORD


def guard(event):
    if WORD in str(event.args):
        event.deny(f"no {WORD}")
"""


@pytest.mark.parametrize("edited", ["guard.py", "guard_words.py"])
def test_a_guard_edited_twice_within_a_second_keeping_its_size_decides(
    tmp_path: Path, runtime_dir: Path, edited: str
) -> None:
    """CPython's bytecode cache (``__pycache__``) tells a file's versions apart by its size and
    its time in whole seconds: a guard (or the helper beside it that holds its words) tightened
    within the second of its last save, same length (``"sudo"`` to ``"rm -"``), was run from the
    old cached code by the one-process bridge and the daemon alike, and the ``rm -rf`` was
    allowed."""
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    guard = tmp_path / "guard.py"
    if edited == "guard.py":
        text = _guard_denying
    else:
        guard.write_text(GUARD_WITH_HELPER)
        text = 'WORD = "{}"\n'.format
    changed = tmp_path / edited
    second = int(time.time()) - 5  # both saves within one whole second, in the past
    changed.write_text(text("sudo"))
    os.utime(changed, ns=(time.time_ns(), second * 10**9 + 100_000_000))
    py_compile.compile(str(changed), doraise=True)  # the cache an import of it writes
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "rm -rf /")).stdout == ""  # allowed by the old guard
    old = daemon_pid(runtime_dir)
    assert hook(env, bash("toolu_2", "ls")).stdout == ""  # the daemon loaded it too

    changed.write_text(text("rm -"))
    os.utime(changed, ns=(time.time_ns(), second * 10**9 + 900_000_000))
    assert hook(env, bash("toolu_3", "rm -rf /")).deny_reason() == "no rm -"  # one-process
    assert until_gone(old)
    hook(env, bash("toolu_4", "ls"))  # starts the next daemon
    assert daemon_pid(runtime_dir) != old
    assert hook(env, bash("toolu_5", "rm -rf /")).deny_reason() == "no rm -"  # the new daemon


@pytest.mark.parametrize("linked", ["otelhooks.yaml", "guard.py"])
def test_a_symlink_retargeted_to_a_file_of_the_same_time_decides(
    tmp_path: Path, runtime_dir: Path, linked: str
) -> None:
    """A hooks file or a ``script:`` guard that is a symlink (home-manager, GNU Stow) retargeted
    to a new version whose time is the old one's (a Nix store's files all have the time 1): the
    daemon compared times alone, of the file the guard's code came from, and ran the old hooks
    for as long as events kept coming."""
    project, store = tmp_path / "project", tmp_path / "store"
    project.mkdir()
    old, new = {
        "otelhooks.yaml": ("hooks: []\n", SCRIPT_GUARD_HOOKS),
        "guard.py": ("def guard(event):\n    pass\n", NO_RM_SCRIPT),
    }[linked]
    (project / "guard.py").write_text(NO_RM_SCRIPT)
    (project / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    for version, text in (("v1", old), ("v2", new)):
        (store / version).mkdir(parents=True)
        (store / version / linked).write_text(text)
        os.utime(store / version / linked, (1, 1))
    (project / linked).unlink()
    (project / linked).symlink_to(store / "v1" / linked)
    env = client_env(project, runtime_dir)
    assert hook(env, bash("toolu_1", "rm -rf /")).stdout == ""  # the old version allows
    before = daemon_pid(runtime_dir)
    assert hook(env, bash("toolu_2", "rm -rf /")).stdout == ""  # the daemon's too

    switched = project / f"{linked}.new"  # retargeted as a switch does: a new link renamed over
    switched.symlink_to(store / "v2" / linked)
    switched.rename(project / linked)
    assert hook(env, bash("toolu_3", "rm -rf /")).deny_reason() == "no rm"
    assert until_gone(before)


def test_an_edited_helper_beside_the_guard_decides_the_next_event(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """The daemon watched the guard's file, not the module beside it that the guard imports:
    the words a guard denies kept in ``helpers.py`` and edited there, the daemon ran the old
    ones for as long as events kept coming."""
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    (tmp_path / "guard.py").write_text(
        "from guard_words import DENIED\n\n\n"
        "def guard(event):\n"
        "    if any(word in str(event.args) for word in DENIED):\n"
        '        event.deny("denied")\n'
    )
    words = tmp_path / "guard_words.py"
    words.write_text('DENIED = ["sudo"]\n')
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "rm -rf /")).stdout == ""  # starts the daemon
    old = daemon_pid(runtime_dir)
    assert hook(env, bash("toolu_2", "rm -rf /")).stdout == ""  # the daemon allows it too

    _edit(words, 'DENIED = ["sudo", "rm -rf"]\n')
    assert hook(env, bash("toolu_3", "rm -rf /")).deny_reason() == "denied"
    assert until_gone(old)


def test_a_hooks_file_replaced_by_one_of_the_same_time_and_size_decides(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """An atomic save that keeps the time (a copy made with ``cp -p`` or ``rsync -t``, renamed
    over the hooks file), same size: the daemon compared times alone and kept the old hooks."""
    (tmp_path / "guard.py").write_text(NO_RM_SCRIPT)
    hooks = tmp_path / "otelhooks.yaml"
    hooks.write_text("hooks: []\n".ljust(len(SCRIPT_GUARD_HOOKS)))
    kept = (time.time_ns(), 1_700_000_000_123_456_789)
    os.utime(hooks, ns=kept)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_1", "rm -rf /")).stdout == ""
    old = daemon_pid(runtime_dir)
    assert hook(env, bash("toolu_2", "rm -rf /")).stdout == ""  # the daemon's answer

    saved = tmp_path / ".otelhooks.yaml.tmp"
    saved.write_text(SCRIPT_GUARD_HOOKS)
    os.utime(saved, ns=kept)
    saved.rename(hooks)
    assert hook(env, bash("toolu_3", "rm -rf /")).deny_reason() == "no rm"
    assert until_gone(old)
