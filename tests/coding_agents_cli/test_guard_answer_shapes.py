"""A guard's deny in a shape the CLI does not read, with the real Codex CLI and Gemini CLI.

A command guard that prints its deny inside a JSON array, as a JSON string, spelled ``"Block"``
or ``"DENY"``, as ``"continue": "false"``, or on stderr with nothing on stdout, meant to stop
the call. Run as the CLI's own hook, Codex CLI 0.171 and Gemini CLI 0.61 ran the scripted
``rm -r`` after each of them (Gemini CLI reads the JSON string and the stderr answer; the
controls below keep the array's column of the table in ``docs/adapters.md`` honest), and so did
the bridge: it read them as plain text or as a failure, and the folder was deleted. The bridge
now denies each, the reason saying where the deny was read from; an answer whose intent is not
plain (``"decision": 2``) stays a failure, said on Gemini CLI's stderr, and under
``--fail-closed`` it denies.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CODEX,
    GEMINI,
    CliRun,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(400)

DENY = {"decision": "block", "reason": "no rm here"}
# what the guard prints for a call that holds `rm -r`: (stdout, stderr)
SHAPES = {
    "array": (json.dumps([DENY]), ""),
    "json-string": (json.dumps(json.dumps(DENY)), ""),
    "decision-Block": (json.dumps({**DENY, "decision": "Block"}), ""),
    "decision-DENY": (json.dumps({**DENY, "decision": "DENY"}), ""),
    "continue-string-false": (json.dumps({"continue": "false", "stopReason": "no rm here"}), ""),
    "on-stderr": ("", json.dumps(DENY)),
}
GUARD = """\
import json, sys

SHAPES = json.loads({shapes!r})
if "rm -r" in sys.stdin.read():
    out, err = SHAPES[sys.argv[1]]
    sys.stdout.write(out)
    sys.stderr.write(err)
"""
STEPS = [("call_rm", "rm -r victim")]


def _guard(project: Path) -> Path:
    path = project / "guard.py"
    ask = json.dumps({"decision": "ask", "reason": "sure?"})
    more = {"number": ('{"decision": 2}', ""), "ask": (ask, "")}
    path.write_text(GUARD.format(shapes=json.dumps(SHAPES | more)))
    return path


def _run(dialect: str, project: Path, tmp_path: Path, shape: str, *, fail_closed: bool) -> CliRun:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    command = f"{sys.executable} {_guard(project)} {shape}"
    hooks = "hooks:\n  - id: shapes\n    type: PreToolUse\n    matcher: '@shell'\n"
    (project / "hooks.yaml").write_text(hooks + f"    command: {json.dumps(command)}\n")
    install_agent(dialect, project=project, hooks_file="hooks.yaml", fail_closed=fail_closed)
    home = tmp_path / "home"
    env = bridge_env(tmp_path)
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, STEPS, extra_env=env)
    else:
        run = run_gemini(project, home, STEPS, extra_env=env, timeout_s=240)
    assert run.returncode == 0, skip_reason(run)
    return run


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_deny_in_a_shape_the_cli_does_not_read_still_denies(
    project: Path, tmp_path: Path, dialect: str, shape: str
) -> None:
    run = _run(dialect, project, tmp_path, shape, fail_closed=False)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    # the model (and the span) are told where the deny was read from; a stop Gemini CLI can
    # make (`continue: false`) ends the run there, with no request after the call
    told = run.told() or run.stdout + run.stderr
    assert "no rm here" in told
    assert "[otelhooks: read from" in told


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_an_answer_of_no_plain_intent_is_denied_under_fail_closed(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    run = _run(dialect, project, tmp_path, "number", fail_closed=True)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    told = run.told()
    assert "otelhooks could not check this tool call (fail-closed)" in told
    assert "'decision' must be a string, not int" in told


def test_gemini_says_why_a_fail_open_guard_answered_nothing_it_reads(
    project: Path, tmp_path: Path
) -> None:
    run = _run("gemini", project, tmp_path, "number", fail_closed=False)
    assert not (project / "victim").exists()  # fail open, as chosen: but never silently
    assert "otelhooks: a hook failed and did not decide: shapes" in run.stderr
    assert "'decision' must be a string, not int" in run.stderr


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_control_the_cli_itself_runs_the_call_after_a_deny_in_an_array(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    """The guard as the CLI's own hook, no otelhooks: the CLI ignores the array."""
    need_cli(CODEX if dialect == "codex" else GEMINI)
    command = f"{sys.executable} {_guard(project)} array"
    home = tmp_path / "home"
    handler = {"type": "command", "command": command, "timeout": 10}
    if dialect == "codex":
        codex_config(home, trusted=project)
        group = {"matcher": "Bash", "hooks": [handler]}
        (home / ".codex" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [group]}}))
        run = run_codex(project, home, STEPS)
    else:
        group = {"matcher": "run_shell_command", "hooks": [{**handler, "timeout": 10_000}]}
        run = run_gemini(project, home, STEPS, settings={"hooks": {"BeforeTool": [group]}})
    assert run.returncode == 0, skip_reason(run)
    assert not (project / "victim").exists()


