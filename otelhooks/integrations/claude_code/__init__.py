"""The Claude Code hook bridge: ``otelhooks claude-code`` (no extra needed).

Register the command for every hook event in ``.claude/settings.json``; each invocation reads
one event on stdin, keeps the session as one trace and each tool use as one ``execute_tool``
span across processes, runs the otelhooks hooks that match and answers ``PreToolUse`` in Claude
Code's own format. :func:`run_hook` is the one entry point (the CLI and an HTTP route alike).
The bridge itself is the one every coding agent shares
(:class:`~otelhooks.integrations.coding_agents.CodingAgentBridge`); what is Claude Code's alone
lives here: its settings installer, the standard-library hook client and ``serve``'s Claude Code
routes. See ``docs/adapters.md`` for the settings snippet and the event table.

The installer ``otelhooks claude-code install`` runs is public too, for a script that onboards a
project: :func:`install_project` / :func:`uninstall_project` do what the command does (the
settings file each form belongs in, the starter hook file) and return a :class:`ProjectChange`;
:func:`install` / :func:`uninstall` edit one settings file (:func:`settings_path`) and return a
:class:`SettingsChange`; :func:`is_ours` tells an entry they wrote from any other::

    >>> from otelhooks.integrations.claude_code import install_project, uninstall_project
    >>> result = install_project(project="my-project", http="http://127.0.0.1:4319")
    >>> [(c.path.name, c.verb) for c in result.changes]
    [('settings.local.json', 'unchanged'), ('settings.json', 'created')]
    >>> [c.verb for c in uninstall_project(project="my-project").changes]
    ['deleted', 'unchanged']

``ClaudeCodeBridge`` is :class:`~otelhooks.integrations.coding_agents.CodingAgentBridge` under its
first name (the same class, not a subclass), kept for code written before the bridge served
Codex CLI and Gemini CLI too::

    >>> from otelhooks.integrations.claude_code import ClaudeCodeBridge
    >>> from otelhooks.integrations.coding_agents import CodingAgentBridge
    >>> ClaudeCodeBridge is CodingAgentBridge
    True
"""

from typing import TYPE_CHECKING

from otelhooks._lazy import lazy_names

if TYPE_CHECKING:
    from otelhooks.integrations.claude_code._install import (
        INSTALLED_EVENTS,
        SettingsChange,
        install,
        is_ours,
        settings_path,
        uninstall,
    )
    from otelhooks.integrations.claude_code._install_project import (
        ProjectChange,
        install_project,
        uninstall_project,
    )
    from otelhooks.integrations.coding_agents._bridge import ClaudeCodeBridge
    from otelhooks.integrations.coding_agents._common import AGENT, DenyMode, HookResponse
    from otelhooks.integrations.coding_agents._run import BridgeOptions, run_hook
    from otelhooks.integrations.coding_agents._spans import session_trace_id
    from otelhooks.integrations.coding_agents._state import (
        DEFAULT_STATE_PATH,
        STATE_ENV,
        BridgeState,
    )

# Every name loads its module on first use (PEP 562): the bridge's own processes, one per hook
# event for the slow command form, never install anything, and an install (its own short-lived
# process) never runs the bridge, whose imports (the span pipeline, the OTLP exporters, the
# webhook client) are most of a process's start.
_WHERE = {
    **dict.fromkeys(("ClaudeCodeBridge",), "otelhooks.integrations.coding_agents._bridge"),
    **dict.fromkeys(
        ("AGENT", "DenyMode", "HookResponse"), "otelhooks.integrations.coding_agents._common"
    ),
    **dict.fromkeys(("BridgeOptions", "run_hook"), "otelhooks.integrations.coding_agents._run"),
    **dict.fromkeys(("session_trace_id",), "otelhooks.integrations.coding_agents._spans"),
    **dict.fromkeys(
        ("DEFAULT_STATE_PATH", "STATE_ENV", "BridgeState"),
        "otelhooks.integrations.coding_agents._state",
    ),
    **dict.fromkeys(
        ("INSTALLED_EVENTS", "SettingsChange", "install", "is_ours", "settings_path", "uninstall"),
        "otelhooks.integrations.claude_code._install",
    ),
    **dict.fromkeys(
        ("ProjectChange", "install_project", "uninstall_project"),
        "otelhooks.integrations.claude_code._install_project",
    ),
}

__all__ = [
    "AGENT",
    "DEFAULT_STATE_PATH",
    "INSTALLED_EVENTS",
    "STATE_ENV",
    "BridgeOptions",
    "BridgeState",
    "ClaudeCodeBridge",
    "DenyMode",
    "HookResponse",
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
]


__getattr__ = lazy_names(__name__, _WHERE)
