"""The price of a model call, from Pydantic's ``genai-prices`` (the ``cost`` extra).

otelhooks keeps no price table: a model call's tokens are priced by ``genai_prices.calc_price``
for the model and, when known, the provider. A model the library does not know, or a process
without the extra, gets no price (``None``), never a guess: a wrong dollar figure in a budget or
an alert is worse than none.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import structlog

__all__ = ["price_usd"]

_log = structlog.get_logger("otelhooks")

# gen_ai.provider.name values whose genai-prices provider id differs.
_PROVIDER_IDS = {"aws.bedrock": "aws", "gcp.vertex_ai": "google", "gcp.gemini": "google"}


@lru_cache(maxsize=1)
def _library() -> Any:
    try:
        import genai_prices
    except ImportError:
        _log.info("model calls are not priced: install otelhooks[cost] (genai-prices)")
        return None
    return genai_prices


def price_usd(
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    *,
    provider: str | None = None,
    cache_read_tokens: int = 0,
) -> float | None:
    """The cost in US dollars of one model call, or None when it cannot be priced.

    Args:
        model: the model that answered (``gen_ai.response.model``), else the one asked for.
        input_tokens, output_tokens: the call's token usage (input includes cached tokens).
        provider: ``gen_ai.provider.name`` (or the older ``gen_ai.system``), when known.
        cache_read_tokens: input tokens read from the provider's prompt cache.

    Example:
        >>> price_usd("gpt-4o", 1000, 500, provider="openai")
        0.0075
        >>> price_usd("a-model-nobody-prices", 1000, 500) is None
        True
    """
    if not model or (input_tokens <= 0 and output_tokens <= 0) or _library() is None:
        return None
    provider_id = _PROVIDER_IDS.get(provider or "", provider) or None
    if (model, provider_id) in _UNKNOWN:
        return None
    return _price(
        model, provider_id, max(input_tokens, 0), max(output_tokens, 0), max(cache_read_tokens, 0)
    )


# Models the library does not know, asked once each (a miss searches every model): bounded.
_UNKNOWN: set[tuple[str, str | None]] = set()
_MAX_UNKNOWN = 4_096


# Pricing walks genai-prices' model tables (its cost is in benchmarks/README.md): a call with
# the same model and counts as an earlier one is not priced again.
@lru_cache(maxsize=4_096)
def _price(
    model: str, provider_id: str | None, input_tokens: int, output_tokens: int, cache_read: int
) -> float | None:
    lib = _library()
    usage = lib.Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cache_read or None
    )
    try:
        calc = lib.calc_price(usage, model, provider_id=provider_id)
    except LookupError:
        if len(_UNKNOWN) < _MAX_UNKNOWN:
            _UNKNOWN.add((model, provider_id))
        return None
    except Exception:  # a price library failing must not fail the agent's call
        _log.warning("pricing a model call failed", model=model, exc_info=True)
        return None
    return float(calc.total_price)
