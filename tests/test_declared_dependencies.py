"""Every module the package imports comes from a distribution ``pyproject.toml`` declares.

A module reached only through another package's dependencies (``requests`` through an exporter
that later made it optional) breaks ``import`` at that package's floor, so each import must be
declared itself, as a dependency or in an extra.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "otelhooks"
# Modules only the tool that loads them imports: the pytest plugin runs inside pytest.
LOADED_BY_THEIR_HOST = {"otelhooks/_pytest_plugin.py": "pytest"}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_name(r) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "test":  # test tools are not what the package imports
            names.update(_name(r) for r in requirements)
    return names


def imported() -> dict[str, set[str]]:
    """Top-level modules imported anywhere in the package (absolute imports), with the files
    importing each."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                found.setdefault(module.partition(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_module_is_a_declared_dependency() -> None:
    providers = packages_distributions()
    wanted = declared()
    undeclared: dict[str, set[str]] = {}
    for module, files in imported().items():
        if module in sys.stdlib_module_names or module == "otelhooks":
            continue
        if all(LOADED_BY_THEIR_HOST.get(f) == module for f in files):
            continue
        distributions = {_name(d) for d in providers.get(module, ())}
        if not distributions & wanted:
            undeclared[f"{module} (from {sorted(distributions) or 'nothing installed'})"] = files
    assert not undeclared, undeclared
