"""``otelhooks validate`` finds everything it can in one run (issue 14, deliverable 4): every
problem of every hook, invalid regex matchers located (a warning; an error with ``--strict``),
"did you mean" for unknown fields, and no full list of event names on a typo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks.testing import run_cli


@pytest.fixture(autouse=True)
def _keep_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


def validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = run_cli("validate", *argv)
    return code, capsys.readouterr().out.splitlines()


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


FIVE = """\
hooks:
  - id: a
    type: afterStp
    command: 'true'
    timeout: -5
  - id: b
    type: afterStep
  - id: d
    type: beforeToolCall
    matchr: "x"
    command: 'true'
    on_error: explode
"""


def test_a_file_with_five_problems_reports_five(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "five.yaml", FIVE)
    code, lines = validate(capsys, path)
    assert code == 1
    assert lines[0] == f"FAIL {path} [hook_list]: 5 problems"
    assert lines[1:6] == [
        f"  {path}:3, hook 'a', field 'type': unknown event 'afterStp'. Did you mean "
        "'afterStep'? (`otelhooks events` lists every name)",
        f"  {path}:5, hook 'a', field 'timeout': Input should be greater than or equal to 0.001",
        f"  {path}:6, hook 'b', field 'handler': a hook needs an action: handler, command, "
        "script, plugin, webhook, approval or budget",
        f"  {path}:10, hook 'd', field 'matchr': unknown field; did you mean 'matcher'?",
        f"  {path}:12, hook 'd', field 'on_error': Input should be 'continue' or 'block'",
    ]
    assert lines[-1] == "1 file, 0 hooks, 5 problems"


def test_a_timeout_no_action_can_meet_is_a_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Before, ``timeout: 1e-300`` passed: every run of the guard timed out, and under
    # ``on_error: continue`` each call went on as if the guard had said nothing
    path = write(
        tmp_path / "tiny.yaml",
        "- id: guard\n  type: beforeToolCall\n  command: 'exit 2'\n  timeout: 1e-300\n"
        "- id: w\n  type: onComplete\n  webhook:\n    url: http://127.0.0.1:9/\n"
        "    timeout: 0.0009\n",
    )
    code, lines = validate(capsys, path)
    assert code == 1
    assert lines[1:3] == [
        f"  {path}:4, hook 'guard', field 'timeout': Input should be greater than or equal"
        " to 0.001",
        f"  {path}:9, hook 'w', field 'webhook.timeout': Input should be greater than or equal"
        " to 0.001",
    ]


def test_a_hook_with_two_bad_fields_reports_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "two.json",
        '[{"id": "x", "type": "beforeToolCal",\n "command": "true", "intercept": "maybe"}]\n',
    )
    code, lines = validate(capsys, path)
    assert code == 1
    assert lines[0].endswith("2 problems")
    assert "field 'type'" in lines[1]
    assert "field 'intercept'" in lines[2]


def test_every_field_of_a_webhook_is_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "wh.yaml",
        "- id: w\n  type: onComplete\n  webhook:\n    urll: http://127.0.0.1:9/\n    timeout: -1\n",
    )
    code, lines = validate(capsys, path)
    assert code == 1
    assert lines[0].endswith("3 problems")
    text = "\n".join(lines)
    assert "field 'webhook.url': Field required" in text
    assert f"{path}:5, hook 'w', field 'webhook.timeout'" in text
    assert f"{path}:4, hook 'w', field 'webhook.urll': unknown field; did you mean 'url'?" in text


def test_problems_of_several_files_are_all_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = write(tmp_path / "a.yaml", FIVE)
    second = write(tmp_path / "b.json", '[{"id": "z", "type": "nope_nothing_like_it"}]')
    code, lines = validate(capsys, first, second)
    assert code == 1
    assert f"FAIL {second} [hook_list]: 2 problems" in lines
    assert lines[-1] == "2 files, 0 hooks, 7 problems"


def test_an_invalid_regex_is_a_located_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "rx.yaml",
        "hooks:\n  - id: guard\n    type: beforeToolCall\n    matcher: '^shell/(exec'\n"
        "    command: 'true'\n",
    )
    code, lines = validate(capsys, path)
    assert code == 0
    assert lines[0] == f"OK   {path} [hook_list]: 1 hook, 1 warning"
    assert lines[1].startswith(
        f"  warning: {path}:4, hook 'guard', field 'matcher': invalid regex (missing ), "
        "unterminated subpattern at position 7): at run time this matcher falls back to "
        "matching the exact text '^shell/(exec'"
    )
    assert lines[-1] == "1 file, 1 hook, 0 problems, 1 warning"


def test_strict_makes_an_invalid_regex_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "rx.json",
        '[{"id": "guard", "type": "PreToolUse",\n  "matcher": "/(a/", "command": "true"}]',
    )
    code, lines = validate(capsys, "--strict", path)
    assert code == 1
    assert lines[0] == f"FAIL {path} [hook_list]: 1 problem"
    assert f"{path}:2, hook 'guard', field 'matcher': invalid regex" in lines[1]


def test_valid_regexes_and_names_give_no_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "ok.yaml",
        "- {id: a, type: beforeToolCall, matcher: '^fs/', command: 'true'}\n"
        "- {id: b, type: PreToolUse, matcher: 'Edit|Write', command: 'true'}\n"
        "- {id: c, type: beforeToolCall, matcher: '/^shell/', command: 'true'}\n",
    )
    code, lines = validate(capsys, "--strict", path)
    assert code == 0
    assert lines[-1] == "1 file, 3 hooks, 0 problems"


def test_an_event_typo_does_not_print_every_event_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "typo.yaml", "- {id: a, type: afterToolCal, command: 'true'}\n")
    code, lines = validate(capsys, path)
    assert code == 1
    assert "Did you mean 'afterToolCall'?" in lines[1]
    assert "PreToolUse" not in lines[1]
    assert len(lines[1].replace(str(path), "FILE")) < 160  # the path's length is pytest's


PROMPT_GUARD = """\
{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
  {"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS"},
  {"type": "command", "command": "true"}
]}]}}
"""


def test_a_claude_guard_otelhooks_skips_is_a_counted_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A ``prompt`` guard of a Claude Code settings file never runs under otelhooks (the bridge
    lets ``rm -rf`` through). validate said "OK, 0 warnings" (the skip was a Python warning on
    stderr, gone under ``-W ignore``), and ``--strict`` passed."""
    path = write(tmp_path / "settings.json", PROMPT_GUARD)
    live = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", path],
        input=json.dumps(
            {
                "session_id": "s",
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "rm -rf /"},
                "tool_use_id": "u",
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3")},
        check=False,
    )
    assert (live.returncode, live.stdout) == (0, "")  # allowed: the prompt guard did not run
    code, lines = validate(capsys, path)
    assert code == 0
    assert lines[0] == f"OK   {path} [claude_settings]: 1 hook, 1 warning"
    assert lines[1].startswith(f"  warning: {path}:2: hook settings:PreToolUse[0].hooks[0]: ")
    assert lines[1].endswith("a prompt handler needs Claude Code's model: otelhooks skips it")
    assert lines[-1] == "1 file, 1 hook, 0 problems, 1 warning"
    code, lines = validate(capsys, "--strict", path)
    assert code == 1
    assert lines[0] == f"FAIL {path} [claude_settings]: 1 problem"


