"""The real Claude Code CLI asks for a tool call; a person clicks Deny in the browser; the tool
never runs.

Claude Code posts its hooks to an in-process ``serve`` (``otelhooks claude-code install --http``),
whose ``approval:`` hook on ``PreToolUse`` holds the ``Bash`` call in the inbox. The hook's
default is *allow*, so only the click can deny it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks._actions._approval_inbox import CLIENT_GONE
from otelhooks.integrations.claude_code import install
from tests._realparts import require
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)
from tests.web.conftest import (
    AUTH,
    TOKEN,
    approval_holder,
    click_answer,
    log_in,
    screenshot,
)

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / "tests" / "claude_code_cli" / "node_modules" / ".bin" / "claude"

HOOKS = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval:
      timeout: 60
      default: allow
      reason: a person approves shell commands
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / "victim").mkdir()
    (root / "victim" / "keep.txt").write_text("precious")
    (root / ".claude" / "otelhooks.yaml").write_text(HOOKS)
    return root


@pytest.fixture
def approving_server(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    # content capture on: the person sees the command they are asked about
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    started = serve([project / ".claude" / "otelhooks.yaml"], token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


def _claude(project: Path, api_url: str, home: Path, out: dict[str, Any]) -> None:
    import subprocess

    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api_url,
        **OFFLINE_ENV,
        "OTELHOOKS_INGEST_TOKEN": TOKEN,
    }
    result = subprocess.run(
        [
            str(CLAUDE),
            "-p",
            "clean up",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    out["result"] = result


def test_a_click_on_deny_stops_the_real_claude_code_tool(
    browser: Any, approving_server: EventLogServer, project: Path, tmp_path: Path
) -> None:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    settings = project / ".claude" / "settings.json"
    install(settings, http=approving_server.url)
    pre = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert pre["timeout"] > 60  # Claude Code waits longer than the approval does
    api = MessagesApi(
        [ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim", "description": "clean"})]
    )
    out: dict[str, Any] = {}
    with serve_messages_api(api) as api_url:
        run = threading.Thread(target=_claude, args=(project, api_url, tmp_path / "home", out))
        run.start()
        page = log_in(browser, approving_server.url)
        try:
            page.goto(f"{approving_server.url}/approvals")
            card = page.locator(".approval-card", has_text="ask-before-shell").first
            card.wait_for(timeout=60_000)
            assert "rm -rf victim" in card.locator("textarea.args").input_value()
            card.locator("input.reason").fill("never delete the victim folder")
            screenshot(page, "web-approvals.png", tmp_path)
            approval = card.get_attribute("data-approval")
            click_answer(card.locator("button.deny"))
            page.locator(f'#answered tr.denied[data-approval="{approval}"]').wait_for()
        finally:
            page.context.close()
        run.join(100)
    result = out["result"]
    assert result.returncode == 0, result.stderr[-2000:]
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    results = [
        block
        for body in api.requests
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    (denied,) = [b for b in results if b["tool_use_id"] == "toolu_rm"]
    assert denied["is_error"] is True
    item = httpx.get(f"{approving_server.url}/v1/approvals/{approval}", headers=AUTH).json()
    # one record of the approval in serve's index: the Bash call's span, not serve's stand-in too
    assert approval_holder(approving_server, item["trace_id"], approval) == "execute_tool Bash"
    assert "never delete the victim folder" in json.dumps(denied["content"])


def test_the_card_of_a_real_claude_code_hook_that_gave_up_is_withdrawn(
    approving_server: EventLogServer, project: Path, tmp_path: Path
) -> None:
    # the person's settings give the hook 3 s, less than the approval's 60: Claude Code gives
    # up, takes it as a non-blocking error and runs the tool. Before, the card stayed pending
    # for 60 s and a person's Approve was recorded "allowed" for a call already run
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    settings = project / ".claude" / "settings.json"
    install(settings, http=approving_server.url)
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 3
    settings.write_text(json.dumps(data))
    api = MessagesApi([ToolStep("toolu_ls", "Bash", {"command": "ls", "description": "list"})])
    out: dict[str, Any] = {}
    before = httpx.get(f"{approving_server.url}/v1/approvals", headers=AUTH).json()["answered"]
    with serve_messages_api(api) as api_url:
        _claude(project, api_url, tmp_path / "home", out)
    assert out["result"].returncode == 0, out["result"].stderr[-2000:]
    listing = httpx.get(f"{approving_server.url}/v1/approvals", headers=AUTH).json()
    for _ in range(100):  # the withdrawal follows the connection's close
        if not listing["pending"]:
            break
        time.sleep(0.05)
        listing = httpx.get(f"{approving_server.url}/v1/approvals", headers=AUTH).json()
    assert listing["pending"] == []
    seen = {a["id"] for a in before}
    gave_up = [a for a in listing["answered"] if a["id"] not in seen]
    assert [(a["state"], a["answered_by"], a["answer_reason"]) for a in gave_up] == [
        ("denied", "asker", CLIENT_GONE)
    ]
