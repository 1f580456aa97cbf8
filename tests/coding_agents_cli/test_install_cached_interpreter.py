"""Install run from an environment in a cache folder (``uvx otelhooks codex install``, ``pipx
run``) says, on stderr, that no installed hook will run once the cache is cleaned.

The hook command names the interpreter install ran with. ``uvx`` and ``pipx run`` make that
environment in the user's cache folder for one command and remove it on ``cache clean`` (or
when it expires): the command then cannot start, and the real Codex CLI ran a scripted
``rm -r victim`` past the installed guard without a word. Before, install reported success and
nothing else. Here the environment is a real virtualenv under ``$XDG_CACHE_HOME`` that runs this
checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.coding_agents_cli._runs import (
    CODEX,
    CODEX_RM_GUARD,
    REPO,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(120)


def _cached_env(cache: Path) -> Path:
    """A virtualenv where ``uvx`` keeps its own (``$XDG_CACHE_HOME/uv/archive-v0/...``), whose
    interpreter imports this checkout and the packages of this one; its ``python``."""
    env = cache / "uv" / "archive-v0" / "otelhooks-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    (site,) = (env / "lib").glob("python*/site-packages")
    paths = dict.fromkeys([str(REPO), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "otelhooks-checkout.pth").write_text("\n".join(paths) + "\n")
    return env / "bin" / "python"


def _install(python: Path, cache: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(cache),
        "CODEX_HOME": str(home / ".codex"),
        "OTELHOOKS_CODEX_SYSTEM_DIR": str(home / "no-etc-codex"),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(home / "no-system-settings.json"),
        "OTELHOOKS_CLAUDE_MANAGED_SETTINGS_DIR": str(home / "no-managed-settings"),
    }
    return subprocess.run(
        [str(python), "-m", "otelhooks", *args, "--no-traces"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("cli", ["claude-code", "codex", "gemini"])
def test_install_from_a_cached_environment_warns(cli: str, project: Path, tmp_path: Path) -> None:
    cache, home = tmp_path / "cache", tmp_path / "home"
    home.mkdir()
    python = _cached_env(cache)
    done = _install(python, cache, home, cli, "install", "--project", str(project))
    assert done.returncode == 0, done.stderr
    warning = f"warning: no installed hook will run once {cache} is cleaned: "
    assert f"{warning}the hook command names {python}" in done.stderr
    # the same from a lasting environment: no such warning
    done = _install(Path(sys.executable), cache, home, cli, "install", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert "is cleaned" not in done.stderr


def test_the_real_codex_runs_the_tool_once_the_cache_is_cleaned(
    project: Path, tmp_path: Path
) -> None:
    """Why install must say so: the same install, its environment removed, guards nothing."""
    need_cli(CODEX)
    cache, home = tmp_path / "cache", tmp_path / "home"
    (project / "hooks.yaml").write_text(CODEX_RM_GUARD)
    codex_config(home, trusted=project)
    python = _cached_env(cache)
    done = _install(python, cache, home, "codex", "install", "--project", str(project),
                    "--hooks", "hooks.yaml")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no installed hook will run once" in done.stderr
    steps = [("call_rm", "rm -r victim")]
    env = {"OTELHOOKS_BRIDGE_DAEMON_IDLE": "3"}
    run = run_codex(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim").exists()  # the guard held while the environment was there

    shutil.rmtree(cache)  # `uv cache clean`
    run = run_codex(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()
