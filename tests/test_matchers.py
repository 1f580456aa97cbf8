"""The matcher rules of each dialect (see the table in ``otelhooks._matchers``)."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from otelhooks import Hook, compile_matcher
from otelhooks._matchers import MatchKind

DIALECTS = ["otelhooks", "lobehub", "kernel", "workspace", "claude"]

# What a tool event is matched on: ``identifier/apiName`` and the bare tool name.
READ = ("fs/readFile", "readFile")
WRITE = ("fs/writeFile", "writeFile")
EDIT = ("editor/Edit", "Edit")


# -- match all ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("source", [None, "", "*", "  ", " * "])
def test_star_empty_and_omitted_match_everything(dialect: str, source: str | None) -> None:
    matcher = compile_matcher(source, dialect)
    assert matcher.kind is MatchKind.ALL
    assert matcher.matches(READ)
    assert matcher.matches(("anything",))


# -- exact names -------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["otelhooks", "workspace", "claude"])
def test_plain_name_matches_exactly(dialect: str) -> None:
    matcher = compile_matcher("readFile", dialect)
    assert matcher.kind is MatchKind.NAMES
    assert matcher.matches(READ)
    assert not matcher.matches(("readFileAll",))
    assert not matcher.matches(("xreadFile",))


def test_workspace_bar_separated_names_are_a_list_as_in_claude_code() -> None:
    matcher = compile_matcher("Edit|Write", "workspace")
    assert matcher.kind is MatchKind.NAMES
    assert matcher.matches(EDIT)
    assert matcher.matches(("Write",))
    assert not matcher.matches(("Edit|Write",))


def test_otelhooks_name_may_be_identifier_slash_api_name() -> None:
    matcher = compile_matcher("fs/readFile", "otelhooks")
    assert matcher.kind is MatchKind.NAMES
    assert matcher.matches(READ)
    assert not matcher.matches(WRITE)


def test_otelhooks_name_list_matches_any_listed_name() -> None:
    matcher = compile_matcher("fs/readFile|Edit", "otelhooks")
    assert matcher.matches(READ)
    assert matcher.matches(EDIT)
    assert not matcher.matches(WRITE)


# -- /regex/ -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["otelhooks", "workspace"])
def test_slashed_string_is_a_regex(dialect: str) -> None:
    matcher = compile_matcher("/.*Database.*/", dialect)
    assert matcher.kind is MatchKind.REGEX
    assert matcher.matches(("queryDatabaseRows",))
    assert not matcher.matches(("readFile",))


@pytest.mark.parametrize("dialect", ["otelhooks", "workspace"])
def test_slashed_regex_is_searched_unanchored(dialect: str) -> None:
    matcher = compile_matcher("/File/", dialect)
    assert matcher.matches(READ)
    assert matcher.matches(WRITE)
    assert not matcher.matches(EDIT)


# -- LobeHub: a regex against identifier/apiName ------------------------------------------------


def test_lobehub_matcher_is_a_regex_against_identifier_slash_api_name() -> None:
    matcher = compile_matcher("^fs/readFile$", "lobehub")
    assert matcher.kind is MatchKind.REGEX
    assert matcher.matches(READ)
    assert not matcher.matches(WRITE)


def test_lobehub_matcher_can_select_a_whole_identifier() -> None:
    matcher = compile_matcher("^fs/", "lobehub")
    assert matcher.matches(READ)
    assert matcher.matches(WRITE)
    assert not matcher.matches(EDIT)


def test_lobehub_plain_word_is_searched_not_compared_exactly() -> None:
    matcher = compile_matcher("read", "lobehub")
    assert matcher.kind is MatchKind.REGEX
    assert matcher.matches(READ)
    assert not matcher.matches(WRITE)


def test_lobehub_regex_alternation() -> None:
    matcher = compile_matcher("^fs/(readFile|writeFile)$", "lobehub")
    assert matcher.matches(READ)
    assert matcher.matches(WRITE)
    assert not matcher.matches(EDIT)


# -- Claude Code: name lists and unanchored regexes ---------------------------------------------


def test_claude_bar_list_matches_each_name() -> None:
    matcher = compile_matcher("Edit|Write", "claude")
    assert matcher.kind is MatchKind.NAMES
    assert matcher.names == frozenset({"Edit", "Write"})
    assert matcher.matches(EDIT)
    assert matcher.matches(("Write",))
    assert not matcher.matches(("MultiEdit",))


def test_claude_comma_list_with_spaces_matches_each_name() -> None:
    matcher = compile_matcher("Edit, Write", "claude")
    assert matcher.names == frozenset({"Edit", "Write"})
    assert matcher.matches(("Write",))


def test_claude_names_allow_underscores_dashes_and_digits() -> None:
    matcher = compile_matcher("mcp_server-1", "claude")
    assert matcher.kind is MatchKind.NAMES
    assert matcher.matches(("mcp_server-1",))


def test_claude_other_characters_make_an_unanchored_regex() -> None:
    matcher = compile_matcher("mcp__.*", "claude")
    assert matcher.kind is MatchKind.REGEX
    assert matcher.matches(("mcp__github__create_issue",))
    assert matcher.matches(("x_mcp__y",))  # unanchored: searched, not matched at the start
    assert not matcher.matches(("Edit",))


def test_claude_anchors_in_the_regex_are_honoured() -> None:
    matcher = compile_matcher("^Notebook.*$", "claude")
    assert matcher.matches(("NotebookEdit",))
    assert not matcher.matches(("MyNotebookEdit",))


# -- invalid regexes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "source"),
    [
        ("lobehub", "fs/(read"),
        ("workspace", "/[unclosed/"),
        ("claude", "(Edit"),
        ("otelhooks", "/(/"),
    ],
)
def test_invalid_regex_falls_back_to_exact_match(dialect: str, source: str) -> None:
    with capture_logs():
        matcher = compile_matcher(source, dialect)
    assert matcher.kind is MatchKind.NAMES
    assert matcher.matches((source,))
    assert not matcher.matches(READ)


def test_invalid_regex_logs_a_warning_naming_hook_and_matcher() -> None:
    with capture_logs() as logs:
        compile_matcher("fs/(read", "lobehub", hook_id="guard")
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["hook_id"] == "guard"
    assert warnings[0]["matcher"] == "fs/(read"
    assert "exact" in warnings[0]["event"]


def test_valid_regex_logs_nothing() -> None:
    with capture_logs() as logs:
        compile_matcher("^fs/", "lobehub")
    assert logs == []


def test_hook_with_invalid_regex_registers_and_warns() -> None:
    with capture_logs() as logs:
        hook = Hook(id="bad-re", type="afterToolCall", handler=print, matcher="fs/(read")
    assert hook.compiled_matcher.kind is MatchKind.NAMES
    assert [e["hook_id"] for e in logs if e["log_level"] == "warning"] == ["bad-re"]


# -- the dialect comes from the hook's event name ------------------------------------------------


def test_lobehub_type_name_selects_lobehub_matcher_rules() -> None:
    hook = Hook(id="h", type="beforeToolCall", handler=print, matcher="^fs/")
    assert hook.compiled_matcher.kind is MatchKind.REGEX
    assert hook.compiled_matcher.matches(READ)


def test_a_claude_code_type_name_selects_otelhooks_rules_claude_codes_and_slashes() -> None:
    slashed = Hook(id="h", type="PreToolUse", handler=print, matcher="/^read/")
    assert slashed.compiled_matcher.kind is MatchKind.REGEX
    assert slashed.compiled_matcher.matches(READ)
    # as Claude Code's, Codex's and Gemini's references write a regex (workspace rules: a name)
    bare = Hook(id="h", type="PreToolUse", handler=print, matcher="mcp__memory__.*")
    assert bare.compiled_matcher.matches(("mcp__memory__create_entities",))


def test_the_workspace_dialect_keeps_its_exact_names() -> None:
    hook = Hook(id="h", type="PreToolUse", handler=print, matcher="read.*", dialect="workspace")
    assert hook.compiled_matcher.kind is MatchKind.NAMES
    assert not hook.compiled_matcher.matches(READ)


def test_explicit_claude_dialect_selects_claude_rules_for_a_claude_event_name() -> None:
    hook = Hook(id="h", type="PreToolUse", handler=print, matcher="Edit|Write", dialect="claude")
    assert hook.compiled_matcher.matches(EDIT)


def test_canonical_type_name_selects_otelhooks_rules() -> None:
    hook = Hook(id="h", type="before_tool_call", handler=print, matcher="fs/readFile")
    assert hook.compiled_matcher.kind is MatchKind.NAMES
    assert hook.compiled_matcher.matches(READ)


def test_the_anchored_prefix_shortcut_decides_as_the_regex_does() -> None:
    import re

    from otelhooks._matchers import RE2_AVAILABLE, _Re2Search, anchored_prefix

    patterns = [r"^shell9\/.*$", "^db9/", "^fs/(read|write)$", r"^ab*c", "(?i)^FS/", "^fs|^db"]
    values = ["shell9/x", "shell9", "xshell9/x", "db9/q", "db9", "fs/read", "fs/readx", "ac",
              "abbbc", "fs/Read", "FS/x", "db/x", "", "ab"]  # fmt: skip
    for pattern in patterns:
        prefix = anchored_prefix(pattern)
        for value in values:
            expected = re.search(pattern, value) is not None
            if prefix is not None and not value.startswith(prefix):
                assert not expected, (pattern, value)  # the shortcut never hides a match
            if RE2_AVAILABLE:
                assert (_Re2Search(pattern, prefix).search(value) is not None) == expected, (
                    pattern,
                    value,
                )
