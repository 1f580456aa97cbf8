"""The real Claude Code CLI behind ``otelhooks serve`` (``install --http``): a ``Bash`` call whose
input is padded past serve's 4 MiB hook body limit (in its ``description``) is still denied by
the guard's rule, and the folder it would remove survives. Before, serve answered 413, Claude
Code took it for a non-blocking error and ran ``rm -rf`` without any guard seeing it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)
from tests.coding_agents_cli._runs import CLAUDE, need_cli
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(150)

GUARD = """\
hooks:
  - id: no-rm-rf
    type: PreToolUse
    matcher: Bash
    command: |
      case "$(cat)" in *"rm -rf"*) echo "rm -rf is not allowed" >&2; exit 2 ;; esac
"""
# the padding rides in the tool's description, which never reaches the shell (a command past
# the kernel's 128 KiB argument limit could not run anyway)
PADDED = {"command": "rm -rf victim", "description": "x" * (5 * 1024 * 1024)}


def test_a_padded_rm_rf_past_the_body_limit_is_denied_by_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(CLAUDE)
    (tmp_path / "guard.yaml").write_text(GUARD)
    serve = ServeProc(tmp_path, "--hooks", str(tmp_path / "guard.yaml"), "--no-web")
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "victim").mkdir(parents=True)
    (project / "victim" / "keep.txt").write_text("precious")
    try:
        monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", INGEST)
        install(project / ".claude" / "settings.json", http=serve.url)
        api = MessagesApi([ToolStep("toolu_rm", "Bash", PADDED)])
        with serve_messages_api(api) as api_url:
            run = subprocess.run(
                [str(CLAUDE), "-p", "clean up", "--permission-mode", "bypassPermissions"],
                cwd=project, capture_output=True, text=True, timeout=120,
                env={"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": api_url,
                     **OFFLINE_ENV, "OTELHOOKS_INGEST_TOKEN": INGEST},
            )  # fmt: skip
    finally:
        serve.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    told = json.dumps(
        [
            block
            for request in api.requests
            for message in request.get("messages") or ()
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
    )[:4000]
    assert (project / "victim" / "keep.txt").exists(), told  # was removed: 413, the tool ran
    assert "could not check it" in told, told
    assert "no-rm-rf" in told, told
