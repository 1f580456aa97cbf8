"""The first hour, second pass (issue 31): `otelhooks init`, a handler beside its hook file, and
the small traps a new user met (each one a test)."""

from __future__ import annotations

import inspect
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import structlog
from pydantic import ValidationError

import otelhooks
from otelhooks._starter import starter_hooks_yaml
from otelhooks.testing import TestPipeline, run_cli

ROOT = Path(__file__).resolve().parent.parent


def _otelhooks(*args: str, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELHOOKS_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
        **kwargs,  # type: ignore[call-overload]
    )


# -- otelhooks init --------------------------------------------------------------------------------


def test_init_writes_the_starter_file_and_names_the_three_commands_to_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("init") == 0
    out = capsys.readouterr().out
    assert (tmp_path / "hooks.yaml").read_text() == starter_hooks_yaml("hooks.yaml")
    commands = [line.strip() for line in out.splitlines() if line.startswith("  otelhooks ")]
    assert [c.split()[1] for c in commands] == ["validate", "hooks", "demo"]
    assert commands[2] == "otelhooks demo --hooks hooks.yaml"


def test_the_starter_file_validates_with_a_guard_an_observer_and_a_commented_webhook() -> None:
    text = starter_hooks_yaml()
    assert "# - id: notify-done" in text
    assert "#   webhook:" in text
    with_webhook = text.replace("  # - id:", "  - id:").replace("  #   ", "    ")
    for version in (text, with_webhook):  # as written, and with the webhook turned on
        path = Path(f"{os.environ.get('TMPDIR', '/tmp')}/otelhooks-starter-{os.getpid()}.yaml")
        path.write_text(version)
        try:
            hooks = otelhooks.load_config(path).hooks
        finally:
            path.unlink()
        assert hooks[0].event == "before_tool_call"
        assert hooks[1].event == "after_tool_call"
    assert [h.action_kinds for h in hooks] == [["command"], ["command"], ["webhook"]]


