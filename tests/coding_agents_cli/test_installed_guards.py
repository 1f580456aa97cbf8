"""The real Codex CLI and Gemini CLI with hooks written by ``otelhooks codex|gemini install``.

The scripted model asks each CLI to ``rm -r victim`` (the control runs in
``test_control_runs.py`` show the deletion happens when nothing guards it). The installed
otelhooks guard stops it: the folder survives, the model is told the guard's reason, and the
run is one trace (id derived from the CLI's session id) with an ``execute_tool`` span marked
denied. ``@shell`` guards the same call in every dialect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import session_trace_id
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    bridge_env,
    codex_config,
    gemini_settings,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: {matcher}
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -r'*)
      echo 'deleting is not allowed here' >&2; exit 2;; esac
"""
STEPS = [("call_rm", "rm -r victim")]


def _install(dialect: str, project: Path, tmp_path: Path, matcher: str) -> Path:
    hooks = project / f".{dialect}" / "otelhooks.yaml"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text(GUARD.format(matcher=matcher))
    traces = tmp_path / "traces.jsonl"
    install_agent(dialect, project=project, hooks_file=hooks, traces_out=str(traces))
    return traces


def _spans(traces: Path) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for line in traces.read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans") or ():
            for ss in rs.get("scopeSpans") or ():
                spans.extend(ss.get("spans") or ())
    return spans


def _attr(span: dict[str, Any], key: str) -> Any:
    for kv in span.get("attributes") or ():
        if kv["key"] == key:
            return next(iter(kv["value"].values()))
    return None


def _codex(project: Path, tmp_path: Path, matcher: str) -> tuple[Any, Path]:
    need_cli(CODEX)
    traces = _install("codex", project, tmp_path, matcher)
    home = tmp_path / "home"
    codex_config(home, trusted=project)  # what `otelhooks codex install` says Codex needs
    run = run_codex(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    return run, traces


def _gemini(project: Path, tmp_path: Path, matcher: str) -> tuple[Any, Path]:
    need_cli(GEMINI)
    traces = _install("gemini", project, tmp_path, matcher)
    run = run_gemini(project, tmp_path / "home", STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    return run, traces


def _codex_session(stdout: str) -> str:
    for line in stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "thread.started":
            return str(event["thread_id"])
    raise AssertionError(f"no thread.started in {stdout[-1000:]}")


def _codex_output(run: Any) -> str:
    return " ".join(
        json.dumps(item.get("output"))
        for item in run.requests[-1]["input"]
        if item.get("type") == "function_call_output"
    )


def _gemini_response(run: Any) -> str:
    parts = [p for c in run.requests[-1]["contents"] for p in c.get("parts") or ()]
    return " ".join(json.dumps(p["functionResponse"]) for p in parts if "functionResponse" in p)


# One run per CLI checks what its guard stops and the trace it leaves: a real CLI session is the
# slow part, and each check reads the same run.
def test_codex_install_guard_stops_the_deletion_in_one_trace_with_a_denied_tool_span(
    project: Path, tmp_path: Path
) -> None:
    run, traces = _codex(project, tmp_path, "Bash")
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "deleting is not allowed here" in _codex_output(run)
    # the run is one trace, its id the session's, with the tool span denied in the turn
    spans = _spans(traces)
    trace = format(session_trace_id(_codex_session(run.stdout)), "032x")
    assert {s["traceId"] for s in spans} == {trace}
    tools = [s for s in spans if s["name"] == "execute_tool Bash"]
    assert [_attr(s, "otelhooks.tool.outcome") for s in tools] == ["denied"]
    turns = [s for s in spans if s["name"] == "invoke_agent codex"]
    assert len(turns) == 1
    assert tools[0]["parentSpanId"] == turns[0]["spanId"]


def test_gemini_install_guard_stops_the_deletion_in_one_trace_with_chat_spans(
    project: Path, tmp_path: Path
) -> None:
    run, traces = _gemini(project, tmp_path, "run_shell_command")
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "deleting is not allowed here" in _gemini_response(run)
    # the run is one trace, with the tool span denied
    spans = _spans(traces)
    assert len({s["traceId"] for s in spans}) == 1
    tools = [s for s in spans if s["name"] == "execute_tool run_shell_command"]
    assert [_attr(s, "otelhooks.tool.outcome") for s in tools] == ["denied"]
    assert [s["name"] for s in spans if s["name"].startswith("invoke_agent")] == [
        "invoke_agent gemini-cli"
    ]
    # the model calls are chat spans in the turn: one per request the scripted API answered
    # (the tool call, then the closing text)
    turn = next(s for s in spans if s["name"] == "invoke_agent gemini-cli")
    chats = [s for s in spans if s["name"] == "chat gemini-2.5-flash"]
    assert len(chats) == len(run.requests) == 2
    assert {s["parentSpanId"] for s in chats} == {turn["spanId"]}
    assert [_attr(s, "gen_ai.usage.input_tokens") for s in chats] == ["20", "20"]
    assert {_attr(s, "gen_ai.provider.name") for s in chats} == {"gcp.gemini"}


def test_codex_shell_kind_guard_stops_the_deletion(project: Path, tmp_path: Path) -> None:
    run, _ = _codex(project, tmp_path, '"@shell"')
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "deleting is not allowed here" in _codex_output(run)


def test_gemini_shell_kind_guard_stops_the_deletion(project: Path, tmp_path: Path) -> None:
    run, _ = _gemini(project, tmp_path, '"@shell"')
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "deleting is not allowed here" in _gemini_response(run)


def test_gemini_user_install_guards_a_project_with_no_hooks_of_its_own(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(GEMINI)
    home = tmp_path / "home"
    gemini_settings(home)  # the user's settings the run needs; install merges into them
    monkeypatch.setenv("HOME", str(home))
    hooks = tmp_path / "policy.yaml"
    hooks.write_text(GUARD.format(matcher='"@shell"'))
    change = install_agent("gemini", user=True, hooks_file=hooks)
    assert change.path == home / ".gemini" / "settings.json"
    assert not (project / ".gemini").exists()
    run = run_gemini(project, home, STEPS, extra_env=bridge_env(tmp_path))
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    assert "deleting is not allowed here" in _gemini_response(run)
