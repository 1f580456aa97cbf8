"""The SDK's run hooks of a :class:`~otelhooks.integrations.openai_agents.HookedRunner` run:
each callback feeds the otelhooks side of the run (``AgentRun``), then the caller's own hooks.
A telemetry problem is logged, never raised into the agent run; a budget guard's refusal of a
model call (``BudgetExceeded``) or of an agent handed off to (``RunBlockedError``) is raised,
so the SDK never sends the call or runs the agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import structlog
from agents import Agent, AgentHooks, RunHooks, Tool
from agents.items import ModelResponse, TResponseInputItem
from agents.run_context import AgentHookContext, RunContextWrapper

from otelhooks._errors import BudgetExceeded, RunBlockedError
from otelhooks.integrations.openai_agents._computer import calls_expected, computer_call_starts
from otelhooks.integrations.openai_agents._guard import CURRENT_RUN
from otelhooks.integrations.openai_agents._unhooked import ToolNotHookedError, refuse_unhooked

__all__ = ["AgentHooksFeed", "RunFeed", "RunHooksFeed", "recording"]

_log = structlog.get_logger("otelhooks")


def recording(what: str, fn: Callable[..., None], *args: Any) -> None:
    """Call ``fn(*args)``, logging (never raising) what it raises: ``what`` names it."""
    try:
        fn(*args)
    except Exception:  # a telemetry problem must not fail the agent run
        _log.exception("openai-agents adapter failed", callback=what)


class RunFeed(Protocol):
    """What the run hooks feed: the otelhooks side of one run (``AgentRun``)."""

    def settle(
        self, context: RunContextWrapper[Any] | None, agent: str | None = None, own: bool = True
    ) -> None: ...

    def llm_start(self, agent: Agent[Any], system_prompt: str | None, items: list[Any]) -> None: ...

    def llm_end(self, response: ModelResponse) -> None: ...

    async def hosted(self, agent: Agent[Any], output: list[Any]) -> None: ...

    async def handoff(self, to_agent: Agent[Any]) -> None: ...

    def answered(self) -> None: ...


class RunHooksFeed(RunHooks[Any]):
    """The SDK's run hooks, feeding a :class:`RunFeed` (and then the caller's own hooks)."""

    def __init__(self, run: RunFeed, inner: RunHooks[Any] | None) -> None:
        self.run = run
        self.inner = inner

    def _guard(self, what: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # a telemetry problem must not fail the agent run
            _log.exception("openai-agents adapter failed", callback=what)

    def _settle(self, what: str, context: RunContextWrapper[Any], agent: Agent[Any]) -> None:
        # the first callback of a resumed run comes after the SDK answered its rejected calls
        self._guard(what, self.run.settle, context, agent.name)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        self._settle("on_llm_start", context, agent)
        try:
            self.run.llm_start(agent, system_prompt, input_items)
        except BudgetExceeded:
            raise  # a budget guard refused the model call: raised here, the SDK never sends it
        except Exception:
            _log.exception("openai-agents adapter failed", callback="on_llm_start")
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self._settle("on_llm_end", context, agent)
        self._guard("on_llm_end", self.run.llm_end, response)
        try:  # the calls in the response no hook can stop: recorded, a decision on one told
            await self.run.hosted(agent, response.output)
        except Exception:
            _log.exception("openai-agents adapter failed", callback="on_llm_end")
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        self._settle("on_handoff", context, from_agent)
        try:
            await self.run.handoff(to_agent)
        except RunBlockedError:
            raise  # a before_agent_start hook refused the agent: the SDK must not run it
        except Exception:
            _log.exception("openai-agents adapter failed", callback="on_handoff")
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        self._settle("on_agent_start", context, agent)
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(
        self, context: AgentHookContext[Any], agent: Agent[Any], output: Any
    ) -> None:
        self._settle("on_agent_end", context, agent)
        self._guard("on_agent_end", self.run.answered)
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        self._settle("on_tool_start", context, agent)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        self._settle("on_tool_end", context, agent)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


class AgentHooksFeed(AgentHooks[Any]):
    """A hooked agent's own hooks: each callback first has the run
    :class:`~otelhooks.integrations.openai_agents.HookedRunner` is executing settle what a person
    decided with the callback's context, then calls the agent's own hooks (``inner``).

    An agent used as a tool (``Agent.as_tool``) is run by the SDK's own runner, inside the tool
    call, with none of the run's hooks: a call of it a person rejected is decided in that nested
    run's context, which only these callbacks are handed."""

    def __init__(self, inner: AgentHooks[Any] | None) -> None:
        self.inner = inner

    @staticmethod
    def _settle(what: str, context: RunContextWrapper[Any], agent: Agent[Any]) -> None:
        run = CURRENT_RUN.get()
        if run is not None:
            recording(what, run.settle, context, agent.name, False)

    async def on_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        self._settle("agent on_start", context, agent)
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        self._settle("agent on_end", context, agent)
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(
        self, context: RunContextWrapper[Any], agent: Agent[Any], source: Agent[Any]
    ) -> None:
        self._settle("agent on_handoff", context, agent)
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        self._settle("agent on_tool_start", context, agent)
        recording("agent on_tool_start", computer_call_starts, tool)
        try:  # a tool the clone's list did not hold (an Agent subclass's get_all_tools, ...)
            await refuse_unhooked(context, agent, tool)
        except ToolNotHookedError:
            raise  # the SDK raises it from the run: the tool never runs
        except Exception:
            _log.exception("openai-agents adapter failed", callback="agent on_tool_start")
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        self._settle("agent on_tool_end", context, agent)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        self._settle("agent on_llm_start", context, agent)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self._settle("agent on_llm_end", context, agent)
        # the agent's own hooks, not the run's: an agent run as a tool runs with none of those
        recording("agent on_llm_end", calls_expected, agent.tools, response.output)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)
