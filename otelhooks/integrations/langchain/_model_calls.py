"""What a LangChain model call says of itself: the model's name, its provider in the GenAI
conventions' spelling, and the first generation's text, usage, response model and finish
reason, read from LangChain's callback arguments and ``LLMResult`` for the handler's ``chat``
spans."""

from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatGeneration, LLMResult

from otelhooks._instrument import LlmCall

__all__ = ["model_name", "provider_name", "record_generation"]

# LangChain's ``ls_provider`` names (its tracing metadata) the GenAI conventions spell otherwise
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "amazon_bedrock": "aws.bedrock",
    "google_genai": "gcp.gen_ai",
    "google_vertexai": "gcp.vertex_ai",
    "vertexai": "gcp.vertex_ai",
    "mistralai": "mistral_ai",
    "xai": "x_ai",
    "ibm": "ibm.watsonx.ai",
}


def model_name(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str:
    """The model a call names: its invocation parameters, LangChain's tracing metadata, then
    the run's or the serialized model's name (``chat`` when none does)."""
    params = kwargs.get("invocation_params") or {}
    metadata = kwargs.get("metadata") or {}
    for value in (
        params.get("model"),
        params.get("model_name"),
        metadata.get("ls_model_name"),
        kwargs.get("name"),
        (serialized or {}).get("name"),
    ):
        if isinstance(value, str) and value:
            return value
    return "chat"


def provider_name(kwargs: dict[str, Any]) -> str | None:
    """The call's ``gen_ai.provider.name``: LangChain's ``ls_provider``, in the spec's names."""
    provider = (kwargs.get("metadata") or {}).get("ls_provider")
    if not isinstance(provider, str) or not provider:
        return None
    return _PROVIDERS.get(provider, provider)


def record_generation(call: LlmCall, response: LLMResult) -> None:
    """Record the first generation: text, usage, response model and finish reason."""
    gen = response.generations[0][0] if response.generations and response.generations[0] else None
    text = gen.text if gen is not None else ""
    finish = (gen.generation_info or {}).get("finish_reason") if gen is not None else None
    llm_output = response.llm_output or {}
    token_usage = llm_output.get("token_usage") or {}
    tokens = (
        int(token_usage.get("prompt_tokens", 0)),
        int(token_usage.get("completion_tokens", 0)),
    )
    model = llm_output.get("model_name")
    if isinstance(gen, ChatGeneration):
        message = gen.message
        meta = message.response_metadata
        finish = meta.get("finish_reason", finish)
        model = meta.get("model_name") or meta.get("model") or model
        if getattr(message, "tool_calls", None) and not finish:
            finish = "tool_calls"
        usage = getattr(message, "usage_metadata", None)
        if usage:
            tokens = (usage.get("input_tokens", 0), usage.get("output_tokens", 0))
    call.record(
        text,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        response_model=model if isinstance(model, str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
    )
