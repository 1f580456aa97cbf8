"""``docs/adapters.md``'s Claude Code section says what the bridge does: every documented event in
its table with the event it maps to, and the guard entry failing closed. The documented events
come from the fixtures, whose source is Claude Code's hooks reference (github.com mirror)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from otelhooks._cli import build_parser
from otelhooks.integrations.coding_agents._mapping import EVENTS
from tests.conformance.claude_code._bridge_cli import fixture

DOC = (Path(__file__).resolve().parents[3] / "docs" / "adapters.md").read_text()


# Events of the pinned CLI (2.1.337) that the docs' mirror the fixtures come from predates: its
# hook input schema names them, and tests/claude_code_cli/test_model_switch.py and
# test_interrupt.py fire them
CLI_ONLY = {"PreModelSwitch", "PostModelSwitch", "Interrupt"}


def test_the_event_table_lists_every_documented_event_with_its_otelhooks_event() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", DOC, flags=re.MULTILINE))
    documented = set(fixture("hook_inputs.json")["events_table"])
    assert set(rows) == documented | CLI_ONLY
    assert rows == {name: event.canonical for name, event in EVENTS.items()}


def test_the_guard_entry_fails_closed_and_the_others_keep_claude_codes_rule() -> None:
    (snippet,) = re.findall(r"```json\n(.*?)```", DOC, flags=re.DOTALL)
    closed = {}
    for event, groups in json.loads(snippet)["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                args = build_parser().parse_args(shlex.split(handler["command"])[1:])
                closed[event] = args.fail_closed
    assert closed.pop("PreToolUse") is True
    assert not any(closed.values())
    assert "WorktreeCreate" not in closed  # its stdout is the worktree path
