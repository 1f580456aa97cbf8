"""A regex that matches an MCP tool by its configured name matches Codex CLI's name of it too.

Codex CLI makes every character of an MCP server's or tool's name but letters, digits and ``_``
an ``_`` (``mcp__my-files__delete-file.v2`` is its ``mcp__my_files__delete_file_v2``; the real
CLI's renames are pinned in ``tests/coding_agents_cli``). A regex with such a character
anywhere but right after ``mcp__`` missed Codex's name. Properties over generated names, through
the public ``compile_matcher``: every regex shape that matches the configured name matches
Codex's, no anchored regex starts matching another tool, and no name outside MCP changes.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelhooks import compile_matcher


def _codex(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", part)


def _splits_once(part: str) -> bool:
    """Whether Codex's ``mcp__server__tool`` still splits where the configured name does."""
    codex = _codex(part)
    return "__" not in codex and not codex.startswith("_") and not codex.endswith("_")


# letters, digits, and characters Codex renames (a space, "-", ".", others)
PART = st.text(alphabet="abz09_-. :+", min_size=1, max_size=8).filter(_splits_once)


def _shapes(server: str, tool: str) -> list[tuple[str, str]]:
    """(dialect, matcher) shapes naming ``server``'s ``tool`` as configured."""
    s, t = re.escape(server), re.escape(tool)
    dashed = tool.replace(".", "\\.")  # "-" and " " left bare, as people write them
    return [
        ("claude", f"^mcp__{s}__{t}$"),
        ("claude", f"mcp__.*__{t}$"),
        ("claude", f"^mcp__{s}__(nothing|{dashed})$"),
        ("claude", f"^mcp__[^_]+__{t}$"),
        ("otelhooks", f"/^{s}\\/{t}$/"),
        ("otelhooks", f"/^{s}\\/(?:nothing|{dashed})$/"),
        ("lobehub", f"^{s}/{t}$"),
        ("workspace", f"/^mcp__{s}__{t}$/"),
    ]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(server=PART, tool=PART)
def test_a_regex_matching_the_configured_name_matches_codex_s(server: str, tool: str) -> None:
    configured = f"mcp__{server}__{tool}"
    codex = f"mcp__{_codex(server)}__{_codex(tool)}"
    for dialect, source in _shapes(server, tool):
        matcher = compile_matcher(source, dialect)
        if matcher.matches((configured,)):
            assert matcher.matches((codex,)), (dialect, source, codex)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(server=PART, tool=PART, other=PART)
def test_an_anchored_regex_does_not_match_another_tool(server: str, tool: str, other: str) -> None:
    if _codex(other) == _codex(tool):
        return
    codex_other = f"mcp__{_codex(server)}__{_codex(other)}"
    for dialect, source in _shapes(server, tool):
        if "^" in source and ".*" not in source and "nothing" not in source:
            assert not compile_matcher(source, dialect).matches((codex_other,)), source


@pytest.mark.parametrize(
    ("source", "codex"),
    [
        ("mcp__.*__delete-file", "mcp__files__delete_file"),
        ("mcp__files__(rm|delete-all)", "mcp__files__delete_all"),
        ("mcp__[a-z-]+__delete_file", "mcp__my_files__delete_file"),
        ("mcp__[]a-z-]+__rm", "mcp__my_files__rm"),
        (r"mcp__files__delete\x2dfile", "mcp__files__delete_file"),
        (r"mcp__files__delete\sfile", "mcp__files__delete_file"),
        ("(?i)MCP__FILES__DELETE-FILE", "mcp__files__delete_file"),
        ("mcp__files__(?P<verb>delete)-file", "mcp__files__delete_file"),
        ("mcp__files__delete-file{1,2}$", "mcp__files__delete_filee"),
        ("mcp__files__(?:rm|delete-file)$", "mcp__files__delete_file"),
    ],
)
def test_regex_syntax_is_kept_and_literals_are_renamed(source: str, codex: str) -> None:
    assert compile_matcher(source, "claude").matches((codex,))


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("^web-fetch$|^Bash$", "web_fetch"),  # not an MCP tool: Codex renames nothing
        ("mcp__files__[^-]+$", "mcp__files__delete-file"),  # a negated class is kept
        ("mcp__files__delete-file$", "mcp__files__delete_files"),
        ("^mcp__my-files__rm$", "mcp__my_files__rm_all"),
    ],
)
def test_what_the_twin_does_not_match(source: str, value: str) -> None:
    assert not compile_matcher(source, "claude").matches((value,))


def test_the_index_knows_the_prefix_of_codex_s_name() -> None:
    # an anchored regex: the registry rules a value out by its prefix, Codex's name included
    prefixes = compile_matcher("/^mcp__my-files__delete.*/", "otelhooks").index_prefixes
    assert prefixes is not None
    assert "mcp__my_files__delete" in prefixes
    assert "my_files/delete" in prefixes
