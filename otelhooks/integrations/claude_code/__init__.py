"""The Claude Code hook bridge: ``otelhooks claude-code`` (no extra needed).

Register the command for every hook event in ``.claude/settings.json``; each invocation reads
one event on stdin, keeps the session as one trace and each tool use as one ``execute_tool``
span across processes, runs the otelhooks hooks that match and answers ``PreToolUse`` in Claude
Code's own format. :func:`run_hook` is the one entry point (the CLI and an HTTP route alike).
The bridge itself is the one every coding agent shares
(:class:`~otelhooks.integrations.coding_agents.CodingAgentBridge`); what is Claude Code's alone
lives here: its settings installer, the standard-library hook client and ``serve``'s Claude Code
routes. See ``docs/adapters.md`` for the settings snippet and the event table.

``ClaudeCodeBridge`` is :class:`~otelhooks.integrations.coding_agents.CodingAgentBridge` under its
first name (the same class, not a subclass), kept for code written before the bridge served
Codex CLI and Gemini CLI too::

    >>> from otelhooks.integrations.coding_agents import CodingAgentBridge
    >>> ClaudeCodeBridge is CodingAgentBridge
    True
"""

from otelhooks.integrations.coding_agents._bridge import ClaudeCodeBridge
from otelhooks.integrations.coding_agents._common import AGENT, DenyMode, HookResponse
from otelhooks.integrations.coding_agents._run import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents._spans import session_trace_id
from otelhooks.integrations.coding_agents._state import DEFAULT_STATE_PATH, STATE_ENV, BridgeState
from otelhooks.integrations.coding_agents._tools import ToolNotOpen

__all__ = [
    "AGENT",
    "DEFAULT_STATE_PATH",
    "STATE_ENV",
    "BridgeOptions",
    "BridgeState",
    "ClaudeCodeBridge",
    "DenyMode",
    "HookResponse",
    "ToolNotOpen",
    "run_hook",
    "session_trace_id",
]
