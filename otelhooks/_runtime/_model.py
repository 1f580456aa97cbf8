"""Models for the reference runtime: any callable, or a scripted one for demos and tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Model", "ModelReply", "ScriptedModel", "ToolRequest", "estimate_tokens"]


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """The model asks for ``identifier/api_name`` with ``args``."""

    identifier: str
    api_name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model turn: text, tool requests (none means a final answer) and token usage."""

    text: str = ""
    tool_calls: tuple[ToolRequest, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None


Model = Callable[[Sequence[dict[str, Any]]], ModelReply]


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token), enough for budgets and demos."""
    return max(1, len(text) // 4)


class ScriptedModel:
    """Replays a fixed list of replies, one per call; raises ``error`` once the script runs out
    if given (to script a failing model), else repeats the last reply.

    Example:
        >>> model = ScriptedModel([ModelReply("done")], name="scripted")
        >>> model([{"role": "user", "content": "hi"}]).text
        'done'
    """

    def __init__(
        self,
        replies: Sequence[ModelReply],
        *,
        name: str = "scripted-model",
        error: Exception | None = None,
    ) -> None:
        self.replies = list(replies)
        self.name = name
        self.error = error
        self.calls = 0

    def __call__(self, messages: Sequence[dict[str, Any]]) -> ModelReply:
        index = self.calls
        self.calls += 1
        if index >= len(self.replies):
            if self.error is not None:
                raise self.error
            index = len(self.replies) - 1
        reply = self.replies[index]
        prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in messages)
        return ModelReply(
            text=reply.text,
            tool_calls=reply.tool_calls,
            input_tokens=reply.input_tokens if reply.input_tokens is not None else prompt,
            output_tokens=(
                reply.output_tokens
                if reply.output_tokens is not None
                else estimate_tokens(reply.text) + 8 * len(reply.tool_calls)
            ),
        )
