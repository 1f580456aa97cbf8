"""Hostile input against guards: no tool argument, command output or matcher switches a deny off.

Real command processes and the real dispatch path (``AgentTracer.run_tool``); timings are
wall-clock ratios with generous bounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import otelhooks._matchers as matchers
from otelhooks import (
    AfterToolCallEvent,
    AgentEventsConfig,
    ConfigError,
    SqliteEventLog,
    ToolResult,
    load_config,
)
from otelhooks._actions._command import OUTPUT_CAP_BYTES, REASON_CAP_CHARS
from otelhooks._encoding import MAX_DEPTH
from otelhooks._eventlog import entry_from_event
from otelhooks._eventlog._agent_events import open_event_log
from otelhooks.testing import TestPipeline

EXAMPLE = Path(__file__).parents[2] / "examples/workspaces/demo-workspace/hooks/audit.hook.json"


def documented_guard() -> str:
    """The ``rm -rf`` guard of the workspace example, as the docs show it."""
    hooks = json.loads(EXAMPLE.read_text())["hooks"]["PreToolUse"]
    command: str = hooks[0]["command"]
    assert "rm -rf" in command
    return command


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def run(
    pipe: TestPipeline, args: dict[str, Any], name: str = "exec"
) -> tuple[ToolResult, list[Any]]:
    ran: list[Any] = []

    def tool(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "done"

    with pipe.tracer.operation("agent") as op, op.step() as step:
        result = step.run_tool("shell", name, args, tool)
    return result, ran


def denied(result: ToolResult) -> bool:
    return (result.state or {}).get("classification") == "hook_denied"


ATTACKS = {
    "over_64_kib": {"cmd": "x" * 100_000 + " rm -rf /"},
    "nested_300_deep": {"cmd": nested(300, "rm -rf /")},
    "nested_5000_deep": {"cmd": nested(5000, "rm -rf /")},
    "lone_surrogate": {"cmd": "rm -rf / \ud800"},
    "surrogate_in_a_key": {"\udfff": "rm -rf /"},
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_documented_guard_denies_whatever_the_input_shape(
    pipe: TestPipeline, attack: str
) -> None:
    pipe.register(
        {"id": "no-rm", "type": "PreToolUse", "command": documented_guard(), "on_error": "block"}
    )
    result, ran = run(pipe, ATTACKS[attack])
    assert ran == []
    assert denied(result)
    assert result.content == "rm -rf is not allowed in this workspace"


def test_a_variable_over_the_cap_says_so_and_points_to_stdin(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    script = (
        'import json, os, sys; json.dump({"input": os.environ["HOOK_TOOL_INPUT"], '
        '"truncated": os.environ["HOOK_TRUNCATED"], "stdin": len(sys.stdin.read())}, '
        f"open({str(seen)!r}, 'w'))"
    )
    pipe.register({"id": "look", "type": "PreToolUse", "command": ["python3", "-c", script]})
    run(pipe, {"cmd": "x" * 200_000})
    got = json.loads(seen.read_text())
    assert got["input"].startswith("[otelhooks:truncated HOOK_TOOL_INPUT 2000")
    assert got["input"].endswith("read the whole event on stdin]")
    assert "HOOK_TOOL_INPUT" in got["truncated"].split(",")
    assert got["stdin"] > 200_000  # the whole event, no size limit


def test_stdin_is_strict_utf8_json_of_bounded_depth_whatever_the_input(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    raw = tmp_path / "stdin.bin"
    pipe.register({"id": "keep", "type": "PreToolUse", "command": f"cat > {raw}"})
    args = {
        "nan": float("nan"),
        "inf": float("-inf"),
        "huge_int": 10**5000,
        "surrogate": "a\ud800b",
        "pair": "\ud83d\ude00",
        "deep": nested(5000, "rm -rf /"),
    }
    run(pipe, args)

    def no_constants(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    text = raw.read_bytes().decode("utf-8")  # strict: no lone surrogate reached the bytes
    document = json.loads(text, parse_constant=no_constants)
    tool_input = document["tool_input"]
    assert (tool_input["nan"], tool_input["inf"]) == (None, None)
    assert tool_input["huge_int"].startswith("0x")
    assert (tool_input["surrogate"], tool_input["pair"]) == ("a\ufffdb", "\U0001f600")
    depth, node = 0, tool_input["deep"]
    while isinstance(node, dict):
        depth, node = depth + 1, node["a"]
    assert depth < MAX_DEPTH  # deeper levels are a string of their JSON: any parser reads it
    assert isinstance(node, str)
    assert "rm -rf /" in node


def test_a_json_deny_over_the_output_cap_still_denies(pipe: TestPipeline, tmp_path: Path) -> None:
    reason = "no " * (OUTPUT_CAP_BYTES // 2)  # ~1.5 MiB of reason: the JSON is cut at the cap
    answer = {
        "hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": reason}
    }
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    pipe.register(
        {"id": "big-deny", "type": "PreToolUse", "command": f"cat {tmp_path}/answer.json"}
    )
    result, ran = run(pipe, {"cmd": "ls"})
    assert ran == []
    assert denied(result)
    assert isinstance(result.content, str)
    assert result.content.startswith("no no no")
    assert len(result.content) <= REASON_CAP_CHARS + 100
    assert "[otelhooks: cut" in result.content


def test_a_100_mb_stderr_deny_gives_a_reason_cut_to_the_documented_cap(pipe: TestPipeline) -> None:
    command = "head -c 100000000 /dev/zero | tr '\\0' r >&2; exit 2"
    pipe.register({"id": "loud-deny", "type": "PreToolUse", "command": command, "timeout": 30})
    result, ran = run(pipe, {"cmd": "ls"})
    assert ran == []
    assert denied(result)
    assert isinstance(result.content, str)
    assert result.content.startswith("rrrr")
    assert len(result.content) <= REASON_CAP_CHARS + 100
    assert result.content.endswith("[otelhooks: cut at 10000 of 100000000 bytes]")
    span = pipe.span("execute_tool exec")
    assert span.attributes is not None
    assert len(str(span.attributes["otelhooks.hook.decision_reason"])) <= REASON_CAP_CHARS + 100


def _dispatch_seconds(pipe: TestPipeline, name: str, rounds: int) -> float:
    started = time.perf_counter()
    for index in range(rounds):
        run(pipe, {}, name=f"{name}{index}")  # a new name each time: matches are cached
    return time.perf_counter() - started


def test_a_pathological_matcher_costs_about_what_a_plain_one_costs(pipe: TestPipeline) -> None:
    hostile_name = "a" * 27 + "!"  # (a+)+$ on it: 9 s on a backtracking engine (and "!0" ...)
    seen: list[str] = []
    pipe.register(
        {"id": "plain", "type": "beforeToolCall", "matcher": "^nothing$", "handler": seen.append},
        {"id": "evil", "type": "beforeToolCall", "matcher": "(a+)+$", "handler": seen.append},
    )
    _dispatch_seconds(pipe, "warm", 3)
    plain = _dispatch_seconds(pipe, "b" * 27 + "!", 20)  # no backtracking for either pattern
    hostile = _dispatch_seconds(pipe, hostile_name, 20)
    assert seen == []
    assert hostile < 5 * plain + 0.5, (plain, hostile)


def test_without_re2_a_backtracking_matcher_is_refused_naming_file_hook_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matchers, "_re2", None)
    path = tmp_path / "hooks.yaml"
    path.write_text(
        "hooks:\n"
        "  - id: fine\n    type: PreToolUse\n    matcher: '^fs/(readFile|writeFile)$'\n"
        "    command: 'true'\n"
        "  - id: evil\n    type: PreToolUse\n    matcher: '/(a+)+$/'\n    command: 'true'\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = str(caught.value)
    assert str(path) in text
    assert "evil" in text
    assert "matcher" in text
    assert "exponential" in text


BRIDGE_GUARD = """hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    on_error: block
    command: >-
      case "$(cat)" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""


