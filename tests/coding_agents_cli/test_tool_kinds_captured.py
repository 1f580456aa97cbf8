"""The tool-kind table (``otelhooks._tool_kinds``) checked on each real CLI's hook inputs, one
call per kind the CLI has: the fixtures in ``captured/kinds/`` (written by ``python -m
tests.coding_agents_cli._kinds`` from the pinned Claude Code, Codex and Gemini CLIs) and a fresh
capture from the CLIs installed now."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from otelhooks import compile_matcher
from otelhooks._tool_kinds import KIND_NAMES
from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from tests.coding_agents_cli._kinds import (
    CLI_PATHS,
    FIXTURES,
    KIND_CALLS,
    POST,
    PRE,
    capture,
    fixture_name,
)
from tests.coding_agents_cli._runs import CLI_TEST_S, need_cli, skip_reason

KINDS = [kind.removeprefix("@") for kind in KIND_NAMES]
# Codex's apply_patch both writes and edits files (one tool for both kinds)
_BOTH = {("codex", "file_write"): "file_edit", ("codex", "file_edit"): "file_write"}
CASES = [(cli, kind) for cli, calls in KIND_CALLS.items() for kind in calls]


def _fixtures(cli: str, kind: str) -> list[dict[str, Any]]:
    found = sorted(FIXTURES.glob(f"{cli}-*-{kind}-*.json"))
    return [json.loads(path.read_text()) for path in found]


def _assert_kind_matches_only(cli: str, kind: str, tool: str) -> None:
    assert compile_matcher(f"@{kind}", "otelhooks").matches((tool,)), (cli, kind, tool)
    for other in KINDS:
        if other != kind and _BOTH.get((cli, kind)) != other:
            assert not compile_matcher(f"@{other}", "otelhooks").matches((tool,)), (other, tool)
    assert not compile_matcher("@mcp", "otelhooks").matches((tool,))


@pytest.mark.parametrize(("cli", "kind"), CASES)
def test_every_kind_a_cli_has_is_captured_before_and_after_the_tool(cli: str, kind: str) -> None:
    events = {str(e["hook_event_name"]) for e in _fixtures(cli, kind)}
    assert PRE[cli] in events
    assert events & set(POST[cli])


@pytest.mark.parametrize(("cli", "kind"), CASES)
def test_the_kind_matches_the_captured_tool_name_and_no_other_kind(cli: str, kind: str) -> None:
    for event in _fixtures(cli, kind):
        _assert_kind_matches_only(cli, kind, str(event["tool_name"]))


def test_the_fixtures_name_the_cli_and_its_version() -> None:
    names = {p.name for p in FIXTURES.glob("*.json")}
    assert names
    for name in names:
        cli = next(c for c in KIND_CALLS if name.startswith(f"{c}-"))
        version = name.removeprefix(f"{cli}-").split("-")[0]
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), name


_DENY = """\
hooks:
  - id: no-{kind}
    type: PreToolUse
    matcher: "@{kind}"
    command: "echo 'no {kind} here' >&2; exit 2"
"""


@pytest.mark.parametrize(("cli", "kind"), CASES)
def test_a_kind_guard_denies_the_captured_call_in_the_clis_own_format(
    tmp_path: Path, cli: str, kind: str
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(_DENY.format(kind=kind))
    options = BridgeOptions(hooks=(str(hooks),), state=str(tmp_path / "state.sqlite3"), dialect=cli)
    (pre,) = [e for e in _fixtures(cli, kind) if e["hook_event_name"] == PRE[cli]]
    answer = json.loads(run_hook(json.dumps(pre), options, environ={}).stdout)
    if cli == "gemini":
        assert answer == {"decision": "deny", "reason": f"no {kind} here"}
    else:
        decision = answer["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert decision["permissionDecisionReason"] == f"no {kind} here"


@pytest.mark.timeout(CLI_TEST_S)
@pytest.mark.parametrize("cli", list(KIND_CALLS))
def test_the_installed_cli_sends_what_the_fixtures_hold(tmp_path: Path, cli: str) -> None:
    need_cli(CLI_PATHS[cli])
    run, by_kind = capture(cli, tmp_path)
    assert run.returncode == 0, skip_reason(run)
    for kind, events in by_kind.items():
        names = {str(e["hook_event_name"]) for e in events}
        assert PRE[cli] in names, (kind, skip_reason(run))
        for event in events:
            _assert_kind_matches_only(cli, kind, str(event["tool_name"]))
            kept = FIXTURES / fixture_name(cli, kind, str(event["hook_event_name"]))
            assert kept.exists(), f"{kept.name}: run python -m tests.coding_agents_cli._kinds"
            assert json.loads(kept.read_text())["tool_name"] == event["tool_name"]
