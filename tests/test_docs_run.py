"""Every Python example in README.md and docs/ runs as written.

The convention, for everyone who writes docs here:

* Every fenced block whose language is ``python`` or ``py`` in ``README.md`` or any
  ``docs/**/*.md`` is run by this test, each block on its own, as a script
  (``python -c``), in a fresh temporary folder that holds a link to the repository's
  ``examples/`` folder. ``PYTHONPATH`` is the repository root; no ``OTEL_*`` or ``OTELHOOKS_*``
  variable is set, so nothing is exported over the network. A block must run offline: use the
  scripted models (``agents.testing.ScriptedModel``, LangChain's fake chat models), local files
  it writes itself, and servers on 127.0.0.1 it starts itself.
* A block that cannot run (a fragment, a sketch that needs your own service) says so on the
  line right before its fence: ``<!-- not run: the reason -->``. The reason is required.
* A block passes when it exits 0 within 60 s. Say what it prints in the text around it; the
  blocks that print show something a reader can check.

New docs files are picked up without changing this test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(
    r"(?P<before>[^\n]*)\n```(?P<lang>python|py)\n(?P<code>.*?)\n```", flags=re.DOTALL
)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>\S.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    text = "\n" + path.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        marker = _NOT_RUN.search(match["before"])
        line = text.count("\n", 0, match.start("lang"))
        blocks.append(Block(path, line, match["code"], marker["reason"] if marker else None))
    return blocks


BLOCKS = [block for doc in DOCS for block in python_blocks(doc)]


def test_the_docs_have_python_examples_to_run() -> None:
    runnable = [b for b in BLOCKS if b.skip is None]
    assert any(b.file.name == "README.md" for b in runnable)
    assert len(runnable) >= 5


def test_the_convention_finds_blocks_and_markers(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n```python\nprint(1)\n```\n<!-- not run: needs a key -->\n```py\nx\n```\n"
        "```bash\nls\n```\n"
    )
    found = python_blocks(doc)
    assert [(b.code, b.skip) for b in found] == [("print(1)", None), ("x", "needs a key")]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELHOOKS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_python_block_runs(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"marked not run: {block.skip}")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    proc = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**_env(), "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, f"{block.id}\n{proc.stdout}\n{proc.stderr}"
