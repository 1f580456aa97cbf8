"""``otelhooks claude-code install --http`` writes hooks that send ``$OTELHOOKS_INGEST_TOKEN``
from Claude Code's own environment. Run without it, every hook gets ``401`` from ``serve``,
which Claude Code takes for a hook that failed: without ``--fail-closed`` the real CLI 2.1.337
runs the tool, saying nothing in ``-p`` mode (a guard with ``on_error: block`` never ran), and
with it blocks every guarded call. Install says so when the variable is not set where it runs
(before, it said only that the guards fail open when serve is "down or silent").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import install
from tests.claude_code_cli._messages_api import rm_rf_victim
from tests.coding_agents_cli._runs import CLAUDE, need_cli
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(120)

GUARD = """\
hooks:
  - id: no-rm-rf
    type: PreToolUse
    matcher: "*"
    on_error: block
    command: |
      case "$(cat)" in *"rm -rf"*) echo "rm -rf is not allowed" >&2; exit 2 ;; esac
"""
URL = "http://127.0.0.1:4319"


def _token_warnings(change_warnings: list[str]) -> list[str]:
    return [w for w in change_warnings if w.startswith("$OTELHOOKS_INGEST_TOKEN is not set")]


def test_install_http_warns_when_the_token_claude_code_sends_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    monkeypatch.delenv("OTELHOOKS_INGEST_TOKEN", raising=False)
    (open_warning,) = _token_warnings(install(settings, http=URL).warnings)
    assert open_warning.endswith("(HTTP 401) and Claude Code runs every tool unguarded")
    (closed,) = _token_warnings(install(settings, http=URL, fail_closed=True).warnings)
    assert closed.endswith("(HTTP 401) and Claude Code blocks every call a guard would judge")
    assert not _token_warnings(install(settings).warnings)  # the command form sends none
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", "set")
    assert install(settings, http=URL, fail_closed=True).warnings == []
    (fail_open,) = install(settings, http=URL).warnings
    assert "is down, silent or refuses the token" in fail_open


def _rm(project: Path, home: Path, env: dict[str, str]) -> bool:
    """Whether ``victim`` survived Claude Code's scripted ``rm -rf victim``."""
    rm_rf_victim(project, {"PATH": os.environ["PATH"], "HOME": str(home), **env}, timeout_s=60)
    return (project / "victim").exists()


def test_without_the_token_the_real_claude_code_runs_the_tool_as_the_warning_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_cli(CLAUDE)
    (tmp_path / "guard.yaml").write_text(GUARD)
    serve = ServeProc(tmp_path, "--hooks", str(tmp_path / "guard.yaml"))
    try:
        project, home = tmp_path / "project", tmp_path / "home"
        monkeypatch.delenv("OTELHOOKS_INGEST_TOKEN", raising=False)
        change = install(project / ".claude" / "settings.json", http=serve.url)
        assert _token_warnings(change.warnings)
        assert _rm(project, home, {"OTELHOOKS_INGEST_TOKEN": INGEST})  # the guard denies
        assert not _rm(project, home, {})  # 401 on every hook: the rm -rf ran
    finally:
        serve.proc.terminate()
        serve.proc.wait(timeout=30)
