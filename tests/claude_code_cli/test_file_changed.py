"""FileChanged fires in the real Claude Code CLI once ``install`` gives it its watch list.

Claude Code's FileChanged matcher names the files it watches (its hooks reference); installed
with none, the hook never fired. Here the scripted model asks for a Bash call that appends to
``.env`` in the project, then for a pause; the installed bridge records the change as an
``agent_lifecycle file_changed`` span with a ``claude_code.FileChanged`` event.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import CLAUDE, MessagesApi, ToolStep, serve_messages_api
from tests.claude_code_cli.test_real_claude_code import _flat_json_spans, _run_claude
from tests.coding_agents_cli._runs import CLI_TEST_S

pytestmark = pytest.mark.timeout(CLI_TEST_S)


@pytest.fixture
def claude() -> Path:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    return CLAUDE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    return root


def test_an_env_file_the_agent_changes_fires_file_changed(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    (project / ".env").write_text("A=1\n")
    install(project / ".claude" / "settings.json")
    (project / ".claude" / "otelhooks.yaml").write_text("hooks: []\n")
    groups = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert groups["FileChanged"][0]["matcher"] == ".envrc|.env"
    traces = tmp_path / "traces.jsonl"
    extra = {
        "OTELHOOKS_TRACES_OUT": str(traces),
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }
    steps = [
        ToolStep("toolu_env", "Bash", {"command": "echo B=2 >> .env", "description": "env"}),
        ToolStep("toolu_wait", "Bash", {"command": "sleep 3", "description": "wait"}),
    ]
    with serve_messages_api(MessagesApi(steps)) as url:
        _run_claude(project, url, tmp_path / "home", extra, timeout_s=60)
    spans = _flat_json_spans([json.loads(line) for line in traces.read_text().splitlines()])
    changed = [s for s in spans if s["name"] == "agent_lifecycle file_changed"]
    assert changed, sorted({s["name"] for s in spans})
    events = [e["name"] for s in changed for e in s.get("events", [])]
    assert "claude_code.FileChanged" in events
