"""Scripted OpenAI and Anthropic HTTP APIs on 127.0.0.1 (the real SDKs talk to them)."""

from __future__ import annotations

from typing import Any

from tests._webhook_server import Reply, WebhookServer

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


def openai_completion(model: str, text: str, prompt_tokens: int, completion_tokens: int) -> Reply:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply.json(body)


def anthropic_message(model: str, text: str, input_tokens: int, output_tokens: int) -> Reply:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    return Reply.json(body)


def script(server: WebhookServer, path: str, *replies: Reply) -> None:
    server.routes[path] = list(replies)
