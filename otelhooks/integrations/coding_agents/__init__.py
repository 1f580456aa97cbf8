"""The one coding-agent bridge (:class:`CodingAgentBridge`), and the dialect of each CLI it serves.

The bridge is shared: sessions and open tool uses across hook processes (``_state``, and
``_sessions`` for a server), turns and their ``invoke_agent`` spans (``_turns``), tool-use
pairing and ``execute_tool`` spans (``_tools``, ``_tool_spans``), model calls
(``_model_calls``), the span writer (``_spans``), the event table, the decision combination and
the hook process's reply (``_mapping``, ``_decisions``, ``_combine``, ``_answers``: Claude
Code's hook schema, the one the others copy; ``_agent_limits``: what they cannot carry of it),
the one entry point (``_run``), the daemon (``_daemon``, ``_daemon_build``, ``_fair``,
``_event_env``, ``_late_answers``), the HTTP route (``_http``) and the join of each CLI's own
telemetry into the session's trace (``_joins``, ``_telemetry``).
A :class:`Dialect` is the thin part per CLI: its input into the bridge's schema, the answer into
the CLI's own format. Each CLI's installer and what is its own alone stay with it
(``otelhooks.integrations.claude_code``: settings, the hook client, serve's Claude routes;
``_install`` here: Codex's and Gemini's files). See ``docs/adapters.md``.

The installer ``otelhooks codex install`` and ``otelhooks gemini install`` run is public, for a
script that onboards a project: :func:`install_agent` / :func:`uninstall_agent` edit the file
:func:`hooks_path` names and return a
:class:`~otelhooks.integrations.claude_code.SettingsChange`; :func:`codex_trust_notes` says
what Codex needs before it runs them::

    >>> from otelhooks.integrations.coding_agents import hooks_path, install_agent, uninstall_agent
    >>> change = install_agent("codex", project="my-project", hooks_file="policy.yaml")
    >>> change.path == hooks_path("codex", project="my-project"), change.verb
    (True, 'created')
    >>> uninstall_agent("codex", project="my-project").verb
    'deleted'
"""

from typing import TYPE_CHECKING

from otelhooks._lazy import lazy_names

if TYPE_CHECKING:
    from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
    from otelhooks.integrations.coding_agents._dialects import DIALECTS, Dialect, dialect_named
    from otelhooks.integrations.coding_agents._install import (
        codex_trust_notes,
        hooks_path,
        install_agent,
        uninstall_agent,
    )
    from otelhooks.integrations.coding_agents._state import BridgeState

# Every name loads its module on first use (PEP 562): a hook event's process never installs
# anything, and an install never runs the bridge (whose imports are most of a process's start).
_WHERE = {
    **dict.fromkeys(
        ("codex_trust_notes", "hooks_path", "install_agent", "uninstall_agent"),
        f"{__name__}._install",
    ),
    "CodingAgentBridge": f"{__name__}._bridge",
    **dict.fromkeys(("DIALECTS", "Dialect", "dialect_named"), f"{__name__}._dialects"),
    "BridgeState": f"{__name__}._state",
}

__all__ = [
    "DIALECTS",
    "BridgeState",
    "CodingAgentBridge",
    "Dialect",
    "codex_trust_notes",
    "dialect_named",
    "hooks_path",
    "install_agent",
    "uninstall_agent",
]


__getattr__ = lazy_names(__name__, _WHERE)
