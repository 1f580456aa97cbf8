"""``after_tool_call`` observers hear the block the model was given, with the real CLIs.

A ``PostToolUse`` command guard that blocks a tool's output (Codex CLI and Gemini CLI show the
model the block's reason in the output's place) and a Python observer of the same step. The
observer was told ``success: true`` and the secret output: the block was not known yet when it
ran (and it was not told after), though the span said ``blocked``. The bridge now runs the
command hooks first, and the observers hear what the model read: ``success: false``, the
reason, and the hook that blocked (``result.state``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CODEX,
    GEMINI,
    bridge_env,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(300)

# the observer comes first in the file: before, order did not matter, it was told success
HOOKS = """\
hooks:
  - id: audit
    type: PostToolUse
    matcher: "@shell"
    script: observer.py:heard
  - id: leak-check
    type: PostToolUse
    matcher: "@shell"
    command: >-
      case "$HOOK_TOOL_INPUT" in *secret*)
      echo '{"decision": "block", "reason": "the output holds a key"}';; esac
"""
OBSERVER = """\
import json
from pathlib import Path


def heard(event):
    said = {{"success": event.success, "content": event.content,
             "state": event.result.state if event.result else None}}
    with Path({path!r}).open("a") as f:
        f.write(json.dumps(said) + "\\n")
"""
STEPS = [("call_cat", "cat secret.txt")]


def _heard(dialect: str, project: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], str]:
    need_cli(CODEX if dialect == "codex" else GEMINI)
    (project / "secret.txt").write_text("S-42-SECRET")
    heard = tmp_path / "heard.jsonl"
    (project / "observer.py").write_text(OBSERVER.format(path=str(heard)))
    (project / "hooks.yaml").write_text(HOOKS)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    env = bridge_env(tmp_path)
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, STEPS, extra_env=env)
    else:
        run = run_gemini(project, home, STEPS, extra_env=env, timeout_s=180)
    assert run.returncode == 0, skip_reason(run)
    assert "S-42-SECRET" not in run.told()
    assert "the output holds a key" in run.told()
    lines = heard.read_text().splitlines() if heard.exists() else []
    return [json.loads(line) for line in lines], run.told()


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_an_observer_of_a_blocked_output_hears_the_block(
    project: Path, tmp_path: Path, dialect: str
) -> None:
    heard, _ = _heard(dialect, project, tmp_path)
    assert len(heard) == 1, heard
    (said,) = heard
    assert said["success"] is False
    assert "S-42-SECRET" not in said["content"]
    assert said["content"] == "[tool output withheld by hook leak-check: the output holds a key]"
    assert said["state"] == {
        "type": "blocked",
        "reason": "the output holds a key",
        "decidedBy": "leak-check",
    }


FAILED_FETCH = """\
hooks:
  - id: audit
    type: PostToolUse
    script: observer.py:heard
"""


def test_an_observer_of_a_gemini_tool_that_failed_hears_the_failure(
    project: Path, tmp_path: Path
) -> None:
    """Gemini CLI sends ``AfterTool`` for a tool that failed too (its ``web_fetch`` refuses
    127.0.0.1), the error in ``tool_response.error``. The observer was told ``success: true``
    and the span said ``success``; both now say the error."""
    need_cli(GEMINI)
    heard = tmp_path / "heard.jsonl"
    (project / "observer.py").write_text(OBSERVER.format(path=str(heard)))
    (project / "hooks.yaml").write_text(FAILED_FETCH)
    traces = tmp_path / "traces.jsonl"
    install_agent("gemini", project=project, hooks_file="hooks.yaml", traces_out=str(traces))
    env = bridge_env(tmp_path)
    fetch = {"id": "call_fetch", "tool": "web_fetch"}
    fetch["args"] = {"prompt": "Summarise http://127.0.0.1:9/page"}
    run = run_gemini(project, tmp_path / "home", [fetch], extra_env=env, timeout_s=180)
    assert run.returncode == 0, skip_reason(run)
    (said,) = [json.loads(line) for line in heard.read_text().splitlines()]
    assert said["success"] is False
    assert "Blocked Host" in said["content"]
    (span,) = [s for s in read_otlp_json_lines(traces) if s["name"] == "execute_tool web_fetch"]
    assert span["attributes"]["otelhooks.tool.outcome"] == "error"
    assert span["attributes"]["error.type"] == "web_fetch_processing_error"
