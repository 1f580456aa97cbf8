"""A scripted ``Model`` for the OpenAI Agents SDK: no network, one scripted turn per call.

Like the SDK's own model classes it opens a ``generation_span`` per call, so instrumentations
that read the SDK's traces see an LLM call. A streamed call (``stream_response``) answers with
the turn as one ``response.completed`` event, as the Responses API ends its stream; a turn that
is an exception is raised instead (a model error).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import (
    ModelResponse,
    TResponseInputItem,
    TResponseOutputItem,
    TResponseStreamEvent,
)
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.tracing import generation_span
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseUsage
from openai.types.responses.response_prompt_param import ResponsePromptParam
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails


class ScriptedModel(Model):
    """Answers call ``n`` with ``turns[n]`` and records every input it was given."""

    def __init__(
        self, name: str, turns: Sequence[Sequence[TResponseOutputItem] | Exception]
    ) -> None:
        self.model = name
        self.turns = [t if isinstance(t, Exception) else list(t) for t in turns]
        self.inputs: list[str | list[TResponseInputItem]] = []

    def _next(self, input: str | list[TResponseInputItem]) -> tuple[list[Any], Usage]:
        self.inputs.append(input)
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        usage = Usage(
            requests=1, input_tokens=20 + len(self.inputs), output_tokens=7, total_tokens=0
        )
        return turn, usage

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: ResponsePromptParam | None = None,
    ) -> ModelResponse:
        output, usage = self._next(input)
        messages = [{"role": "user", "content": input if isinstance(input, str) else str(input)}]
        with generation_span(
            model=self.model,
            input=messages,
            usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        ) as span:
            span.span_data.output = [cast(Any, item).model_dump() for item in output]
        return ModelResponse(output=output, usage=usage, response_id=f"resp-{len(self.inputs)}")

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        output, usage = self._next(input)
        response = Response(
            id=f"resp-{len(self.inputs)}",
            created_at=0,
            model=self.model,
            object="response",
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            usage=ResponseUsage(
                input_tokens=usage.input_tokens,
                input_tokens_details=InputTokensDetails(cache_write_tokens=0, cached_tokens=0),
                output_tokens=usage.output_tokens,
                output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                total_tokens=usage.input_tokens + usage.output_tokens,
            ),
        )
        yield ResponseCompletedEvent(
            response=response, sequence_number=0, type="response.completed"
        )

    def tool_outputs(self) -> dict[str, str]:
        """Every tool output the model was shown, by call id (a shell call's stdout, an
        apply_patch call's ``status: output``)."""
        seen: dict[str, str] = {}
        for given in self.inputs:
            for item in given if isinstance(given, list) else []:
                raw: Any = item
                if not isinstance(raw, dict):
                    continue
                kind = raw.get("type")
                if kind in (
                    "function_call_output",
                    "local_shell_call_output",
                    "custom_tool_call_output",
                ):
                    seen[str(raw["call_id"])] = str(raw["output"])
                elif kind == "shell_call_output":
                    seen[str(raw["call_id"])] = "".join(o["stdout"] for o in raw["output"])
                elif kind == "apply_patch_call_output":
                    seen[str(raw["call_id"])] = f"{raw['status']}: {raw.get('output', '')}"
        return seen
