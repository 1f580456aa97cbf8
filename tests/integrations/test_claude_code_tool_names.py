"""One name for one tool: ``mcp__<server>__<tool>`` (Claude Code) and ``<server>/<tool>`` (the MCP
gateway, the other runtimes) are the same tool to every matcher, and ``validate`` warns about a
matcher that can never match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelhooks import Block, Hook, HookRegistry, compile_matcher
from otelhooks._cli._validate_cmd import report_lines
from otelhooks._matchers import tool_aliases
from otelhooks.integrations.claude_code import BridgeOptions, run_hook


def _pre(tool: str) -> str:
    return json.dumps(
        {
            "session_id": "names",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_use_id": f"toolu_{tool}",
            "tool_input": {"key": "v"},
        }
    )


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
@pytest.mark.parametrize("matcher", ["mcp__memory__.*", "mcp__memory__create.*|Bash"])
def test_a_regex_written_from_the_clis_reference_guards_in_a_hook_list(
    tmp_path: Path, dialect: str, matcher: str
) -> None:
    """``type: PreToolUse`` in a hook list takes Claude Code's matcher rules (and /re/): the
    workspace rules it took before read ``mcp__memory__.*`` as an exact name, and the guard
    never fired (the real Codex CLI ran the call)."""
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        f"hooks:\n  - id: no-memory\n    type: PreToolUse\n    matcher: '{matcher}'\n"
        "    command: \"echo 'memory is read-only' >&2; exit 2\"\n"
    )
    options = BridgeOptions(
        hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=dialect
    )
    denied = run_hook(_pre("mcp__memory__create_entities"), options)
    allowed = run_hook(_pre("Read"), options)
    answer = json.loads(denied.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"] == "memory is read-only"
    assert (allowed.exit_code, allowed.stdout) == (0, "")


def test_a_gateway_style_name_guards_claude_codes_mcp_call(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n  - id: no-create\n    type: PreToolUse\n    matcher: memory/create_entities\n"
        "    command: \"echo 'memory is read-only' >&2; exit 2\"\n"
    )
    options = BridgeOptions(hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"))
    denied = run_hook(_pre("mcp__memory__create_entities"), options)
    allowed = run_hook(_pre("mcp__memory__read_graph"), options)
    answer = json.loads(denied.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"] == "memory is read-only"
    assert allowed.stdout == ""


@pytest.mark.parametrize(
    ("matcher", "dialect", "values"),
    [
        ("mcp__memory__create_entities", "claude", ("memory/create_entities", "create_entities")),
        ("memory/create_entities", "otelhooks", ("mcp__memory__create_entities",)),
        ("mcp__memory__.*", "claude", ("memory/create_entities", "create_entities")),
        ("mcp__.*__write.*", "claude", ("fs/write_file", "write_file")),
        ("/^memory\\/.*/", "otelhooks", ("mcp__memory__create_entities",)),
    ],
)
def test_a_matcher_matches_the_tool_under_its_other_name(
    matcher: str, dialect: str, values: tuple[str, ...]
) -> None:
    assert compile_matcher(matcher, dialect).matches(values)


def test_a_server_name_alone_does_not_match_every_tool_named_like_it() -> None:
    # mcp__memory__create names the memory server's tool, not every tool called create
    assert not compile_matcher("mcp__memory__create", "claude").matches(("create",))


def test_the_registry_index_finds_an_anchored_regex_under_the_other_name() -> None:
    registry = HookRegistry()
    registry.register(
        [Hook(id="db", type="before_tool_call", matcher="/^db\\/.*/", handler=lambda e: Block())]
    )
    assert [h.id for h in registry.match("before_tool_call", ("mcp__db__query",))] == ["db"]
    assert registry.match("before_tool_call", ("mcp__other__query",)) == []


def test_tool_aliases_go_both_ways() -> None:
    assert tool_aliases("mcp__brave-search__web") == ("brave-search/web", "web")
    assert tool_aliases("brave-search/web") == ("mcp__brave-search__web",)


def test_validate_warns_about_matchers_that_never_match(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(
        "hooks:\n"
        "  - {id: half, type: PreToolUse, matcher: mcp__memory, command: 'true'}\n"
        "  - {id: wrong-event, type: SessionStart, matcher: mcp__memory__x, command: 'true'}\n"
        "  - {id: fine, type: PreToolUse, matcher: 'mcp__memory__.*', command: 'true'}\n"
    )
    lines, problems = report_lines([str(path)])
    warnings = [line for line in lines if "never matches" in line]
    assert problems == 0
    assert len(warnings) == 2
    assert "hook half" in warnings[0]
    assert "mcp__memory__.*" in warnings[0]
    assert "hook wrong-event" in warnings[1]
    _, strict_problems = report_lines([str(path)], strict=True)
    assert strict_problems == 2
