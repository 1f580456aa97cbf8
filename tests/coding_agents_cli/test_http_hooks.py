"""Neither CLI runs an ``http`` hook, so neither can point at ``otelhooks serve``'s hook route
the way Claude Code does (``docs/adapters.md``, "What each CLI cannot do"): the installers write
``command`` hooks (the fast command bridge) for both.

Gemini CLI 0.61 discards a hook of type ``http`` when it loads its settings and says so; the
scripted ``rm -r`` then runs unguarded. Codex CLI's side: ``test_codex_http_hooks.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    GEMINI,
    SERVE_URL,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)


def test_gemini_discards_an_http_hook_and_says_so(tmp_path: Path) -> None:
    need_cli(GEMINI)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / ".gemini").mkdir()
    handler = {"name": "served", "type": "http", "url": f"{SERVE_URL}/v1/hooks/claude-code"}
    settings = {"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [handler]}]}}
    (project / ".gemini" / "settings.json").write_text(json.dumps(settings))
    run = run_gemini(project, tmp_path / "home", [("call_rm", "rm -r victim")])
    assert run.returncode == 0, skip_reason(run)
    assert "Invalid hook BeforeTool from project type: http" in run.stderr
    assert not (project / "victim").exists()
