"""Runs the real ``otelhooks claude-code`` CLI as Claude Code runs a hook command.

One process per event, the event JSON on stdin, the environment Claude Code gives hooks:
``CLAUDE_PROJECT_DIR`` set, no ``OTEL_*`` variables, a private ``HOME``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[3]


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def hook_env(project: Path, home: Path, **extra: str) -> dict[str, str]:
    """Claude Code's hook environment: its own variables, none of ``OTEL_*``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELHOOKS_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.update(HOME=str(home), CLAUDE_PROJECT_DIR=str(project), **extra)
    return env


def start(
    args: Sequence[str], stdin: str | bytes, *, cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    # stdin from a temporary file, so a large input never blocks on a full pipe
    data = stdin.encode() if isinstance(stdin, str) else stdin
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        return subprocess.Popen(
            [sys.executable, "-m", "otelhooks", "claude-code", *args],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
        )


def finish(proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> Run:
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the hook process hung: {err.decode()[-2000:]}") from None
    return Run(proc.returncode, out.decode(), err.decode())


def run(args: Sequence[str], stdin: str | bytes, *, cwd: Path, env: Mapping[str, str]) -> Run:
    return finish(start(args, stdin, cwd=cwd, env=env))


def run_all(
    jobs: Sequence[tuple[Sequence[str], str | bytes]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    width: int = 4,
) -> list[Run]:
    """Several hook processes, ``width`` at a time (Claude Code runs hooks in parallel too).

    Four at once still overlaps their state-file transactions; sixteen on a 2-core machine
    starved each process past the bridge's 1 s webhook-delivery deadline, which the tests also
    check."""
    runs: list[Run] = []
    for i in range(0, len(jobs), width):
        procs = [start(a, s, cwd=cwd, env=env) for a, s in jobs[i : i + width]]
        runs.extend(finish(p) for p in procs)
    return runs
