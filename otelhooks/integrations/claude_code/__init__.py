"""The Claude Code hook bridge: ``otelhooks claude-code`` (no extra needed).

Register the command for every hook event in ``.claude/settings.json``; each invocation reads
one event on stdin, keeps the session as one trace and each tool use as one ``execute_tool``
span across processes, runs the otelhooks hooks that match and answers ``PreToolUse`` in Claude
Code's own format. See ``docs/adapters.md`` for the settings snippet and
:mod:`otelhooks.integrations.claude_code._bridge` for the mapping.
"""

from otelhooks.integrations.claude_code._bridge import ClaudeCodeBridge
from otelhooks.integrations.claude_code._common import AGENT, DenyMode, HookResponse
from otelhooks.integrations.claude_code._spans import session_trace_id
from otelhooks.integrations.claude_code._state import DEFAULT_STATE_PATH, STATE_ENV, BridgeState

__all__ = [
    "AGENT",
    "DEFAULT_STATE_PATH",
    "STATE_ENV",
    "BridgeState",
    "ClaudeCodeBridge",
    "DenyMode",
    "HookResponse",
    "session_trace_id",
]
