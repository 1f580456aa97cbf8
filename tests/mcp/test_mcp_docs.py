"""docs/mcp.md says what the command does: its flags exist, its config snippets parse, its hook
file loads and its Python example runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from otelhooks import load_config
from otelhooks._cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, flags=re.S)


def test_every_flag_the_doc_names_exists() -> None:
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    mcp = sub.choices["mcp"]  # type: ignore[attr-defined]
    known = {flag for action in mcp._actions for flag in action.option_strings}
    named = set(re.findall(r"`(--[a-z-]+)", DOC)) | set(re.findall(r"\| `(--[a-z-]+)", DOC))
    assert named
    assert named <= known, named - known


def test_json_snippets_are_mcp_servers_entries() -> None:
    blocks = _blocks("json")
    assert blocks
    for block in blocks:
        assert "mcpServers" in json.loads(block)


def test_the_hook_file_loads(tmp_path: Path) -> None:
    (yaml_block,) = _blocks("yaml")
    path = tmp_path / "hooks.yaml"
    path.write_text(yaml_block)
    ids = [hook.id for hook in load_config([str(path)]).hooks]
    assert ids == ["read-only-files", "audit"]


def test_the_python_example_runs(tmp_path: Path) -> None:
    (code,) = _blocks("python")
    (tmp_path / "hooks.yaml").write_text("hooks: []\n")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
