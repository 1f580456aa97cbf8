"""Every attribute, link and metric name otelhooks writes is defined once, in ``_semconv``.

``otelhooks.semconv`` offers each of them to users reading exported telemetry; a name spelled
out as a string somewhere else is one that module would silently lack (the approval event's
attributes, the MCP gateway's names and the coding agents' span links once were), and two
spellings of one name can drift apart (the links once used two different keys).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import otelhooks

PACKAGE = Path(otelhooks.__file__).parent

# a dotted name of two dots or more in a namespace otelhooks writes; module paths (a segment
# starting with "_", or otelhooks.integrations...) are not attribute names
_NAME = re.compile(
    r"^(otelhooks|gen_ai|mcp|jsonrpc|rpc|network|client|server|claude_code|codex|gemini_cli)"
    r"(\.[a-z0-9_]+){2,}$"
)

# Names otelhooks only reads, written by other producers: each with the file that reads it.
READ_ONLY = {
    ("web/_summary.py", "gen_ai.usage.cost"),
    ("web/_summary.py", "otelhooks.usage.cost"),
    ("web/_summary.py", "claude_code.cost.usage"),
}


def _docstrings(tree: ast.Module) -> set[int]:
    owners = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, owners) and node.body and isinstance(node.body[0], ast.Expr):
            found.add(id(node.body[0].value))
    return found


def _names_in(source: str) -> list[tuple[str, int]]:
    """The telemetry names spelled out in ``source``'s code (not its docstrings)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        value = node.value
        if id(node) in docs or not (_NAME.match(value) or value == "otelhooks.link"):
            continue
        if any(part.startswith("_") for part in value.split(".")):
            continue
        if not value.startswith("otelhooks.integrations."):
            found.append((value, node.lineno))
    return found


def _spelled_names() -> set[tuple[str, str, int]]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_semconv.py":
            continue
        file = path.relative_to(PACKAGE).as_posix()
        for value, line in _names_in(path.read_text(encoding="utf-8")):
            found.add((file, value, line))
    return found


def test_no_module_but_semconv_spells_out_a_telemetry_name() -> None:
    stray = sorted(
        f"{file}:{line}: {value}"
        for file, value, line in _spelled_names()
        if (file, value) not in READ_ONLY
    )
    assert stray == [], "define these in otelhooks/_semconv.py and use the constant"


def test_the_read_only_list_names_only_names_still_read() -> None:
    spelled = {(file, value) for file, value, _ in _spelled_names()}
    assert spelled >= READ_ONLY


def test_the_scan_finds_a_name_in_code_and_not_in_prose_or_module_paths() -> None:
    source = (
        '"""otelhooks.hook.decision in prose."""\n'
        "import importlib\n"
        'ATTRS = {"otelhooks.hook.decision": 1, "otelhooks.link": "x"}\n'
        'MODULE = importlib.import_module("otelhooks.web._store")\n'
        'PACKAGE = "otelhooks.integrations.claude_code"\n'
    )
    assert sorted(_names_in(source)) == [("otelhooks.hook.decision", 3), ("otelhooks.link", 3)]


def test_every_link_otelhooks_writes_says_why_under_one_key() -> None:
    from otelhooks import semconv

    assert semconv.LINK_RELATION == "otelhooks.link.relation"
    values = {semconv.LINK_PARENT_OPERATION, semconv.LINK_HOOK_DECISION, semconv.LINK_AGENT_TOOL}
    assert values == {"parent_operation", "hook_decision", "agent_tool"}