def test_the_starter_guard_denies_rm_rf_and_allows_the_rest(tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text(starter_hooks_yaml())
    verdicts = []
    for command in ("rm -rf /", "ls -l"):
        proc = _otelhooks(
            "hooks", "test", "hooks.yaml", "--event", "PreToolUse", "--tool", "Bash",
            "--args", json.dumps({"command": command}), cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        verdicts.append(proc.stdout.strip().splitlines()[-1])
    assert verdicts == ["verdict: blocked by no-rm-rf: rm -rf is not allowed", "verdict: allowed"]


def test_the_starter_file_in_the_demo_denies_the_rm_rf_and_logs_each_tool_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "hooks.yaml").write_text(starter_hooks_yaml("hooks.yaml"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELHOOKS_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", "--hooks", "hooks.yaml"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "DENIED by no-rm-rf: 'rm -rf is not allowed'" in proc.stdout
    logged = (tmp_path / "otelhooks-tools.log").read_text().split()
    assert {"readFile", "exec", "evaluate"} <= set(logged)


def test_init_refuses_to_overwrite_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hooks.yaml").write_text("mine\n")
    assert run_cli("init") == 1
    assert "already exists; --force overwrites it" in capsys.readouterr().err
    assert (tmp_path / "hooks.yaml").read_text() == "mine\n"
    assert run_cli("init", "--force") == 0
    assert (tmp_path / "hooks.yaml").read_text() == starter_hooks_yaml("hooks.yaml")


# -- a handler module beside its hook file ---------------------------------------------------------


def test_a_handler_module_beside_its_hook_file_imports_from_another_directory(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "myhooks_31.py").write_text(
        "from otelhooks import Block\n\ndef guard(event):\n    return Block('not here')\n"
    )
    (folder / "hooks.yaml").write_text(
        "hooks:\n  - id: guard\n    type: beforeToolCall\n    handler: myhooks_31:guard\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _otelhooks(
        "hooks", "test", str(folder / "hooks.yaml"), "--event", "PreToolUse", "--tool", "fs/rm",
        cwd=elsewhere,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "verdict: blocked by guard: not here"


def test_a_handler_package_beside_its_hook_file_imports_its_submodule(tmp_path: Path) -> None:
    package = tmp_path / "pkg_31"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "guards.py").write_text("def audit(event):\n    return None\n")
    (tmp_path / "hooks.yaml").write_text(
        "hooks:\n  - id: audit\n    type: afterToolCall\n    handler: pkg_31.guards:audit\n"
    )
    (hook,) = otelhooks.load_config(tmp_path / "hooks.yaml").hooks
    assert hook.handler is not None
    assert hook.handler.__module__ == "pkg_31.guards"


# -- the small traps -------------------------------------------------------------------------------


def test_claude_code_typed_in_a_terminal_explains_itself_instead_of_waiting(
    tmp_path: Path,
) -> None:
    controller, terminal = pty.openpty()
    try:
        proc = _otelhooks("claude-code", cwd=tmp_path, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert "Claude Code runs this" in line
    assert "otelhooks claude-code install" in line


def test_the_installed_hook_client_typed_in_a_terminal_explains_itself(tmp_path: Path) -> None:
    from otelhooks.integrations.claude_code import hook_client

    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, hook_client.__file__, "--hooks", "hooks.yaml"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            stdin=terminal,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "Claude Code runs this" in line


@pytest.mark.parametrize(
    ("dialect", "cli"), [("codex", "Codex CLI runs this"), ("gemini", "Gemini CLI runs this")]
)
def test_the_hook_client_of_another_cli_typed_in_a_terminal_names_that_cli(
    tmp_path: Path, dialect: str, cli: str
) -> None:
    from otelhooks.integrations.claude_code import hook_client

    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, hook_client.__file__, "--dialect", dialect, "--hooks", "h.yaml"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            stdin=terminal,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert cli in line
    assert f"`otelhooks {dialect} install`" in line
    assert "Claude Code" not in line


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_a_bridge_problem_in_another_clis_dialect_names_that_cli(
    tmp_path: Path, dialect: str
) -> None:
    from otelhooks.integrations.claude_code import BridgeOptions, run_hook

    options = BridgeOptions(state=str(tmp_path / "state.sqlite3"), dialect=dialect)
    response = run_hook("{not json", options, environ={})
    assert response.exit_code == 1
    assert response.stderr.startswith(f"otelhooks {dialect}: ")


def test_a_hook_typo_in_python_gets_the_same_suggestion_as_in_a_config_file(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValidationError) as raised:
        otelhooks.Hook(id="g", type="beforeToolCall", matchr="^fs/", handler=print)
    (error,) = raised.value.errors()
    assert "field 'matchr': unknown field; did you mean 'matcher'?" in error["msg"]
    config = tmp_path / "hooks.yaml"
    config.write_text(
        "hooks:\n  - id: g\n    type: beforeToolCall\n    matchr: x\n    command: 'true'\n"
    )
    with pytest.raises(otelhooks.ConfigError, match="unknown field; did you mean 'matcher'"):
        otelhooks.load_config(config)


def test_hook_failure_log_lines_carry_the_tool_calls_span_ids(
    otelhooks_pipeline: TestPipeline,
) -> None:
    def boom(event: object) -> None:
        raise RuntimeError("boom")

    lines = io.StringIO()
    pipe = otelhooks_pipeline
    try:
        structlog.configure(
            processors=[otelhooks.add_trace_context, structlog.processors.JSONRenderer()],
            logger_factory=structlog.PrintLoggerFactory(file=lines),
        )
        pipe.oh.register(
            [
                {"id": "interceptor", "type": "beforeToolCall", "handler": boom},
                {"id": "observer", "type": "afterToolCall", "handler": boom},
            ]
        )
        with pipe.oh.operation("a") as op, op.step() as step:
            step.run_tool("fs", "read", {}, lambda: "x")
        pipe.oh.engine.flush(10)
    finally:
        structlog.reset_defaults()
    (span,) = pipe.spans("execute_tool read")
    assert span.context is not None
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    failures = {e["hook_id"]: e for e in logged if e["event"].endswith("hook failed")}
    assert set(failures) == {"interceptor", "observer"}
    for entry in failures.values():
        assert entry["span_id"] == f"{span.context.span_id:016x}"
        assert entry["trace_id"] == f"{span.context.trace_id:032x}"


@pytest.mark.parametrize(
    "answer",
    [{"decision": "mock", "result": "x"}, ["deny"]],
    ids=["another-systems-answer", "a-list"],
)
def test_a_handler_returning_no_answer_is_a_failure_said_in_the_log(
    otelhooks_pipeline: TestPipeline, answer: object
) -> None:
    # A dict naming no field of the payload (another hook system's answer) or a value that is no
    # payload at all decides nothing: the hook failed and its on_error policy (continue) let the
    # call run. Before, only the span said so: no log line, the call ran as if allowed.
    lines = io.StringIO()
    pipe = otelhooks_pipeline
    try:
        structlog.configure(
            processors=[otelhooks.add_trace_context, structlog.processors.JSONRenderer()],
            logger_factory=structlog.PrintLoggerFactory(file=lines),
        )
        pipe.oh.register(
            [{"id": "mocker", "type": "PreToolUse", "matcher": "rm", "handler": lambda e: answer}]
        )
        with pipe.oh.operation("a") as op, op.step() as step:
            ran = step.run_tool("fs", "rm", {"path": "/tmp/x"}, lambda path: f"removed {path}")
    finally:
        structlog.reset_defaults()
    assert ran.content == "removed /tmp/x"  # on_error: continue, as documented
    (span,) = pipe.spans("execute_tool rm")
    assert span.context is not None
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    (failure,) = [e for e in logged if e["event"].endswith("hook failed")]
    assert failure["hook_id"] == "mocker"
    assert failure["lifecycle_event"] == "before_tool_call"
    assert "decision" in failure["error"] or "list" in failure["error"]
    assert failure["span_id"] == f"{span.context.span_id:016x}"


def test_configure_traces_out_holds_the_last_run_only(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    for agent in ("first", "second"):
        oh = otelhooks.configure(traces_out=path, set_global=False, structured_logging=False)
        with oh.operation(agent):
            pass
        oh.shutdown()
    names = [s["name"] for s in otelhooks.read_otlp_json_lines(path)]
    assert names == ["invoke_agent second"]


def test_serve_does_not_default_to_the_collectors_port(
    capsys: pytest.CaptureFixture[str],
) -> None:
    compose = (ROOT / "docker-compose.yml").read_text()
    assert 'published: "4318"' in compose  # the collector's OTLP/HTTP port
    assert run_cli("serve", "--help") == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "port (default 4319)" in help_text


def test_operation_spells_out_its_keywords_for_signature_help() -> None:
    from otelhooks import AgentTracer, OtelHooks

    for method in (OtelHooks.operation, AgentTracer.operation):
        parameters = inspect.signature(method).parameters
        assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        assert {"input", "session_id", "user_id", "hooks", "metadata"} <= set(parameters)


def test_events_help_says_what_the_table_holds(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("events", "--help") == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Markdown table" in text
    assert "four dialects" in text
