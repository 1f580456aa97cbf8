"""What the real-CLI tests share: the project whose ``victim`` folder a scripted ``rm -r`` deletes
unless a guard stops it (a test module that needs more in its project defines its own)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "victim").mkdir(parents=True)
    (root / "victim" / "keep.txt").write_text("precious")
    return root
