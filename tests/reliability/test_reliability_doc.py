"""The reliability section maps each guarantee to tests: every test it names exists, and every
test in ``tests/reliability/`` is named there."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
SECTION = "## Reliability and security"


def sections() -> list[Path]:
    """``docs/reliability.md``, and the README once the section is merged into it."""
    found = [ROOT / "docs" / "reliability.md"]
    readme = ROOT / "README.md"
    if SECTION in readme.read_text():
        found.append(readme)
    return found


def named_tests(doc: Path) -> set[tuple[str, str]]:
    text = doc.read_text()
    if doc.name == "README.md":
        text = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return set(REFERENCE.findall(text))


# each file once: the section names about a thousand tests in a hundred files, and parsing the
# file again per name cost tens of seconds on a loaded machine
@functools.cache
def defined_tests(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    return frozenset(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    )


@pytest.mark.parametrize("doc", sections(), ids=lambda p: p.name)
def test_every_test_the_section_names_exists(doc: Path) -> None:
    references = named_tests(doc)
    assert references
    missing = [
        f"{file}::{name}"
        for file, name in sorted(references)
        if not (ROOT / file).exists() or name not in defined_tests(ROOT / file)
    ]
    assert missing == []


@pytest.mark.parametrize("doc", sections(), ids=lambda p: p.name)
def test_every_reliability_test_is_named_in_the_section(doc: Path) -> None:
    named = {name for file, name in named_tests(doc) if file.startswith("tests/reliability/")}
    here = Path(__file__).parent
    unnamed = [
        f"{path.name}::{name}"
        for path in sorted(here.glob("test_*.py"))
        if path != Path(__file__)
        for name in sorted(defined_tests(path) - named)
    ]
    assert unnamed == []
