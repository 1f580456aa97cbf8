"""``otelhooks serve --fail-closed`` and a Claude Code HTTP hook whose token it refuses, with the
real Claude Code CLI.

Claude Code takes a ``401`` or ``403`` for a hook that failed, a non-blocking error: it ran the
tool, whatever ``--fail-closed`` said (the token was checked before the hook route could answer).
With ``--fail-closed`` the hook route now answers a missing or wrong token as it answers any
failure: a deny for ``PreToolUse``, naming the token problem, and still runs no hook and records
nothing. Without ``--fail-closed`` a refused token is still a ``401``/``403`` and the tool runs
(``tests/claude_code_cli/test_install_http_token.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from otelhooks.integrations.claude_code import install
from tests.claude_code_cli._messages_api import rm_rf_victim
from tests.coding_agents_cli._runs import CLAUDE, need_cli
from tests.reliability._serve_proc import ServeProc

pytestmark = pytest.mark.timeout(120)

GUARD = """\
hooks:
  - id: no-rm-rf
    type: PreToolUse
    matcher: "*"
    command: |
      case "$(cat)" in *"rm -rf"*) echo "rm -rf is not allowed" >&2; exit 2 ;; esac
"""


def _rm(project: Path, home: Path, env: dict[str, str]) -> tuple[bool, str]:
    """Whether ``victim`` survived Claude Code's scripted ``rm -rf victim``, and the tool results
    the model was told."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), **env}
    api = rm_rf_victim(project, env, timeout_s=60)
    results = [
        block
        for request in api.requests
        for message in request.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    return (project / "victim").exists(), json.dumps(results)


def test_serve_fail_closed_denies_a_hook_whose_token_it_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(CLAUDE)
    (tmp_path / "guard.yaml").write_text(GUARD)
    serve = ServeProc(tmp_path, "--hooks", str(tmp_path / "guard.yaml"), "--fail-closed")
    try:
        project, home = tmp_path / "project", tmp_path / "home"
        monkeypatch.delenv("OTELHOOKS_INGEST_TOKEN", raising=False)
        install(project / ".claude" / "settings.json", http=serve.url)
        recorded = serve.version()
        survived, told = _rm(project, home, {})  # no token: Claude Code sends "Bearer "
        assert survived, told
        assert "the hook request was refused: a bearer token is required" in told
        survived, told = _rm(project, home, {"OTELHOOKS_INGEST_TOKEN": "wrong"})
        assert survived, told
        assert "the hook request was refused: the token is not valid" in told
        assert "rm -rf is not allowed" not in told  # no hook ran
        assert serve.version() == recorded  # nothing recorded
        # the other routes answer a refused token as before
        assert httpx.post(f"{serve.url}/v1/traces", content=b"{}", timeout=10).status_code == 401
        assert httpx.get(f"{serve.url}/v1/events", timeout=10).status_code == 401
        pre = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash"}
        hook = httpx.post(f"{serve.url}/v1/hooks/claude-code", json=pre, timeout=10)
        assert hook.status_code == 200
        stop = {"hook_event_name": "Stop", "session_id": "s"}
        hook = httpx.post(f"{serve.url}/v1/hooks/claude-code", json=stop, timeout=10)
        assert hook.status_code == 401  # no deny to give: as the route's other failures
    finally:
        serve.proc.terminate()
        serve.proc.wait(timeout=30)