@pytest.mark.parametrize("depth", [300, 1200, 100_000])
def test_the_claude_code_bridge_denies_a_deeply_nested_tool_input(
    tmp_path: Path, depth: int
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(BRIDGE_GUARD)
    command = '{"a":' * depth + '"rm -rf /"' + "}" * depth
    event = (
        '{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash",'
        f'"tool_use_id":"t1","cwd":"/tmp","tool_input":{{"command":{command}}}}}'
    )
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks),
         "--state", str(tmp_path / "state.sqlite3")],
        input=event, capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    if done.returncode == 2:  # Claude Code's blocking exit
        assert "nested too deeply" in done.stderr
        return
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"] == "rm -rf is not allowed here"


def test_the_durable_event_log_records_a_call_with_hostile_names_and_arguments(
    tmp_path: Path,
) -> None:
    config = AgentEventsConfig(durable=True, path=str(tmp_path / "events.sqlite3"))
    log = open_event_log(config)
    try:
        event = AfterToolCallEvent(
            toolCallId="c1",
            identifier="shell\ud800",
            apiName="exec",
            args={"cmd": nested(5000, "rm -rf /"), "s": "\udfff"},
            sessionKey="s\ud800",
        )
        entry = entry_from_event(config, event)
        assert entry is not None
        log.append(entry)
    finally:
        log.close()
    reopened = SqliteEventLog(str(tmp_path / "events.sqlite3"))
    try:
        (record,) = reopened.read(0, 10).records
    finally:
        reopened.close()
    assert record.tool == "shell\ufffd/exec"
    assert record.session == "s\ufffd"
    assert record.args_fp is not None
    assert len(record.args_fp) == 16


