"""The Claude Agent SDK: otelhooks' guards and spans as ``ClaudeAgentOptions(hooks=...)``.

``hooks_for(oh)`` returns the mapping the SDK takes (``{event: [HookMatcher(...)]}``) for every
hook event the SDK calls back for (:data:`SDK_EVENTS`). Each Python callback hands the SDK's
hook input to the same bridge the Claude Code CLI's hooks reach (sessions, tool-use pairing,
one trace per session, ``execute_tool`` spans), running the hooks of ``oh``'s engine, and
answers in the SDK's own output shape (``continue_``, ``hookSpecificOutput.permissionDecision``
...). No settings file, no hook process.
The SDK never calls back for some events (``SessionStart`` at startup, ``SessionEnd``,
``InstructionsLoaded``: :data:`UNDELIVERED_EVENTS`): ``hooks_for`` refuses a guard on one
(``accept_undelivered=True`` runs without it) and names every hook that would never run in an
:class:`UndeliveredHookWarning`; each callback applies the same rule to the hooks ``oh`` is given
later, refusing its event and stopping the run. The hooks of an ``oh.operation(hooks=...)`` the
SDK is started in run on every event of its turns (each turn is an operation of its own, run
within the application's). With no ``SessionEnd``, close what ``hooks_for`` returned (or use it
in ``with``) when the application is done with its sessions, so the calls the CLI refused after
``PreToolUse`` are recorded too.

Example:
    >>> import otelhooks
    >>> from claude_agent_sdk import ClaudeAgentOptions
    >>> from otelhooks.integrations.claude_agent_sdk import hooks_for
    >>> no_rm = {"id": "no-rm", "type": "before_tool_call", "matcher": "Bash",
    ...          "command": "grep -q 'rm ' && echo 'no rm' >&2 && exit 2 || exit 0"}
    >>> oh = otelhooks.configure(otlp=False, set_global=False, hooks=[no_rm])
    >>> with hooks_for(oh) as hooks:  # closing it ends the sessions it saw
    ...     options = ClaudeAgentOptions(hooks=hooks)  # then query(prompt, options=options)
    ...     "PreToolUse" in options.hooks
    True
    >>> oh.shutdown().ok
    True

Needs the ``claude-agent-sdk`` package (``otelhooks[claude-agent-sdk]``).
"""

from otelhooks.integrations.claude_agent_sdk._hooks import (
    SDK_EVENTS,
    UNDELIVERED_EVENTS,
    SdkHooks,
    hooks_for,
)
from otelhooks.integrations.claude_agent_sdk._undelivered import UndeliveredHookWarning

__all__ = ["SDK_EVENTS", "UNDELIVERED_EVENTS", "SdkHooks", "UndeliveredHookWarning", "hooks_for"]
