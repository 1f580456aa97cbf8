"""What a Codex CLI or Gemini CLI user reads names that CLI, never Claude Code.

Each test runs one bridge session per dialect on the CLI's captured hook inputs (written by the
real Codex CLI 0.171 and Gemini CLI 0.61) through :func:`run_hook`, the entry point the hook
command and the daemon share, and checks the refusals, warnings, log events and span event
names that reach the user.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from otelhooks.integrations.claude_code import BridgeOptions, HookResponse, run_hook
from otelhooks.integrations.coding_agents import CodingAgentBridge, dialect_named

CAPTURED = Path(__file__).parents[1] / "coding_agents_cli" / "captured"
# the dialect, its CLI's name as a person knows it, its tool-call event and session-start input
DIALECTS = [
    pytest.param("codex", "Codex CLI", "PreToolUse", id="codex"),
    pytest.param("gemini", "Gemini CLI", "BeforeTool", id="gemini"),
]
BLOCK_SESSION_START = """\
hooks:
  - id: no-sessions
    type: SessionStart
    command: "echo 'not today' >&2; exit 2"
"""


def _captured(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / f"{name}.json").read_text())
    return data


def _options(tmp_path: Path, dialect: str, **kw: Any) -> BridgeOptions:
    return BridgeOptions(state=str(tmp_path / "state.sqlite3"), dialect=dialect, **kw)


def _said(response: HookResponse) -> str:
    return f"{response.stdout}\n{response.stderr}"


def _names_only(text: str, dialect: str, cli: str | None = None) -> None:
    assert "claude" not in text.lower(), text
    assert f"otelhooks {dialect}" in text or (cli is not None and cli in text), text


@pytest.mark.parametrize(("dialect", "cli", "tool_event"), DIALECTS)
def test_malformed_input_is_refused_naming_the_cli(
    tmp_path: Path, dialect: str, cli: str, tool_event: str
) -> None:
    response = run_hook(b'{"hook_event_name": "SessionStart", ', _options(tmp_path, dialect))
    assert response.exit_code == 1
    assert "not JSON" in response.stderr
    _names_only(_said(response), dialect)


@pytest.mark.parametrize(("dialect", "cli", "tool_event"), DIALECTS)
def test_a_fail_closed_refusal_denies_in_the_clis_format_naming_it(
    tmp_path: Path, dialect: str, cli: str, tool_event: str
) -> None:
    raw = f'{{"hook_event_name": "{tool_event}", "tool_input": '
    response = run_hook(raw, _options(tmp_path, dialect, fail_closed=True))
    answer = json.loads(response.stdout)
    if dialect == "gemini":
        assert answer["decision"] == "deny"
        assert "fail-closed" in answer["reason"]
    else:
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    _names_only(_said(response), dialect)


@pytest.mark.parametrize(("dialect", "cli", "tool_event"), DIALECTS)
def test_a_decision_the_cli_cannot_carry_is_told_and_logged_naming_it(
    tmp_path: Path, dialect: str, cli: str, tool_event: str
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(BLOCK_SESSION_START)
    options = _options(tmp_path, dialect, hooks=(str(hooks),))
    with capture_logs() as logs:
        response = run_hook(json.dumps(_captured(f"{dialect}-SessionStart")), options, environ={})
    message = json.loads(response.stdout)["systemMessage"]
    assert f"hook no-sessions blocked SessionStart, which {cli} cannot block" in message
    _names_only(message, dialect, cli)
    (warning,) = [entry for entry in logs if "cannot carry" in entry["event"]]
    assert warning["log_level"] == "warning"
    _names_only(warning["event"], dialect, cli)


@pytest.mark.parametrize(("dialect", "cli", "tool_event"), DIALECTS)
def test_a_bridge_failure_is_logged_and_refused_naming_the_cli(
    tmp_path: Path, dialect: str, cli: str, tool_event: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fault of the bridge's own, past the hooks' loading (what its neighbours can break, the
    # state file among them, it works around: tests/reliability/test_state_file_neighbours.py)
    def broken(*_: Any, **__: Any) -> HookResponse:
        raise RuntimeError("a bug of the bridge")

    monkeypatch.setattr(CodingAgentBridge, "handle", broken)
    state = tmp_path / "state.sqlite3"
    options = BridgeOptions(state=str(state), dialect=dialect, fail_closed=True)
    captured = _captured(f"{dialect}-{tool_event}")
    with capture_logs() as logs:
        response = run_hook(json.dumps(captured), options, environ={})
    assert "otelhooks could not check this tool call (fail-closed)" in response.stdout
    _names_only(_said(response), dialect)
    (failed,) = [entry for entry in logs if entry["log_level"] == "error"]
    assert failed["event"] == f"the {cli} bridge failed"


@pytest.mark.parametrize(
    ("dialect", "captured", "marker"),
    [
        ("codex", "codex-SessionStart", "codex.PreCompact"),
        ("gemini", "gemini-PreCompress", "gemini_cli.PreCompress"),
    ],
)
def test_a_point_events_span_event_is_named_as_its_cli_names_it(
    tmp_path: Path, dialect: str, captured: str, marker: str
) -> None:
    event = _captured(captured)
    if dialect == "codex":  # Codex's PreCompact, in the shape of its captured events
        event = {**event, "hook_event_name": "PreCompact", "trigger": "manual"}
    spans = InMemorySpanExporter()
    options = _options(tmp_path, dialect, extra_exporters=(spans,))
    assert run_hook(json.dumps(event), options, environ={}).exit_code == 0
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agent_lifecycle before_compact"]
    assert [e.name for e in span.events] == [marker]


@pytest.mark.parametrize(("dialect", "cli"), [("codex", "Codex CLI"), ("gemini", "Gemini CLI")])
def test_each_dialect_knows_its_display_name(dialect: str, cli: str) -> None:
    assert dialect_named(dialect).display_name == cli


SLOW_GUARD = """\
hooks:
  - id: slow-guard
    type: PreToolUse
    matcher: "*"
    command: "sleep 3"
"""


def test_the_daemons_late_answer_is_logged_and_refused_naming_the_cli(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from otelhooks.integrations.claude_code import hook_client
    from tests.reliability._procs import cli_env

    policy = tmp_path / "policy.yaml"
    policy.write_text(SLOW_GUARD)
    sock = str(tmp_path / "d.sock")
    argv = ["--hooks", str(policy), "--fail-closed", "--dialect", "gemini"]
    argv += ["--state", str(tmp_path / "state.sqlite3")]
    # the daemon's own deadline, far below the guard's sleep: the answer is late by design
    env = cli_env(OTELHOOKS_CLAUDE_DAEMON_ANSWER_S="0.5")
    err = tmp_path / "daemon.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "claude-code", *argv, "daemon", "--socket", sock],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("wb"),
    )
    try:
        deadline = time.monotonic() + 30
        while not Path(sock).exists():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        raw = json.dumps(_captured("gemini-BeforeTool")).encode()
        answer = hook_client._ask(sock, raw)
    finally:
        proc.terminate()
        proc.wait(30)
    assert answer is not None
    assert json.loads(str(answer["stdout"]))["decision"] == "deny"
    _names_only(f"{answer['stdout']}\n{answer['stderr']}", "gemini")
    logged = err.read_text()
    assert "a Gemini CLI hook gave no answer in time" in logged
    assert "claude" not in logged.lower()