GONE_FOLDER_AGENT = """
import os, sys
import otelhooks

# the agent's tool removed the folder its process runs in (its workspace, say)
guard = {"id": "no-rm", "type": "before_tool_call", "matcher": "rm",
         "command": "case \\"$HOOK_TOOL_INPUT\\" in *victim*) echo no rm >&2; exit 2;; esac"}
oh = otelhooks.configure(hooks=[guard], otlp=False, set_global=False, structured_logging=False)

@otelhooks.tool(tracer=oh.tracer)
def rm(path: str) -> str:
    return "removed " + path

os.rmdir(os.getcwd())
with oh.tracer.operation("agent") as op, op.step():
    try:
        print(rm("victim"))
    except otelhooks.ToolDenied as denied:
        print("denied:", denied.reason.splitlines()[-1])
oh.shutdown()
"""


def test_a_command_guard_still_decides_once_the_agent_removed_its_own_folder(
    tmp_path: Path,
) -> None:
    # the command's Claude-style input names the working folder, which os.getcwd() no longer
    # gives: every command guard failed, and the call ran (on_error: continue)
    folder = tmp_path / "workspace"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", GONE_FOLDER_AGENT],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["denied: no rm"]
    assert not folder.exists()


# A guard that writes its answer by string interpolation, as many shell guards do: the command it
# echoes goes into the reason unescaped.
_ECHOING_GUARD = """\
cmd=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["tool_input"]["command"])')
case "$cmd" in
  *"rm -rf"*) printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", \
"permissionDecision": "%s", "permissionDecisionReason": "refused: %s"}}\\n' "$ANSWER" "$cmd" ;;
esac
"""


def _bridge(tmp_path: Path, command: str, answer: str) -> subprocess.CompletedProcess[str]:
    guard = tmp_path / "guard.sh"
    guard.write_text(_ECHOING_GUARD)
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n  - {id: no-rm, type: PreToolUse, matcher: Bash, command: sh ./guard.sh}\n"
    )
    event = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_use_id": "t1", "cwd": str(tmp_path),
             "tool_input": {"command": command}}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks),
         "--state", str(tmp_path / "state.sqlite3")],
        input=json.dumps(event), capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PY": sys.executable, "ANSWER": answer},
    )  # fmt: skip


@pytest.mark.parametrize("command", ["rm -rf victim", 'rm -rf "victim"'])
def test_a_deny_the_command_s_own_quotes_broke_still_denies_in_the_bridge(
    tmp_path: Path, command: str
) -> None:
    """The model quotes its path and the guard's answer is no longer JSON. Before, it was plain
    text to the bridge, as to Claude Code: exit 0, nothing on stdout, and the `rm -rf` ran
    without a word (with `on_error: block` too)."""
    done = _bridge(tmp_path, command, "deny")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", done.stdout
    assert answer["permissionDecisionReason"].startswith("refused: rm -rf ")


def test_an_allow_the_command_s_own_quotes_broke_is_a_failure_the_person_is_told_of(
    tmp_path: Path,
) -> None:
    """Its rewrite, if any, is lost: the failure is said (before, not a word)."""
    done = _bridge(tmp_path, 'rm -rf "victim"', "allow")
    assert done.returncode == 0, done.stderr[-2000:]
    told = json.loads(done.stdout)
    assert "permissionDecision" not in json.dumps(told), done.stdout
    assert "a hook failed and did not decide: no-rm" in told["systemMessage"]
    assert "does not parse (Expecting" in told["systemMessage"]


def test_a_deny_printed_before_the_guard_hung_denies_in_the_bridge(tmp_path: Path) -> None:
    """The guard denies, then hangs on an audit call past its timeout. Before, the bridge
    answered a failure (`systemMessage`) and Claude Code ran the `rm -rf`."""
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "no rm"}}  # fmt: skip
    (tmp_path / "answer.json").write_text(json.dumps(deny))
    (tmp_path / "hooks.yaml").write_text(
        "hooks:\n  - {id: no-rm, type: PreToolUse, matcher: Bash, timeout: 2,\n"
        "     command: 'cat answer.json; sleep 30'}\n"
    )
    event = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_use_id": "t1", "cwd": str(tmp_path),
             "tool_input": {"command": "rm -rf victim"}}  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "hooks.yaml",
         "--state", str(tmp_path / "state.sqlite3")],
        input=json.dumps(event), capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert time.monotonic() - started < 20
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", done.stdout
    assert "timed out after its answer, which stands" in done.stderr
