"""A tool output a ``PostToolUse`` (Gemini: ``AfterTool``) command hook blocks names the hook.

A command hook answering ``{"decision": "block", "reason": ...}`` withholds the tool's output
from Codex CLI's and Gemini CLI's model (each shows it the reason in the output's place). The
``execute_tool`` span said ``otelhooks.tool.outcome: success`` and named no hook: it was written
before the hook answered. It now says ``blocked`` and carries the ``otelhooks.tool_result_persist``
event naming the hook and its reason, as a withheld output of a ``tool_result_persist`` guard
does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HOOKS = """\
hooks:
  - id: leak-check
    type: PostToolUse
    command: >-
      input=$(cat); case "$input" in *S-42*) echo '{"decision": "block",
      "reason": "the output holds a key"}';; esac
"""
# Gemini CLI calls the event AfterTool; the hooks file names it as Claude Code does
EVENTS = {"codex": "PostToolUse", "gemini": "AfterTool"}


def _tool_span(traces: Path) -> dict[str, Any]:
    spans = [s for s in read_otlp_json_lines(traces) if s["name"].startswith("execute_tool ")]
    assert len(spans) == 1, [s["name"] for s in spans]
    return spans[0]


@pytest.mark.parametrize("dialect", sorted(EVENTS))
def test_a_command_hooks_block_of_an_output_is_on_the_span_with_the_real_cli(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    (project / "secret.txt").write_text("S-42-SECRET")
    (project / "hooks.yaml").write_text(HOOKS)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    traces = tmp_path / "traces.jsonl"
    env = {
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
        "OTELHOOKS_TRACES_OUT": str(traces),
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }
    home = tmp_path / "home"
    steps = [("call_cat", "cat secret.txt")]
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, steps, extra_env=env)
    else:
        run = run_gemini(project, home, steps, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert "S-42-SECRET" not in run.told()
    assert "the output holds a key" in run.told()

    span = _tool_span(traces)
    said = span["attributes"]
    assert said["otelhooks.tool.outcome"] == "blocked"
    events = [e for e in span.get("events") or () if e["name"] == "otelhooks.tool_result_persist"]
    assert len(events) == 1, span.get("events")
    blocked = events[0]["attributes"]
    assert blocked["otelhooks.message.blocked"] is True
    assert blocked["otelhooks.hook.decided_by"] == "leak-check"
    assert blocked["otelhooks.hook.decision_reason"] == "the output holds a key"
    # what the model read in the output's place, never the output
    assert "the output holds a key" in said["gen_ai.tool.call.result"]
    assert "S-42-SECRET" not in json.dumps(span)
