"""What every part of the bridge shares: the agent's names, the answer to it, observing."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._events import HookEvent

__all__ = [
    "AGENT",
    "CLI_NAMES",
    "PROVIDER",
    "DenyMode",
    "HookResponse",
    "Observe",
    "cli_name",
    "event_marker",
    "observer",
    "text",
]

AGENT = "claude-code"
# gen_ai.provider.name of the bridge's spans: Claude Code's models are Anthropic's.
PROVIDER = "anthropic"
DenyMode = Literal["json", "exit2"]
# what a person reads for each agent the bridge serves (its gen_ai.agent.name)
CLI_NAMES = {
    "claude-code": "Claude Code",
    "claude-agent-sdk": "the Claude Agent SDK",
    "codex": "Codex CLI",
    "gemini-cli": "Gemini CLI",
}
Observe = Callable[[str, HookEvent | Callable[[], HookEvent], tuple[str, ...]], None]

_log = structlog.get_logger("otelhooks")


def cli_name(agent: str) -> str:
    """The name a person knows the agent by (``codex`` is ``Codex CLI``)."""
    return CLI_NAMES.get(agent, agent)


def event_marker(agent: str, name: str, payload: Mapping[str, Any]) -> str:
    """The span event that names a hook event as its own CLI does: ``claude_code.PreCompact``,
    ``codex.PreCompact``, ``gemini_cli.PreCompress`` (the Agent SDK's events are Claude Code's).

    Example:
        >>> event_marker("gemini-cli", "PreCompact", {"gemini_hook_event_name": "PreCompress"})
        'gemini_cli.PreCompress'
    """
    if agent in ("claude-code", "claude-agent-sdk"):
        return sc.CLAUDE_CODE_EVENT_PREFIX + name
    # the Gemini dialect keeps the CLI's own name of an event it renamed
    own = payload.get("gemini_hook_event_name")
    return f"{agent.replace('-', '_')}.{own if isinstance(own, str) and own else name}"


@dataclass(frozen=True, slots=True)
class HookResponse:
    """What the hook process tells the agent: exit code, stdout (JSON) and stderr.

    ``http_body`` is the answer of an ``http`` hook when it differs from a command's stdout
    (``WorktreeCreate``: a command prints the path, an ``http`` hook answers JSON).
    """

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    http_body: str | None = None


def text(value: Any) -> str:
    """A tool response as text (JSON unless it is a string)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def observer(engine: HooksEngine) -> Observe:
    """Queue an observer event on ``engine``: its payload, or the payload's builder, called
    only when a hook matches (an event nobody observes costs no model)."""

    def observe(
        event: str, payload: HookEvent | Callable[[], HookEvent], values: tuple[str, ...]
    ) -> None:
        if callable(payload):
            if not engine.registry.may_match(event, values):  # any operation's, as dispatch
                return
            payload = payload()
        try:
            engine.dispatch(event, payload, values=values)
        except CriticalHookDeliveryError:
            # ``event`` is structlog's own first argument: the hook event goes under another key
            _log.exception("critical hook delivery failed", hook_event=event)

    return observe
