"""``docs/adapters.md`` stays true: its Claude Code snippets load, and the public surface of each
adapter is the intended one."""

from __future__ import annotations

import importlib
import json
import re
import shlex
from pathlib import Path

import pytest

from otelhooks import load_config
from otelhooks._cli import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_settings_snippet_registers_the_bridge_for_the_hook_events() -> None:
    (snippet,) = blocks("json")
    settings = json.loads(snippet)
    events = set(settings["hooks"])
    assert {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"} <= events
    for groups in settings["hooks"].values():
        for group in groups:
            (entry,) = group["hooks"]
            argv = shlex.split(entry["command"])
            assert argv[:2] == ["otelhooks", "claude-code"]
            args = build_parser().parse_args(argv[1:])
            assert args.hooks == [".claude/otelhooks.yaml"]


def test_the_hooks_file_of_the_claude_code_section_loads(tmp_path: Path) -> None:
    (yaml_block,) = [b for b in blocks("yaml") if "no-rm" in b]
    path = tmp_path / "otelhooks.yaml"
    path.write_text(yaml_block)
    assert [h.id for h in load_config([path]).hooks] == ["no-rm", "tool-audit"]


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (
            "otelhooks.integrations.openai_agents",
            [
                "GUARDRAIL_NAME",
                "PROVIDER",
                "HookedRunner",
                "RunBlockedError",
                "ToolNotHookedError",
                "UnguardedToolCall",
                "UnguardedToolWarning",
                "hook_agent",
                "hook_tool",
            ],
        ),
        (
            "otelhooks.integrations.langchain",
            [
                "HOOKED_METADATA_KEY",
                "PROVIDER",
                "HookedTool",
                "OtelHooksCallbackHandler",
                "OtelHooksMiddleware",
                "ResultNotRewritableError",
                "RunBlockedError",
                "ToolErrorNotRetoldError",
                "ToolNotHookedError",
                "ToolRun",
                "UnguardedToolCall",
                "UnguardedToolWarning",
                "hook_tool",
            ],
        ),
        (
            "otelhooks.integrations.claude_code",
            [
                "AGENT",
                "DEFAULT_STATE_PATH",
                "STATE_ENV",
                "BridgeOptions",
                "BridgeState",
                "ClaudeCodeBridge",
                "DenyMode",
                "HookResponse",
                "INSTALLED_EVENTS",
                "ProjectChange",
                "SettingsChange",
                "install",
                "install_project",
                "is_ours",
                "run_hook",
                "session_trace_id",
                "settings_path",
                "uninstall",
                "uninstall_project",
            ],
        ),
        (
            "otelhooks.integrations.claude_agent_sdk",
            ["SDK_EVENTS", "SdkHooks", "UNDELIVERED_EVENTS", "UndeliveredHookWarning", "hooks_for"],
        ),
        (
            "otelhooks.integrations.coding_agents",
            [
                "DIALECTS",
                "BridgeState",
                "CodingAgentBridge",
                "Dialect",
                "codex_trust_notes",
                "dialect_named",
                "hooks_path",
                "install_agent",
                "uninstall_agent",
            ],
        ),
    ],
)
def test_each_adapter_exports_exactly_its_public_names(module: str, names: list[str]) -> None:
    assert sorted(importlib.import_module(module).__all__) == sorted(names)


def test_importing_otelhooks_imports_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, otelhooks, otelhooks.integrations; "
        "print(sorted(m for m in ('agents', 'langchain_core', 'langgraph') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_claude_code_bridge_is_the_coding_agent_bridge_under_its_first_name() -> None:
    from otelhooks.integrations.claude_code import ClaudeCodeBridge
    from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge

    assert ClaudeCodeBridge is CodingAgentBridge
    assert CodingAgentBridge.__name__ == "CodingAgentBridge"
    assert BridgeState.__module__ == "otelhooks.integrations.coding_agents._state"


def _coding_agent_events_table() -> list[list[str]]:
    text = DOC.read_text()
    section = text[text.index("## Every coding agent") :]
    section = section[section.index("### Events") :]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Codex CLI event"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


@pytest.mark.parametrize(("dialect", "column"), [("codex", 0), ("gemini", 2)])
def test_the_coding_agent_events_table_is_each_dialects_event_map(
    dialect: str, column: int
) -> None:
    from otelhooks.integrations.coding_agents import dialect_named

    events = dialect_named(dialect).events
    listed: set[str] = set()
    for row in _coding_agent_events_table():
        names, said = re.findall(r"`(\w+)`", row[column]), row[column + 1]
        listed.update(names)
        bridge = re.match(r"as `(\w+)`", said)
        for name in names:
            # "as `X`": translated to X; otherwise ("the same", a span of its own) kept as it is
            assert events[name] == (bridge.group(1) if bridge else name), (name, said)
    assert listed == set(events)
