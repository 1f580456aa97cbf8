"""A guard on a switch of the session's model, ``PreModelSwitch``, through the bridge, with the
real Claude Code CLI.

Claude Code 2.1.337 runs ``PreModelSwitch`` hooks before it switches the session's model (its
hook input names ``from_model``, ``to_model``, ``requested_model`` and ``source``; an SDK host's
``set_model`` control request is ``source: "sdk"``), and a deny (``permissionDecision``, or exit
2) cancels the switch; ``PostModelSwitch`` follows a switch made. Before, otelhooks did not map
them: a Claude Code settings file's guard on ``PreModelSwitch`` was skipped with an "unknown
event" warning, ``install`` wrote no entry for it, and the switch was made. The control runs the
same guard in Claude Code's own settings.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import MessagesApi, run_claude_p

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
REASON = "this session stays on its model"


def _guards(record: Path) -> dict[str, object]:
    deny = {"type": "command", "command": f"echo '{REASON}' >&2; exit 2"}
    seen = {"type": "command", "command": f"cat > {record}"}
    return {
        "hooks": {
            "PreModelSwitch": [{"hooks": [deny]}],
            "PostModelSwitch": [{"hooks": [seen]}],
        }
    }


def _user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def _switch(project: Path, tmp_path: Path, model: str) -> tuple[dict[str, Any], MessagesApi]:
    """Say hello, ask the CLI (as an SDK host does) to switch to ``model``, say hello again:
    the control response, and the scripted API (which model each request named)."""
    api = MessagesApi([])
    set_model = {"subtype": "set_model", "model": model}
    stream = [_user("hi"), {"type": "control_request", "request_id": "r1", "request": set_model}]
    result = run_claude_p(api, "", project, tmp_path, stream=[*stream, _user("again")])
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (answer,) = [m["response"] for m in lines if m.get("type") == "control_response"]
    return answer, api


@pytest.mark.parametrize("where", ["claude-code-itself", "through-the-bridge"])
def test_a_guard_on_a_model_switch_keeps_the_model(where: str, tmp_path: Path) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.local.json"
    guards = _guards(tmp_path / "post-switch.json")
    said: list[warnings.WarningMessage] = []
    if where == "claude-code-itself":
        settings.write_text(json.dumps(guards))
    else:
        (project / ".claude" / "guards.json").write_text(json.dumps(guards))
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            install(settings, hooks_file=".claude/guards.json")
    answer, api = _switch(project, tmp_path, "haiku")
    assert answer.get("error_code") == "blocked_by_hook", answer
    assert REASON in answer["error"]
    models = [r.get("model") for r in api.requests]
    assert len(models) == 2, models
    assert "haiku" not in str(models[1]), models
    assert not (tmp_path / "post-switch.json").exists()  # no switch was made
    assert not [w for w in said if "unknown event" in str(w.message)]
