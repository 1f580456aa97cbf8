"""Every conformance fixture names its source, and that source is one of ``references.json``
at a commit (or version) listed there: the suite states what it was checked against."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
REFERENCES: dict[str, dict[str, Any]] = json.loads((HERE / "references.json").read_text())[
    "references"
]
FIXTURES = sorted(p for p in HERE.rglob("*.json") if p.name != "references.json")
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
VERSION = re.compile(r"\b\d+\.\d+\.\d+\b")


def _source(path: Path) -> str:
    data = json.loads(path.read_text())
    source = data.get("source", data.get("$comment"))
    assert source, f"{path.name} names no source"
    return json.dumps(source)


def test_there_are_fixtures_to_check() -> None:
    assert len(FIXTURES) >= 10


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(HERE)))
def test_each_fixture_names_a_listed_reference_at_a_listed_commit(path: Path) -> None:
    source = _source(path)
    named = [name for name in REFERENCES if name in source]
    assert named, f"{path.name}: its source is none of {sorted(REFERENCES)}"
    listed = {c for name in named for c in REFERENCES[name].get("commits", {})}
    versions = {v for name in named for v in REFERENCES[name].get("versions", ())}
    commits = set(COMMIT.findall(source))
    assert commits <= listed, f"{path.name}: commits not in references.json"
    if not commits:  # a recorded client, or an open pull request
        found = set(VERSION.findall(source)) & versions
        prs = {p for name in named for p in REFERENCES[name].get("pull_requests", {})}
        assert found or any(f'"pull_request": {p}' in source for p in prs), path.name


def test_every_listed_commit_is_used_by_a_fixture() -> None:
    sources = " ".join(_source(p) for p in FIXTURES)
    unused = [c for ref in REFERENCES.values() for c in ref.get("commits", {}) if c not in sources]
    assert unused == []
