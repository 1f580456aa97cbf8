"""The frames of one Agents SDK run: the root agent and each handed-off child.

:class:`RunFrames` is the base of
:class:`~otelhooks.integrations.openai_agents._agent_run.AgentRun`: each frame holds an agent's
operation (the root's, or a handed-off child's and its ``call_agent``) with the step and the
model call open in it; the run hooks open and close model calls and steps here, record the
calls no hook can stop (``hosted``), and open a frame at each handoff (a ``before_agent_start``
refusal raised there). Tool calls, approvals and the run's end are ``AgentRun``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import Agent, ComputerTool, ItemHelpers, ShellTool
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model

from otelhooks._errors import RunBlockedError
from otelhooks._instrument import AgentCall, LlmCall, Operation, Step
from otelhooks.integrations._scopes import DetachedScope
from otelhooks.integrations.openai_agents._approvals import Decisions
from otelhooks.integrations.openai_agents._computer import computer_hooked
from otelhooks.integrations.openai_agents._hosted import record_hosted

__all__ = ["PROVIDER", "Frame", "RunFrames"]

# gen_ai.provider.name: the Agents SDK calls OpenAI's models unless told otherwise.
PROVIDER = "openai"


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    if isinstance(model, Model):
        name = getattr(model, "model", None)
        return name if isinstance(name, str) else type(model).__name__
    return "default"


def _messages(system_prompt: str | None, items: list[TResponseInputItem]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    for item in items:
        messages.append(dict(item) if isinstance(item, dict) else {"content": str(item)})
    return messages


@dataclass
class Frame:
    """One agent of the run: the root operation, or a handed-off child and its ``call_agent``."""

    operation: Operation
    agent: str
    op_scope: DetachedScope[Operation] | None = None
    call: DetachedScope[AgentCall] | None = None
    step: DetachedScope[Step] | None = None
    llm: DetachedScope[LlmCall] | None = None

    def close_llm(self, exc: BaseException | None = None) -> None:
        if self.llm is not None:
            self.llm.exit(exc)
            self.llm = None

    def close_step(self, exc: BaseException | None = None) -> None:
        self.close_llm(exc)
        if self.step is not None:
            self.step.exit(exc)
            self.step = None

    def open_step(self) -> Step:
        if self.step is None:
            op = self.operation
            self.step = DetachedScope(op.step(), op.span)
            self.step.enter()
        return self.step.scope


class RunFrames:
    """The agents of one run, innermost last (see the module docstring)."""

    frames: list[Frame]
    opened: str | None  # the agent a hooked handoff opened its call for (AgentRun.__init__)
    decisions: Decisions

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    # -- model calls ---------------------------------------------------------------------------

    def llm_start(self, agent: Agent[Any], system_prompt: str | None, items: list[Any]) -> None:
        frame = self.frame
        frame.close_step()
        step = frame.open_step()
        call = step.llm(_model_name(agent), messages=_messages(system_prompt, items))
        scope = DetachedScope(call, step.span)
        scope.enter()  # BudgetExceeded: a budget guard refused the call, whose span has ended
        frame.llm = scope

    def llm_end(self, response: ModelResponse) -> None:
        frame = self.frame
        if frame.llm is None:
            return
        calls = [i for i in response.output if getattr(i, "type", None) == "function_call"]
        frame.llm.scope.record(
            "".join(ItemHelpers.extract_last_text(i) or "" for i in response.output),
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            finish_reason="tool_calls" if calls else "stop",
        )
        frame.close_llm()

    async def hosted(self, agent: Agent[Any], output: list[Any]) -> None:
        """Record the calls in ``agent``'s model's ``output`` that no hook can stop
        (``_hosted``)."""
        frame = self.frame
        shell = next(
            (t.name for t in agent.tools if isinstance(t, ShellTool) and t.executor is None), None
        )
        # a hooked ComputerTool's actions are calls of their own, recorded as they run
        computer = any(isinstance(t, ComputerTool) and not computer_hooked(t) for t in agent.tools)
        await record_hosted(frame.open_step(), frame.agent, output, shell, computer)

    # -- handoffs -------------------------------------------------------------------------------

    async def handoff_starts(self, name: str, context: Any) -> None:
        """A hooked handoff to agent ``name`` starts in the run of ``context``, before the SDK
        runs any of its code (its ``on_handoff`` callback, the agents' ``AgentHooks.on_handoff``,
        its ``input_filter``): its call opens here, and a ``before_agent_start`` refusal is
        raised here. A handoff in another run (the nested run of an agent used as a tool, which
        inherits this run's context variables, and none of its run hooks) is decided here too,
        its call recorded in the current step, but its steps are not this run's."""
        if context is None or context is not self.decisions.context:
            self._drop(await self._open(name))
            return
        self.frames.append(await self._open(name))
        self.opened = name

    async def handoff(self, to_agent: Agent[Any]) -> None:
        """The SDK handed off to ``to_agent`` (its run hooks' ``on_handoff``)."""
        opened, self.opened = self.opened, None
        if opened == to_agent.name:
            return
        if opened is not None:
            # the handoff returned another agent than the one it names: that one's call
            self._drop(self.frames.pop())
        self.frames.append(await self._open(to_agent.name))

    @staticmethod
    def _drop(frame: Frame) -> None:
        if frame.op_scope is not None:
            frame.op_scope.exit()
        if frame.call is not None:
            frame.call.exit()

    async def _open(self, name: str) -> Frame:
        """The frame of a handoff to agent ``name`` (its call and operation opened in the current
        step); a ``before_agent_start`` refusal is raised."""
        frame = self.frame
        step = frame.open_step()
        call = DetachedScope(step.call_agent(name), step.span)
        call.enter()
        child = call.scope.operation(name, provider=PROVIDER)
        op_scope = DetachedScope(child, call.scope.span)
        await op_scope.aenter()
        frame.close_llm()
        if child.blocked:
            # a before_agent_start hook refused the agent handed off to: raised into the SDK's
            # handoff, so the agent never runs (its operation ends interrupted, as a refused run)
            refused = RunBlockedError(child.block_reason)
            op_scope.exit()
            call.exit(refused)
            raise refused
        return Frame(child, name, op_scope=op_scope, call=call)

    def close(self, exc: BaseException | None) -> None:
        """End every open scope, innermost first (the root operation is the runner's)."""
        while self.frames:
            frame = self.frames.pop()
            frame.close_step(exc)
            if frame.op_scope is not None:
                frame.op_scope.exit(exc)
            if frame.call is not None:
                frame.call.exit(exc)