CAPTURED = Path(__file__).parent / "captured"


@pytest.mark.parametrize("mode", ["enforce", "permissive"])
def test_fail_closed_denies_for_a_failing_guard_but_a_permissive_one(
    tmp_path: Path, mode: str
) -> None:
    """The bridge Codex runs, with a guard process that answers ``"decision": 2``: under
    ``--fail-closed`` the call is denied, unless the guard is permissive (it never blocks)."""
    from otelhooks.integrations.claude_code import BridgeOptions, run_hook

    command = f"{sys.executable} {_guard(tmp_path)} number"
    hooks = f"hooks:\n  - id: shapes\n    type: PreToolUse\n    mode: {mode}\n"
    (tmp_path / "hooks.yaml").write_text(hooks + f"    command: {json.dumps(command)}\n")
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="codex",
        fail_closed=True,
    )
    event = json.loads((CAPTURED / "codex-PreToolUse.json").read_text())
    event["tool_input"] = {"command": "rm -r victim"}
    answer = run_hook(json.dumps(event), options, environ={})
    if mode == "permissive":
        assert answer.exit_code == 0
        assert "deny" not in answer.stdout
        return
    assert answer.exit_code == 2
    assert "otelhooks could not check this tool call (fail-closed)" in answer.stderr


def test_geminis_own_ask_is_a_deny_codex_reads(project: Path, tmp_path: Path) -> None:
    """``{"decision": "ask"}``, Gemini CLI's ask, was a failure: the call ran. Codex CLI
    cannot ask, so it is a deny there (Gemini CLI is answered its own ask, below)."""
    run = _run("codex", project, tmp_path, "ask", fail_closed=False)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "sure?; Codex CLI cannot ask a person, so otelhooks denies it" in run.told()


def test_geminis_own_ask_is_answered_to_gemini_as_its_ask(tmp_path: Path) -> None:
    from otelhooks.integrations.claude_code import BridgeOptions, run_hook

    command = f"{sys.executable} {_guard(tmp_path)} ask"
    hooks = "hooks:\n  - id: shapes\n    type: PreToolUse\n"
    (tmp_path / "hooks.yaml").write_text(hooks + f"    command: {json.dumps(command)}\n")
    options = BridgeOptions(
        hooks=(str(tmp_path / "hooks.yaml"),),
        state=str(tmp_path / "state.sqlite3"),
        dialect="gemini",
    )
    event = json.loads((CAPTURED / "gemini-BeforeTool.json").read_text())
    event["tool_input"] = {"command": "rm -r victim"}
    answer = run_hook(json.dumps(event), options, environ={})
    assert json.loads(answer.stdout) == {"decision": "ask", "reason": "sure?"}
