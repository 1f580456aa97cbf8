"""An ``approval:`` guard with the real Codex CLI and Gemini CLI: the CLI waits for the person.

An approval holds the call until a person answers in ``otelhooks serve``'s inbox, or its
``timeout`` passes and its ``default`` decides. Both CLIs kill a hook at its own timeout and then
run the tool (Codex 0.171 and Gemini 0.61: a timed-out hook is a failure that does not block), so
``codex install`` and ``gemini install`` give the events an approval may hold a timeout past the
longest approval in the hooks file, as ``claude-code install`` does. Before, both wrote 30 s: an
approval of 31 s with ``default: deny``, nobody answering, was cut off at 30 s and the scripted
``rm -r victim`` ran.

The real-CLI test takes 35-50 s: only an approval held past the CLIs' former 30 s shows that
the CLI still waits, so both CLIs wait at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import hooks_path, install_agent
from tests.coding_agents_cli._runs import (
    CODEX,
    GEMINI,
    SERVE_TOKEN,
    SERVE_URL,
    CliRun,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(150)

WAIT_S = 31  # past the 30 s both installs wrote before
APPROVAL = f"""\
hooks:
  - id: ask-first
    type: PreToolUse
    matcher: "@shell"
    approval:
      timeout: {WAIT_S}
      default: deny
      url: {SERVE_URL}
"""
# each CLI's events an approval may hold, and the unit of its timeouts
HELD = {"codex": (("PreToolUse", "PermissionRequest", "UserPromptSubmit"), 1)}
HELD["gemini"] = (("BeforeTool", "BeforeAgent"), 1000)


def _timeouts(dialect: str, project: Path) -> dict[str, int]:
    data = json.loads(hooks_path(dialect, project=project).read_text())
    return {event: groups[0]["hooks"][0]["timeout"] for event, groups in data["hooks"].items()}


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_install_waits_past_the_longest_approval(dialect: str, tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text(APPROVAL)
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    held, unit = HELD[dialect]
    timeouts = _timeouts(dialect, tmp_path)
    assert {event: timeouts[event] for event in held} == dict.fromkeys(held, (WAIT_S + 15) * unit)
    assert {t for event, t in timeouts.items() if event not in held} <= {3 * unit, 30 * unit}


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_without_an_approval_the_timeouts_stay_30_s(dialect: str, tmp_path: Path) -> None:
    guard = APPROVAL.split("    approval:")[0] + "    command: 'true'\n"
    (tmp_path / "hooks.yaml").write_text(guard)
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    held, unit = HELD[dialect]
    assert {_timeouts(dialect, tmp_path)[event] for event in held} == {30 * unit}


def test_a_hooks_file_that_hangs_as_it_loads_does_not_hang_install(tmp_path: Path) -> None:
    """Reading the approvals loads the hooks file, which imports its script guards: one that
    hangs as it is imported (a policy fetched from a host that does not answer) is given 5 s,
    then install goes on with 30 s and says why."""
    (tmp_path / "policy.py").write_text("import time\ntime.sleep(3600)\n")
    hooks = (
        'hooks:\n  - {id: policy, type: PreToolUse, matcher: "@shell", script: policy.py:guard}\n'
    )
    (tmp_path / "hooks.yaml").write_text(hooks)
    # its own process: the hung import holds the script loader's lock while the process lives
    command = [sys.executable, "-m", "otelhooks", "codex", "install", "--project", str(tmp_path)]
    done = subprocess.run(
        [*command, "--hooks", str(tmp_path / "hooks.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert _timeouts("codex", tmp_path)["PreToolUse"] == 30
    assert "did not load within 5 s" in done.stdout + done.stderr


def _wait_for_nobody(dialect: str, root: Path) -> tuple[Path, CliRun]:
    """One CLI's run in ``root``: an approval of 31 s that nobody answers holds its ``rm``."""
    project = root / "project"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    (project / "hooks.yaml").write_text(APPROVAL)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    env = {
        "OTELHOOKS_CLAUDE_STATE": str(root / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
        "OTELHOOKS_INGEST_TOKEN": SERVE_TOKEN,
    }
    home, steps, traces = root / "home", [("call_rm", "rm -r victim")], root / "t.jsonl"
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(
            project, home, steps, extra_env=env, timeout_s=90, serve_traces=traces, approvals=True
        )
    else:
        run = run_gemini(
            project, home, steps, extra_env=env, timeout_s=90, serve_traces=traces, approvals=True
        )
    return project, run


def test_the_real_clis_wait_for_an_approval_past_30_s(tmp_path: Path) -> None:
    """Codex CLI and Gemini CLI at once, each in its own namespace and folders: the 31 s that
    only a wait past the former 30 s shows are spent once, not once per CLI."""
    dialects = ("codex", "gemini")
    need_cli(CODEX)
    need_cli(GEMINI)
    with ThreadPoolExecutor(len(dialects)) as pool:
        started = {d: pool.submit(_wait_for_nobody, d, tmp_path / d) for d in dialects}
        runs = {d: future.result() for d, future in started.items()}
    for dialect, (project, run) in runs.items():
        assert run.returncode == 0, f"{dialect}: {skip_reason(run)}"
        # nobody answered: the approval's default denied at 31 s, and the CLI was still waiting
        assert (project / "victim" / "keep.txt").read_text() == "precious", dialect
        assert f"not approved (no answer within {WAIT_S}s)" in run.told(), dialect