def test_a_permission_rule_as_a_matcher_is_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``"matcher": "Bash(git:*)"`` reads as a guard on git commands, and never matches Bash,
    in Claude Code (a matcher names tools) as in the bridge: ``git push`` went through while
    validate said OK. The rule belongs in the handler's ``if``; a regex that matches the tool
    (``Bash(.*)``) is no warning."""
    path = write(
        tmp_path / "settings.json",
        '{"hooks": {"PreToolUse": [{"matcher": "Bash(git:*)", "hooks": ['
        '{"type": "command", "command": "echo no git >&2; exit 2"}]}, '
        '{"matcher": "Bash(.*)", "hooks": [{"type": "command", "command": "true"}]}]}}',
    )
    live = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", path],
        input=json.dumps(
            {
                "session_id": "s",
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "git push --force"},
                "tool_use_id": "u",
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3")},
        check=False,
    )
    assert (live.returncode, live.stdout) == (0, "")  # allowed: the guard never fired
    code, lines = validate(capsys, path)
    assert code == 0
    assert lines[0] == f"OK   {path} [claude_settings]: 2 hooks, 1 warning"
    assert "PreToolUse[0].hooks[0] (before_tool_call): matcher never matches: " in lines[1]
    assert "'Bash(git:*)' is a permission rule, not a tool name" in lines[1]
    code, _ = validate(capsys, "--strict", path)
    assert code == 1
