"""``otelhooks claude-code install`` run as root (``sudo``) on a user's settings file keeps it
the user's, checked with the real Claude Code CLI run as that user.

The settings editor writes a new file and renames it over the old one: the new file belonged to
whoever ran install. Under ``sudo`` a user's ``0600`` ``.claude/settings.local.json`` became
root's, which the user's Claude Code could not read: it ran with none of that file's hooks (the
user's own guard and ours) and a scripted ``rm -r victim`` deleted, after an install that said
``updated``. The file now keeps its owner and group; one that the user running install cannot
give back to its owner is refused, untouched.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install_project
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)
from tests.coding_agents_cli._runs import CLAUDE, REPO, need_cli

pytestmark = pytest.mark.timeout(120)

# the user's own guard: a shell command Claude Code runs for every Bash call
USERS_GUARD = "case \"$(cat)\" in *'rm -r'*) echo 'no rm -r' >&2; exit 2;; esac"
LOCAL = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": USERS_GUARD}]}]
    }
}


@pytest.fixture
def nobody() -> pwd.struct_passwd:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (install as root, the CLI as another user)")
    return pwd.getpwnam("nobody")


@pytest.fixture
def shared() -> Iterator[Path]:
    # pytest's own folders are root's alone (0700): the other user could not enter them
    folder = Path(tempfile.mkdtemp(prefix="otelhooks-owner-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _owned_by(user: pwd.struct_passwd, *paths: Path) -> None:
    for path in paths:
        for item in [path, *path.rglob("*")]:
            os.chown(item, user.pw_uid, user.pw_gid)


def _as(user: pwd.struct_passwd) -> list[str]:
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]


def _python_for(user: pwd.struct_passwd, home: Path) -> tuple[str, dict[str, str]]:
    """An interpreter ``user`` can run that imports this checkout (this one, or the system's
    of the same version when this one lives where ``user`` cannot go), and its environment."""
    paths = dict.fromkeys([str(REPO), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(paths)}
    env["HOME"] = str(home)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([sys.executable, shutil.which(version) or sys.executable]):
        probe = [*_as(user), python, "-c", "import otelhooks.integrations.claude_code"]
        if subprocess.run(probe, env=env, capture_output=True, timeout=60).returncode == 0:
            return python, env
    pytest.skip(f"no Python that {user.pw_name} can run imports this checkout")


def _claude_as(user: pwd.struct_passwd, project: Path, home: Path) -> None:
    api = MessagesApi([ToolStep("call_rm", "Bash", {"command": "rm -r victim"})])
    with serve_messages_api(api) as url:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": url,
            **OFFLINE_ENV,
        }
        argv = [str(CLAUDE), "-p", "clean up", "--permission-mode", "bypassPermissions"]
        done = subprocess.run(
            [*_as(user), *argv],
            cwd=project, env=env, capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert len(api.requests) >= 2, done.stdout[-1500:]  # the call was made and answered


def test_install_as_root_leaves_the_users_settings_readable_by_the_user(
    nobody: pwd.struct_passwd, shared: Path
) -> None:
    need_cli(CLAUDE)
    project, home = shared / "project", shared / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text("hooks: []\n")
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps(LOCAL, indent=2) + "\n")
    local.chmod(0o600)
    home.mkdir()
    _owned_by(nobody, project, home)

    result = install_project(project=project, hooks_file="hooks.yaml", traces_out=None)
    assert result.changes[-1].verb == "updated"

    _claude_as(nobody, project, home)
    assert (project / "victim" / "keep.txt").exists()  # the user's guard still runs
    info = local.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (nobody.pw_uid, nobody.pw_gid, 0o600)


def test_a_file_install_cannot_give_back_is_refused(
    nobody: pwd.struct_passwd, shared: Path
) -> None:
    """A user who may write the folder but not own the file: the rename would have taken it
    from its owner; install refuses and the file stays as it was."""
    project = shared / "project"
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps(LOCAL) + "\n")
    local.parent.chmod(0o777)  # anyone may write the folder; the file stays root's
    local.chmod(0o644)
    (project / "hooks.yaml").write_text("hooks: []\n")
    before = local.read_bytes()
    code = (
        "import sys\n"
        "from otelhooks.integrations.claude_code import install_project\n"
        "try:\n"
        "    install_project(project=sys.argv[1], hooks_file='hooks.yaml', traces_out=None)\n"
        "except PermissionError as exc:\n"
        "    print(exc)\n"
        "    raise SystemExit(3)\n"
    )
    python, env = _python_for(nobody, shared)
    done = subprocess.run(
        [*_as(nobody), python, "-c", code, str(project)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "nothing was written" in done.stdout
    assert local.read_bytes() == before
    assert local.stat().st_uid == 0
    assert [p.name for p in local.parent.iterdir()] == [local.name]  # no temporary file left
