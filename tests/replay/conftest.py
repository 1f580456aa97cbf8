"""Recordings made by real otelhooks runs, and the ``otelhooks replay`` command as a process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelhooks import semconv as sc

POLICY_PY = """
from otelhooks import Block

def no_delete(event):
    return Block(f"deleting is off (args {event.argsFp})")

def offline_calc(event):
    event.mock({"content": "42"})

def sandbox_reads(event):
    return {"args": {**event.args, "path": "sandbox/" + str(event.args.get("path", ""))}}
"""

# Denies one tool, mocks one, rewrites one; shell calls stay denied, by a command (a process).
POLICY_YAML = """
hooks:
  - id: no-delete
    type: beforeToolCall
    matcher: "^fs/deleteFile$"
    script: policy.py:no_delete
  - id: offline-calc
    type: beforeToolCall
    matcher: "^calc/"
    script: policy.py:offline_calc
  - id: sandbox-reads
    type: beforeToolCall
    matcher: "^fs/readFile$"
    script: policy.py:sandbox_reads
  - id: no-shell
    type: beforeToolCall
    matcher: "^shell/"
    command: "echo 'no shell here' >&2; exit 2"
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, **extra}


def record_demo(path: Path, *, capture: bool) -> Path:
    """Run ``otelhooks demo`` (a real process) with content capture on or off."""
    env = _env(**({sc.ENV_CAPTURE_CONTENT: "true"} if capture else {}))
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "demo", "--quiet", "--traces-out", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=path.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return path


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def events(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["type"] == "event"]

    def one(self, kind: str, **match: Any) -> dict[str, Any]:
        found = [
            r
            for r in self.records()
            if r["type"] == kind and all(r.get(k) == v for k, v in match.items())
        ]
        assert len(found) == 1, (kind, match, found)
        return found[0]


def run_replay(*args: str | Path, cwd: Path | None = None) -> Run:
    """``otelhooks replay ...`` as a process, as CI would run it."""
    proc = subprocess.run(
        [sys.executable, "-m", "otelhooks", "replay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        cwd=cwd,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def replay_main(*args: str | Path) -> Run:
    """``otelhooks replay ...`` through the same entry point, in this process (faster than a
    process per run; the subprocess form is :func:`run_replay`)."""
    from otelhooks.testing import run_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli("replay", *args)
    return Run(code, out.getvalue(), err.getvalue())


def write_policy(folder: Path) -> Path:
    (folder / "policy.py").write_text(POLICY_PY)
    policy = folder / "policy.yaml"
    policy.write_text(POLICY_YAML)
    return policy


@pytest.fixture(scope="session")
def captured_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo run recorded with content capture on."""
    return record_demo(tmp_path_factory.mktemp("demo-capture") / "traces.jsonl", capture=True)


@pytest.fixture(scope="session")
def uncaptured_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo run recorded with content capture off (the default)."""
    return record_demo(tmp_path_factory.mktemp("demo-plain") / "traces.jsonl", capture=False)


@pytest.fixture(scope="session")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy(tmp_path_factory.mktemp("policy"))
