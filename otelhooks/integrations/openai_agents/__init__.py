"""OpenAI Agents SDK adapter (``pip install 'otelhooks[openai-agents]'``).

Example:
    >>> from otelhooks.integrations.openai_agents import HookedRunner
    >>> runner = HookedRunner(oh.tracer)
    >>> result = await runner.run(agent, "What is 2 + 3?", session_id="s-1")

See :mod:`otelhooks.integrations.openai_agents._runner` for the mapping.
"""

try:
    import agents as _agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "otelhooks.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'otelhooks[openai-agents]'"
    ) from exc

from otelhooks.integrations.openai_agents._runner import (
    GUARDRAIL_NAME,
    PROVIDER,
    HookedRunner,
    RunBlockedError,
)
from otelhooks.integrations.openai_agents._tools import hook_agent, hook_tool

__all__ = [
    "GUARDRAIL_NAME",
    "PROVIDER",
    "HookedRunner",
    "RunBlockedError",
    "hook_agent",
    "hook_tool",
]
