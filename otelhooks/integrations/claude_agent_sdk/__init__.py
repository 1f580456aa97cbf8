"""The Claude Agent SDK: otelhooks' guards and spans as ``ClaudeAgentOptions(hooks=...)``.

``hooks_for(oh)`` returns the mapping the SDK takes (``{event: [HookMatcher(...)]}``) for every
hook event the SDK offers. Each Python callback hands the SDK's hook input to the same bridge the
Claude Code CLI's hooks reach (sessions, tool-use pairing, one trace per session, ``execute_tool``
spans), running the hooks of ``oh``'s engine, and answers in the SDK's own output shape
(``continue_``, ``hookSpecificOutput.permissionDecision`` ...). No settings file, no hook process.

Example:
    >>> from claude_agent_sdk import ClaudeAgentOptions  # doctest: +SKIP
    >>> oh = otelhooks.configure(hooks="hooks.yaml")  # doctest: +SKIP
    >>> options = ClaudeAgentOptions(hooks=hooks_for(oh))  # doctest: +SKIP

Needs the ``claude-agent-sdk`` package (``otelhooks[claude-agent-sdk]``).
"""

from otelhooks.integrations.claude_agent_sdk._hooks import SDK_EVENTS, hooks_for

__all__ = ["SDK_EVENTS", "hooks_for"]
