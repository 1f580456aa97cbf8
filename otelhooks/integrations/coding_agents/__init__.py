"""Codex CLI and Gemini CLI hooks through the one coding-agent bridge.

``otelhooks codex install`` / ``otelhooks gemini install`` write each CLI's hooks; each event
reaches the Claude Code bridge (sessions, tool spans, the daemon) through the CLI's
:class:`Dialect`, and is answered in the CLI's own format. See ``docs/adapters.md``.
"""

from otelhooks.integrations.coding_agents._dialects import DIALECTS, Dialect, dialect_named

__all__ = ["DIALECTS", "Dialect", "dialect_named"]
