"""A scripted ``Model`` for the OpenAI Agents SDK: no network, one scripted turn per call.

Like the SDK's own model classes it opens a ``generation_span`` per call, so instrumentations
that read the SDK's traces see an LLM call.
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
from openai.types.responses.response_prompt_param import ResponsePromptParam


class ScriptedModel(Model):
    """Answers call ``n`` with ``turns[n]`` and records every input it was given."""

    def __init__(self, name: str, turns: Sequence[Sequence[TResponseOutputItem]]) -> None:
        self.model = name
        self.turns = [list(t) for t in turns]
        self.inputs: list[str | list[TResponseInputItem]] = []

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
        self.inputs.append(input)
        output = self.turns.pop(0)
        usage = Usage(
            requests=1, input_tokens=20 + len(self.inputs), output_tokens=7, total_tokens=0
        )
        messages = [{"role": "user", "content": input if isinstance(input, str) else str(input)}]
        with generation_span(
            model=self.model,
            input=messages,
            usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        ) as span:
            span.span_data.output = [cast(Any, item).model_dump() for item in output]
        return ModelResponse(output=output, usage=usage, response_id=f"resp-{len(self.inputs)}")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the tests do not stream")

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
                if kind in ("function_call_output", "local_shell_call_output"):
                    seen[str(raw["call_id"])] = str(raw["output"])
                elif kind == "shell_call_output":
                    seen[str(raw["call_id"])] = "".join(o["stdout"] for o in raw["output"])
                elif kind == "apply_patch_call_output":
                    seen[str(raw["call_id"])] = f"{raw['status']}: {raw.get('output', '')}"
        return seen
