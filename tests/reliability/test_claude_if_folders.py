"""A Claude Code ``if`` rule on a file tool judges the path in the folder of the call.

``"if": "Edit(src/**)"`` is relative to the current folder, which Claude Code sends as the
event's ``cwd``; the bridge daemon runs in the folder of the event that started it, and serves
every later event of the project (one that ``cd build`` moved, another session). Real hook
client, daemon and one-process bridge processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks import load_config
from otelhooks import semconv as sc
from otelhooks.integrations.claude_code import hook_client
from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge
from tests.integrations._daemon_procs import REPO, client_env, daemon_pid, runtime_folder
from tests.replay.conftest import replay_main

FROZEN = "src is frozen"
SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Edit",
                "hooks": [
                    {
                        "type": "command",
                        "if": "Edit(src/**)",
                        "command": f"echo '{FROZEN}' >&2; exit 2",
                    }
                ],
            }
        ]
    }
}


def _edit(use_id: str, cwd: Path, path: str) -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "cwd": str(cwd),
        "tool_name": "Edit",
        "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
        "tool_use_id": use_id,
    }


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "build").mkdir()
    (project / "settings.json").write_text(json.dumps(SETTINGS))
    return project


def _answer(argv: list[str], folder: Path, env: dict[str, str], event: dict[str, Any]) -> str:
    """The deny reason the process run in ``folder`` answers ``event`` with ("" for none)."""
    done = subprocess.run(
        argv,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=60,
        check=False,
    )
    # Codex CLI's deny is exit 2 too (its reason on stderr), read whatever stdout holds
    denied = "codex" in argv and '"permissionDecision": "deny"' in done.stdout
    assert done.returncode == (2 if denied else 0), done.stderr
    if not done.stdout.strip():
        return ""
    return str(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"])


def test_the_daemon_judges_an_if_rule_in_the_folder_of_each_event(tmp_path: Path) -> None:
    # before: the daemon started by an event in build/ took `src/**` as build/src/**, and the
    # project's src/a.py, edited by the session back in the project, went through
    project = _project(tmp_path)
    argv = [sys.executable, "-I", "-S", hook_client.__file__, "--hooks", "settings.json"]
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        build = project / "build"
        assert _answer(argv, build, env, _edit("t1", build, str(build / "a.o"))) == ""
        daemon_pid(runtime)
        src = project / "src" / "a.py"
        assert _answer(argv, project, env, _edit("t2", project, str(src))) == FROZEN
        # and the folder the event names, not the one the CLI happens to run the hook in
        assert _answer(argv, build, env, _edit("t3", project, str(src))) == FROZEN
        assert _answer(argv, build, env, _edit("t4", build, str(build / "b.o"))) == ""


def test_the_one_process_bridge_judges_the_path_the_tool_edits(tmp_path: Path) -> None:
    # before: `..` kept `project/build/../src/a.py` out of src/**, a relative path was read
    # against the bridge's own folder, and so was every path once the session had moved
    project = _project(tmp_path)
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "settings.json"]
    env = client_env(project, tmp_path, PYTHONPATH=str(REPO))
    build = project / "build"
    for use_id, cwd, path in [
        ("t1", project, str(build / ".." / "src" / "a.py")),
        ("t3", project, "build/../src/a.py"),
        ("t4", project, str(project / "src" / "deep" / "a.py")),
    ]:
        assert _answer(argv, build, env, _edit(use_id, cwd, path)) == FROZEN, (cwd, path)
    for use_id, cwd, path in [
        ("t5", project, str(build / "src" / "a.py")),
        ("t7", project, "src/../build/a.o"),
    ]:
        assert _answer(argv, project, env, _edit(use_id, cwd, path)) == "", (cwd, path)


def test_replay_judges_an_if_rule_in_the_folder_of_the_recorded_call(tmp_path: Path) -> None:
    # before: replay read `src/**` against the folder it was run from (here the test's), so the
    # recorded edit of the project's src/a.py, which the live bridge denies, read "changes: none"
    project = _project(tmp_path)
    (project / "none.yaml").write_text("hooks: []\n")
    traces = tmp_path / "traces.jsonl"
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "none.yaml"]
    argv += ["--traces-out", str(traces)]
    env = client_env(project, tmp_path, PYTHONPATH=str(REPO), **{sc.ENV_CAPTURE_CONTENT: "true"})
    # the edit the rule covers, then one it does not (so the rule judged the recorded path)
    for use_id, path in [("t1", project / "src" / "a.py"), ("t2", project / "build" / "a.o")]:
        edit = _edit(use_id, project, str(path))
        assert _answer(argv, project, env, edit) == ""
        done = {**edit, "hook_event_name": "PostToolUse", "tool_response": {"success": True}}
        assert _answer(argv, project, env, done) == ""
    assert Path.cwd() != project
    run = replay_main(traces, "--hooks", project / "settings.json", "--format", "json")
    # replay lists the calls whose verdict changed: the src/ edit only, of the two it judged
    replayed = run.one("event", event="before_tool_call")
    assert replayed["now"]["decision"] == "deny", run.stdout + run.stderr
    assert (run.one("tool", tool="Edit")["seen"], replayed["now"]["reason"]) == (2, FROZEN)


def test_a_path_from_the_home_folder_is_judged_where_the_tool_writes(tmp_path: Path) -> None:
    # before: `~/.ssh/authorized_keys` (which Claude Code's tools write in the home folder) was
    # read as a file of the project, `Write(~/.ssh/**)` did not match, and the write ran
    project = _project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    rule = {"type": "command", "if": "Write(~/.ssh/**)", "command": "echo no >&2; exit 2"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [rule]}]}}
    (project / "settings.json").write_text(json.dumps(settings))
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "settings.json"]
    env = client_env(project, tmp_path, PYTHONPATH=str(REPO), HOME=str(home))
    answers = []
    for use_id, path in [("t1", "~/.ssh/authorized_keys"), ("t2", "~/notes.txt")]:
        write = _edit(use_id, project, path) | {"tool_name": "Write"}
        answers.append(_answer(argv, project, env, write))
    assert answers == ["no", ""]


PATCH = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** End Patch\n"


def test_an_if_rule_on_edit_still_guards_codex_apply_patch(tmp_path: Path) -> None:
    # Codex CLI runs a hook whose matcher is `Edit` on its apply_patch, and so does the bridge;
    # before, the handler's `if: Edit(src/**)` then read the tool name apply_patch, matched
    # nothing, skipped the guard, and the patch of src/a.py ran
    project = _project(tmp_path)
    argv = [sys.executable, "-m", "otelhooks", "codex", "--hooks", "settings.json"]
    env = client_env(project, tmp_path, PYTHONPATH=str(REPO))
    patch = {
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "cwd": str(project),
        "turn_id": "turn-1",
        "tool_name": "apply_patch",
        "tool_input": {"command": PATCH},
        "tool_use_id": "call-1",
    }
    assert _answer(argv, project, env, patch) == FROZEN
    shell = patch | {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c-2"}
    assert _answer(argv, project, env, shell) == ""  # the matcher is Edit's: no other tool


def test_a_command_hook_runs_in_the_folder_of_the_cli_that_asked(tmp_path: Path) -> None:
    # before: one daemon served every folder of the project, and ran `./guard.sh` in the folder
    # of the event that started it (build/): the guard was not found there, "a hook failed and
    # did not decide", and the project's rm -rf went through where the one-process bridge denies
    project = tmp_path / "project"
    (project / "build").mkdir(parents=True)
    guard = project / "guard.sh"
    guard.write_text("#!/bin/sh\necho 'guard.sh says no' >&2\nexit 2\n")
    guard.chmod(0o755)
    command = {"type": "command", "command": "./guard.sh"}
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [command]}]}
    (project / "settings.json").write_text(json.dumps({"hooks": hooks}))
    argv = [sys.executable, "-I", "-S", hook_client.__file__]
    argv += ["--hooks", str(project / "settings.json")]

    def rm(use_id: str, cwd: Path) -> dict[str, Any]:
        return {
            "session_id": "s-1",
            "hook_event_name": "PreToolUse",
            "cwd": str(cwd),
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf x"},
            "tool_use_id": use_id,
        }

    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        build = project / "build"
        done = subprocess.run(
            argv,
            input=json.dumps(rm("t1", build)),
            capture_output=True,
            text=True,
            env=env,
            cwd=build,
            timeout=60,
            check=False,
        )
        assert "guard.sh" in done.stderr  # not found in build/, as in Claude Code's own run
        daemon_pid(runtime)
        assert _answer(argv, project, env, rm("t2", project)) == "guard.sh says no"


def test_a_rule_from_the_project_root_is_judged_there_after_a_cd(tmp_path: Path) -> None:
    # Claude Code 2.1.332 reads `Edit(/src/**)` from the folder it started in (its
    # CLAUDE_PROJECT_DIR), also once a `cd build` moved the session (the event's cwd), and
    # `Edit(./src/**)` from the session's folder. Before, the bridge read both from the cwd:
    # after `cd build`, an edit of the project's src/a.py went through, and build/src/a.py was
    # denied; replay judged as the bridge did
    project = _project(tmp_path)
    rule = {"type": "command", "if": "Edit(/src/**)", "command": f"echo '{FROZEN}' >&2; exit 2"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [rule]}]}}
    (project / "settings.json").write_text(json.dumps(settings))
    build = project / "build"
    traces = tmp_path / "traces.jsonl"
    client = [sys.executable, "-I", "-S", hook_client.__file__, "--hooks", "settings.json"]
    bridge = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "settings.json"]
    bridge += ["--traces-out", str(traces)]
    with runtime_folder() as runtime:
        env = client_env(project, runtime, **{sc.ENV_CAPTURE_CONTENT: "true"})
        for argv in (client, bridge):
            for use_id, path, said in [
                ("t1", project / "src" / "a.py", FROZEN),
                ("t2", build / "src" / "a.py", ""),
            ]:
                edit = _edit(f"{use_id}-{len(argv)}", build, str(path))
                assert _answer(argv, build, env, edit) == said, (argv[2], path)
                done = {**edit, "hook_event_name": "PostToolUse", "tool_response": {}}
                _answer(argv, build, env, done)
    run = replay_main(traces, "--hooks", project / "settings.json", "--format", "json")
    # nothing changed: replay denies the project's src/a.py and lets build/src/a.py through
    assert run.one("tool", tool="Edit")["deny"] >= 1, run.stdout + run.stderr
    assert run.one("summary")["changes"] == {}, run.stdout


def test_a_folder_link_does_not_take_an_edit_out_of_its_rule(tmp_path: Path) -> None:
    # Claude Code 2.1.332 edits through a link to a folder (src/out -> outside), matching its
    # `if` rules on the path as written (checked with the real CLI). Before, so did the bridge:
    # the guard narrowed to the outside folder, or to src/, was skipped for an edit that landed
    # there through a link, and the edit ran
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "src" / "out").symlink_to(outside)
    (project / "build" / "src").symlink_to(project / "src")
    rules = [f"Edit(/{outside}/**)", "Edit(src/**)"]
    handlers = [
        {"type": "command", "if": rule, "command": f"echo '{rule}' >&2; exit 2"} for rule in rules
    ]
    settings = {"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": handlers}]}}
    (project / "settings.json").write_text(json.dumps(settings))
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "settings.json"]
    env = client_env(project, tmp_path, PYTHONPATH=str(REPO))
    said = [
        _answer(argv, project, env, _edit(use_id, project, path))
        for use_id, path in [
            ("t1", "src/out/passwd"),  # lands outside (and is written under src/)
            ("t2", "build/src/a.py"),  # lands in src/
            ("t3", "build/a.o"),  # no link: neither rule
        ]
    ]
    assert said == [rules[0], rules[1], ""], said


def test_a_bridge_serving_many_projects_never_reads_its_own_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # serve's route (a bridge built without a project folder) serves every developer's sessions:
    # a `CLAUDE_PROJECT_DIR` in its own environment (serve started from a Claude Code session)
    # names none of theirs. Before, every session's `Edit(/src/**)` was read under that folder,
    # and an edit of the session's own src/a.py went through
    project = _project(tmp_path)
    rule = {"type": "command", "if": "Edit(/src/**)", "command": f"echo '{FROZEN}' >&2; exit 2"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [rule]}]}}
    (project / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "serve-started-here"))
    bridge = CodingAgentBridge(
        hooks=load_config([project / "settings.json"]).hooks,
        state=BridgeState(str(tmp_path / "state.sqlite3")),
        capture=False,
    )
    try:
        answer = bridge.handle(_edit("t1", project, str(project / "src" / "a.py")))
    finally:
        bridge.close()
    assert FROZEN in answer.stdout + answer.stderr, answer
