"""Codex CLI does not call a hook of type ``http`` (``docs/adapters.md``, "What each CLI cannot
do"), so ``otelhooks codex install`` writes ``command`` hooks only.

A trusted project's ``.codex/hooks.json`` holds one ``PreToolUse`` hook pointing at a recording
HTTP server on 127.0.0.1 in the CLI's own namespace: with type ``http`` the server receives
nothing, Codex says nothing about it, and the scripted ``rm -r`` runs; a ``command`` hook in the
same place that posts its input to the same server is run (the control).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.coding_agents_cli._runs import (
    CODEX,
    RECORDER_URL,
    CliRun,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(120)

STEPS = [("call_rm", "rm -r victim")]
POST_STDIN = """\
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], data=sys.stdin.buffer.read(), timeout=10).read()
"""


def _run(tmp_path: Path, handler: dict[str, Any]) -> tuple[Path, CliRun]:
    need_cli(CODEX)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / ".codex").mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [handler]}]}}
    (project / ".codex" / "hooks.json").write_text(json.dumps(hooks))
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, recorder=True)
    assert run.returncode == 0, skip_reason(run)
    return project, run


def test_codex_does_not_call_an_http_hook(tmp_path: Path) -> None:
    handler = {"type": "http", "url": f"{RECORDER_URL}/pre-tool-use", "timeout": 10}
    project, run = _run(tmp_path, handler)
    assert run.recorded == []
    assert not (project / "victim").exists()
    assert "http" not in run.stderr.lower(), run.stderr[-1500:]


def test_codex_runs_a_command_hook_in_the_same_place(tmp_path: Path) -> None:
    script = tmp_path / "post_stdin.py"
    script.write_text(POST_STDIN)
    argv = [sys.executable, str(script), f"{RECORDER_URL}/pre-tool-use"]
    handler = {"type": "command", "command": shlex.join(argv), "timeout": 10}
    project, run = _run(tmp_path, handler)
    assert [(r["method"], r["path"]) for r in run.recorded] == [("POST", "/pre-tool-use")]
    hook_input = json.loads(run.recorded[0]["body"])
    assert hook_input["hook_event_name"] == "PreToolUse"
    assert "rm -r victim" in json.dumps(hook_input["tool_input"])
    assert not (project / "victim").exists()
