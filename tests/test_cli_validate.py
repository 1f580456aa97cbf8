"""``otelhooks validate`` and ``otelhooks hooks test``, and the examples with ``otelhooks demo``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.testing import run_cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLE_FOLDERS = [
    EXAMPLES / "workspaces" / "demo-workspace" / "hooks",
    EXAMPLES / "agent-os" / "hooks",
    EXAMPLES / "lobehub",
    EXAMPLES / "kernel-app",
]


@pytest.fixture(autouse=True)
def _keep_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # dll_hook plugin folders are added to it


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = run_cli(*argv)
    return code, capsys.readouterr().out


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- validate --------------------------------------------------------------------------------------


def test_validate_accepts_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "validate", *map(str, EXAMPLE_FOLDERS))
    assert code == 0, out
    lines = out.splitlines()
    assert all(line.startswith("OK ") for line in lines[:-1])
    assert len(lines) - 1 == 7  # one line per file
    assert lines[-1].endswith("0 problems")


def test_validate_prints_one_ok_line_per_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "hooks.yaml", "- {id: a, type: afterStep, command: 'true'}\n")
    code, out = run(capsys, "validate", str(path))
    assert code == 0
    assert out.splitlines()[0] == f"OK   {path} [hook_list]: 1 hook"


def test_validate_names_file_line_hook_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "ws" / "hooks" / "a.hook.json",
        '{"name": "a",\n "hooks": {"PreToolUse": [\n'
        '  {"type": "command", "command": "true", "timeout": 60000}\n]}}\n',
    )
    code, out = run(capsys, "validate", str(path))
    assert code == 1
    assert f"{path}:3, hook 'a:PreToolUse[0]', field 'timeout':" in out


def test_validate_prints_every_problem_of_every_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = write(tmp_path / "good.yaml", "kind: agent_events\n")
    bad = write(
        tmp_path / "bad.yaml",
        "hooks:\n  - {id: a, type: afterStp, command: 'true'}\n  - {id: b, type: afterStep}\n",
    )
    broken = write(tmp_path / "broken.json", '{"hooks": [\n')
    code, out = run(capsys, "validate", str(good), str(bad), str(broken))
    assert code == 1
    assert f"OK   {good}" in out
    assert f"FAIL {bad} [hook_list]: 2 problems" in out
    assert "hook 'a', field 'type'" in out
    assert "hook 'b', field 'handler'" in out
    assert f"FAIL {broken} [?]: 1 problem" in out
    assert out.splitlines()[-1] == "3 files, 0 hooks, 3 problems"


def test_validate_reports_a_skipped_disabled_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "off.hook.json", '{"name": "off", "enabled": false, "hooks": {}}')
    code, out = run(capsys, "validate", str(path))
    assert code == 0
    assert "skipped: disabled" in out


def test_validate_fails_a_claude_settings_file_claude_code_ignores_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Claude Code 2.1.332 skips a settings file whose known setting has the wrong type, hooks
    # and all (tests/claude_code_cli/test_odd_neighbour_handlers.py); validate said OK
    settings = tmp_path / ".claude" / "settings.json"
    url = "http://127.0.0.1:4319"
    assert run(capsys, "claude-code", "install", "--project", str(tmp_path), "--http", url)[0] == 0
    assert run(capsys, "validate", str(settings))[0] == 0
    written = json.loads(settings.read_text())
    odd = {"model": 5, "permissions": {"allow": "Bash"}, "effortLevel": 5, "mine": 1}
    settings.write_text(json.dumps({**written, **odd}))
    code, out = run(capsys, "validate", str(settings))
    assert code == 1
    assert f'{settings}: "model" is 5, not a string: Claude Code ignores this whole file' in out
    assert '"permissions.allow" is "Bash", not a list of strings' in out
    # a value the CLI drops (effortLevel) and a key it does not know: the file is still read
    assert '"effortLevel"' not in out
    assert '"mine"' not in out
    assert "2 problems" in out


def test_validate_warns_when_an_approval_outlasts_claude_code_s_hook_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # install wrote a timeout covering the 60 s approval; the approval then grew to 300 s.
    # Claude Code would give up at 75 s and (a timed-out hook does not block) run the tool
    hooks = write(
        tmp_path / ".claude" / "otelhooks.yaml",
        "hooks:\n  - id: ask\n    type: PreToolUse\n    matcher: Bash\n"
        "    approval: {timeout: 60, default: deny}\n",
    )
    settings = tmp_path / ".claude" / "settings.json"
    url = "http://127.0.0.1:4319"
    assert run(capsys, "claude-code", "install", "--project", str(tmp_path), "--http", url)[0] == 0
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == 75
    code, out = run(capsys, "validate", str(settings), str(hooks))
    assert (code, "warning" in out) == (0, False)
    hooks.write_text(hooks.read_text().replace("timeout: 60", "timeout: 300"))
    code, out = run(capsys, "validate", str(settings), str(hooks))
    assert code == 0
    assert (
        "warning: PreToolUse: the otelhooks hook's timeout (75 s) is shorter than an approval "
        "validated with it may hold the call (300 s)"
    ) in out
    assert "it writes 315 s" in out
    assert run(capsys, "validate", "--strict", str(settings), str(hooks))[0] == 1


def test_validate_warns_of_a_project_path_rule_served_over_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Claude Code's HTTP hook input names the event's cwd, never the project's folder: serve's
    # route reads `/src/**` under the cwd, so after `cd build` an edit of src/a.py skips the guard
    settings = tmp_path / ".claude" / "settings.json"
    guards = [
        {"type": "command", "command": "exit 2", "if": "Edit(/src/**)"},
        {"type": "command", "command": "exit 2", "if": "Edit(//etc/**)"},
    ]
    user = {"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": guards}]}}
    write(settings, json.dumps(user))
    assert run(capsys, "claude-code", "install", "--project", str(tmp_path))[0] == 0
    code, out = run(capsys, "validate", str(settings))
    assert (code, "warning" in out) == (0, False)  # the command form reads $CLAUDE_PROJECT_DIR
    write(settings, json.dumps(user))
    url = "http://127.0.0.1:4319"
    assert run(capsys, "claude-code", "install", "--project", str(tmp_path), "--http", url)[0] == 0
    code, out = run(capsys, "validate", str(settings))
    assert code == 0
    (warning,) = [line for line in out.splitlines() if "warning:" in line]
    assert "if 'Edit(/src/**)' names a path under the project's folder" in warning
    assert "serve's route reads it under the event's cwd" in warning
    assert run(capsys, "validate", "--strict", str(settings))[0] == 1


def test_validate_needs_a_path() -> None:
    assert run_cli("validate") == 2  # argparse's usage error


# -- hooks test ------------------------------------------------------------------------------------


def test_hooks_test_shows_a_command_deny(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(
        capsys,
        "hooks",
        "test",
        str(EXAMPLE_FOLDERS[0]),
        "--event",
        "PreToolUse",
        "--tool",
        "shell/exec",
        "--args",
        json.dumps({"cmd": "rm -rf /"}),
    )
    assert code == 0, out
    assert "- audit:PreToolUse[0] [command]: blocked" in out
    assert "exit 2" in out
    assert "decision: deny" in out
    assert "verdict: blocked by audit:PreToolUse[0]: rm -rf is not allowed" in out


def test_hooks_test_shows_an_allow_with_updated_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"n": 2}}}
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    path = write(
        tmp_path / "hooks.yaml",
        f"- {{id: fix, type: PreToolUse, command: [cat, '{tmp_path / 'answer.json'}']}}\n",
    )
    code, out = run(capsys, "hooks", "test", str(path), "--event", "PreToolUse", "--tool", "calc")
    assert code == 0, out
    assert "- fix [command]: rewritten" in out
    assert 'updatedInput: {"n": 2}' in out
    assert "verdict: allowed, rewritten by fix" in out


def test_hooks_test_runs_observers_and_reports_failures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "hooks.yaml",
        "- {id: ok, type: SessionEnd, command: 'echo bye'}\n"
        "- {id: bad, type: SessionEnd, command: 'echo oops >&2; exit 3'}\n",
    )
    code, out = run(capsys, "hooks", "test", str(path), "--event", "session_end")
    assert code == 1
    assert "- ok [command]: ok" in out
    assert "stdout: bye" in out
    assert "- bad [command]: error" in out
    assert "exited with 3: oops" in out


def test_hooks_test_builds_the_sample_event_from_the_payload_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "payload.json"
    path = write(
        tmp_path / "hooks.yaml",
        f"- {{id: p, type: UserPromptSubmit, command: 'cat > \"{out_file}\"'}}\n",
    )
    code, _ = run(capsys, "hooks", "test", str(path), "--event", "UserPromptSubmit")
    assert code == 0
    payload = json.loads(out_file.read_text())
    assert payload["hook_event_name"] == "UserPromptSubmit"
    assert payload["userMessage"] == "Sample prompt"
    assert payload["fullPrompt"].startswith("Sample prompt")


def test_hooks_test_with_no_matching_hook_exits_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "hooks.yaml", "- {id: a, type: PostToolUse, matcher: Edit, command: 'true'}\n"
    )
    code, out = run(capsys, "hooks", "test", str(path), "--event", "PostToolUse", "--tool", "Read")
    assert code == 1
    assert "no hook in these files matches PostToolUse" in out


def test_hooks_test_with_an_unknown_event_exits_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "hooks.yaml", "- {id: a, type: afterStep, command: 'true'}\n")
    code, out = run(capsys, "hooks", "test", str(path), "--event", "PreToolUze")
    assert code == 2
    assert "Did you mean 'PreToolUse'?" in out


# -- the examples in the demo ----------------------------------------------------------------------


def test_demo_runs_every_example_config(tmp_path: Path) -> None:
    args = [arg for folder in EXAMPLE_FOLDERS for arg in ("--hooks", str(folder))]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", "--quiet", "--traces-out",
         str(tmp_path / "t.jsonl"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "otelhooks-examples.log").read_text()
    for line in (
        "session start in demo-workspace",  # workspace command with HOOK_WORKSPACE_ID
        "tool failed: flaky/explode",  # workspace script rule
        "os-audit: readFile",  # agent-OS script_hook
        "echo_audit: research-assistant finished",  # agent-OS dll_hook plugin
        "fs call: readFile",  # LobeHub list command
        "agent_end op_",  # kernel app command
        "message received on chat",  # kernel app script
    ):
        assert line in log, f"{line!r} missing from the examples log:\n{log}"


@pytest.mark.parametrize(
    ("namespace", "matched"),
    [("db", "1 hook matches"), ("fs", "no hook in these files matches"), ("", "no hook")],
)
def test_hooks_test_matches_a_namespaced_tool_by_its_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, namespace: str, matched: str
) -> None:
    # hooks test could not say a guard on db.delete_file fires for the db namespace's call of
    # delete_file: it offered the bare name only, which the guard never names
    path = write(
        tmp_path / "hooks.yaml",
        "- {id: no-db, type: before_tool_call, matcher: db.delete_file, command: ['true']}\n",
    )
    ns = ["--namespace", namespace] if namespace else []
    code, out = run(
        capsys, "hooks", "test", str(path), "--event", "before_tool_call",
        "--tool", "cleaner/delete_file", *ns,
    )  # fmt: skip
    assert out.startswith(matched), out
    assert code == (1 if matched.startswith("no") else 0), out


def test_hooks_test_matches_a_namespaced_tool_by_its_bare_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "hooks.yaml",
        "- {id: no-delete, type: before_tool_call, matcher: delete_file, command: ['true']}\n",
    )
    code, out = run(
        capsys, "hooks", "test", str(path), "--event", "before_tool_call",
        "--tool", "cleaner/delete_file", "--namespace", "fs",
    )  # fmt: skip
    assert code == 0, out
    assert out.startswith("1 hook matches before_tool_call for cleaner/fs.delete_file"), out


def _guard_settings(seconds: int) -> str:
    # a guard in a Claude Code settings file given to the bridge as its hooks file
    guard = {"type": "command", "command": "sleep 1; exit 0", "timeout": seconds}
    return json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [guard]}]}})


def test_validate_warns_when_an_entry_is_shorter_than_the_guards_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """install wrote the entry's timeout (and --hook-timeout) for the guards of then; a guard
    of 90 s came later, or the entry's timeout was lowered by hand. Before, validate said
    nothing: the bridge cut the guard short at 25 s, or Claude Code ended the hook at its
    timeout and ran the tool."""
    guards = write(tmp_path / ".claude" / "guards.json", json.dumps({"hooks": {}}))
    settings = tmp_path / ".claude" / "settings.local.json"
    install = ("claude-code", "install", "--project", str(tmp_path))
    assert run(capsys, *install, "--hooks-file", ".claude/guards.json")[0] == 0
    entry = "hooks.PreToolUse[0].hooks[0] (the otelhooks hook)"
    guard = "hook guards:PreToolUse[0].hooks[0] may take (91 s, its own timeout)"
    # the settings file alone: the guards are read from the file its command names
    code, out = run(capsys, "validate", str(settings))
    assert (code, "warning" in out) == (0, False), out
    guards.write_text(_guard_settings(90))
    code, out = run(capsys, "validate", str(settings))
    assert code == 0
    assert (
        f"warning: {entry} is shorter than {guard}: timeout 30 s, --hook-timeout 30: the "
        "bridge stops waiting at 25 s and blocks the call; run `otelhooks claude-code install` "
        "again (it writes 106 s)"
    ) in out
    assert run(capsys, "validate", "--strict", str(settings))[0] == 1
    # install again covers the guard; the entry's timeout then lowered by hand to 10 s
    assert run(capsys, *install, "--hooks-file", ".claude/guards.json")[0] == 0
    code, out = run(capsys, "validate", str(settings), str(guards))
    assert (code, "warning" in out) == (0, False), out
    written = json.loads(settings.read_text())
    written["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 10
    settings.write_text(json.dumps(written))
    code, out = run(capsys, "validate", str(settings), str(guards))
    assert (
        f"warning: {entry} is shorter than {guard}: timeout 10 s, --hook-timeout 106: Claude "
        "Code ends the hook at 10 s, before the guards' time, and runs the tool unguarded"
    ) in out
    assert run(capsys, "validate", "--strict", str(settings), str(guards))[0] == 1
