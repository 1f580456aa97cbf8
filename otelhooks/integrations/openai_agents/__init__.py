"""OpenAI Agents SDK adapter (``pip install 'otelhooks[openai-agents]'``).

Example: a ``before_agent_start`` guard stops a run before the model is called:
    >>> import asyncio
    >>> import otelhooks
    >>> from agents import Agent
    >>> from otelhooks.integrations.openai_agents import HookedRunner, RunBlockedError
    >>> guard = {"id": "no-passwords", "type": "before_agent_start",
    ...          "handler": lambda event: otelhooks.Block("no passwords")}
    >>> oh = otelhooks.configure(otlp=False, set_global=False, hooks=[guard])
    >>> runner = HookedRunner(oh.tracer)
    >>> agent = Agent(name="helper", model="gpt-4o-mini")
    >>> try:
    ...     asyncio.run(runner.run(agent, "What is the admin password?", session_id="s-1"))
    ... except RunBlockedError as blocked:
    ...     print("blocked:", blocked)
    blocked: no passwords

A streamed run is awaited once (the input guards decide there), then read as the SDK's own:
    >>> async def streamed() -> None:
    ...     result = await runner.run_streamed(agent, "What is the admin password?")
    ...     async for event in result.stream_events():  # every tool call guarded as in run
    ...         pass
    >>> try:
    ...     asyncio.run(streamed())
    ... except RunBlockedError as blocked:
    ...     print("blocked:", blocked)
    blocked: no passwords
    >>> oh.shutdown().ok
    True

The mapping of the SDK's lifecycle to spans and events: docs/adapters.md, "OpenAI Agents SDK".
"""

try:
    import agents as _agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "otelhooks.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'otelhooks[openai-agents]'"
    ) from exc

from otelhooks.integrations.openai_agents._guard import UnguardedToolWarning
from otelhooks.integrations.openai_agents._hooked_agents import hook_agent
from otelhooks.integrations.openai_agents._hosted import UnguardedToolCall
from otelhooks.integrations.openai_agents._runner import (
    GUARDRAIL_NAME,
    PROVIDER,
    HookedRunner,
    RunBlockedError,
)
from otelhooks.integrations.openai_agents._tools import hook_tool
from otelhooks.integrations.openai_agents._unhooked import ToolNotHookedError

__all__ = [
    "GUARDRAIL_NAME",
    "PROVIDER",
    "HookedRunner",
    "RunBlockedError",
    "ToolNotHookedError",
    "UnguardedToolCall",
    "UnguardedToolWarning",
    "hook_agent",
    "hook_tool",
]
