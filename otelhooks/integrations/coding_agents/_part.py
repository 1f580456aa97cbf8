"""What the parts of the bridge (turns, tool uses, model calls) share, given to each once."""

from __future__ import annotations

from dataclasses import dataclass

from otelhooks._engine import HooksEngine
from otelhooks.integrations.coding_agents._common import DenyMode, Observe
from otelhooks.integrations.coding_agents._spans import SpanWriter
from otelhooks.integrations.coding_agents._state import BridgeState

__all__ = ["Part", "Shared"]


@dataclass(frozen=True, slots=True)
class Shared:
    """One bridge's session store, engine, span writer and settings.

    Attributes:
        state: the sessions (the state file, or a server's).
        engine: the hooks that run.
        observe: queues an observer event (``event, payload, matcher values``).
        writer: where spans are written.
        deny_mode: how a denial is answered (``json`` or ``exit2``).
        capture: whether content (prompts, arguments, results) is recorded.
        agent: ``gen_ai.agent.name`` and the CLI the answers and messages name.
        provider: ``gen_ai.provider.name`` of the spans.
        project: the folder Claude Code started in, where the bridge serves one project (a
            command hook's process: ``$CLAUDE_PROJECT_DIR``); ``None`` for ``serve``'s route,
            which serves many, and whose own environment names none of theirs.
        fail_closed: a Codex CLI or Gemini CLI tool call whose guard failed (its answer
            unreadable, a crash, a timeout) is denied (``--fail-closed``), not only one the
            bridge could not check.
    """

    state: BridgeState
    engine: HooksEngine
    observe: Observe
    writer: SpanWriter
    deny_mode: DenyMode
    capture: bool
    agent: str
    provider: str
    project: str | None = None
    fail_closed: bool = False


class Part:
    """A part of the bridge: what it shares with the others are its attributes."""

    def __init__(self, shared: Shared) -> None:
        self.state = shared.state
        self.engine = shared.engine
        self.observe = shared.observe
        self.writer = shared.writer
        self.deny_mode = shared.deny_mode
        self.capture = shared.capture
        self.agent = shared.agent
        self.provider = shared.provider
        self.project = shared.project
        self.fail_closed = shared.fail_closed
