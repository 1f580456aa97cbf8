"""Codex CLI does not call a hook of type ``http`` (``docs/adapters.md``, "What each CLI cannot
do"), so ``otelhooks codex install`` writes ``command`` hooks only.

A trusted project's ``.codex/hooks.json`` holds a ``PreToolUse`` hook pointing at a recording
HTTP server on 127.0.0.1 in the CLI's own namespace. With type ``http`` the server receives
nothing: Codex 0.171 rejects the whole file (``exec --json`` reports "failed to parse hooks
config ...: unknown variant `http`"), so a ``command`` hook in the same file is not run either,
and the scripted ``rm -r`` runs. A ``command`` hook alone in that place, posting its input to
the same server, is run (the control).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    RECORDER_URL,
    CliRun,
    codex_config,
    need_cli,
    run_codex,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_rm", "rm -r victim")]
POST_STDIN = """\
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], data=sys.stdin.buffer.read(), timeout=10).read()
"""


def _run(tmp_path: Path, *handlers: dict[str, Any]) -> tuple[Path, CliRun]:
    need_cli(CODEX)
    project = tmp_path / "project"
    (project / "victim").mkdir(parents=True)
    (project / ".codex").mkdir()
    groups = [{"matcher": "*", "hooks": [handler]} for handler in handlers]  # one group each
    hooks = {"hooks": {"PreToolUse": groups}}
    (project / ".codex" / "hooks.json").write_text(json.dumps(hooks))
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    run = run_codex(project, home, STEPS, recorder=True)
    assert run.returncode == 0, skip_reason(run)
    return project, run


def _post_stdin(tmp_path: Path) -> dict[str, Any]:
    """A ``command`` hook that posts its input to the recording server."""
    script = tmp_path / "post_stdin.py"
    script.write_text(POST_STDIN)
    argv = [sys.executable, str(script), f"{RECORDER_URL}/pre-tool-use"]
    return {"type": "command", "command": shlex.join(argv), "timeout": 10}


def test_codex_does_not_call_an_http_hook_and_drops_its_file(tmp_path: Path) -> None:
    served = {"type": "http", "url": f"{RECORDER_URL}/pre-tool-use", "timeout": 10}
    project, run = _run(tmp_path, served, _post_stdin(tmp_path))
    assert run.recorded == []  # neither the http hook nor the command hook beside it
    assert not (project / "victim").exists()
    rejected = "/.codex/hooks.json: unknown variant `http`, expected one of `command`"
    assert rejected in run.stdout, run.stdout[-1500:]


def test_codex_runs_a_command_hook_in_the_same_place(tmp_path: Path) -> None:
    project, run = _run(tmp_path, _post_stdin(tmp_path))
    assert [(r["method"], r["path"]) for r in run.recorded] == [("POST", "/pre-tool-use")]
    hook_input = json.loads(run.recorded[0]["body"])
    assert hook_input["hook_event_name"] == "PreToolUse"
    assert "rm -r victim" in json.dumps(hook_input["tool_input"])
    assert not (project / "victim").exists()
