"""``otelhooks.instrument()``: turn on the maintained OpenTelemetry instrumentations of LLM SDKs.

No vendor SDK is wrapped here. ``openai`` is the OpenTelemetry project's own
``opentelemetry-instrumentation-openai-v2`` (the ``openai`` extra), ``anthropic`` OpenLLMetry's
``opentelemetry-instrumentation-anthropic`` (the ``anthropic`` extra; docs/design.md says why
this one). Their ``chat`` spans start in the current OpenTelemetry context, so under an
otelhooks step they are the step's children, and otelhooks' span processor on the same provider
recognises them (``gen_ai.operation.name``): it prices them, adds them to the step, operation and
session totals, fires ``llm_input`` / ``llm_output`` and asks the budget guards before each one.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any, Final

from opentelemetry import metrics as otel_metrics
from opentelemetry import trace

from otelhooks._errors import ConfigError

__all__ = ["INSTRUMENTATIONS", "Instrumented", "instrument"]

# library -> (module, instrumentor class, extra)
INSTRUMENTATIONS: Final[dict[str, tuple[str, str, str]]] = {
    "openai": ("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor", "openai"),
    "anthropic": ("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor", "anthropic"),
}


class Instrumented:
    """The instrumentations :func:`instrument` turned on; :meth:`uninstrument` turns them off
    (``OtelHooks.shutdown`` does, for those ``configure(instrument=...)`` turned on)."""

    def __init__(self, instrumentors: dict[str, Any]) -> None:
        self.instrumentors = instrumentors

    @property
    def libraries(self) -> list[str]:
        return list(self.instrumentors)

    def uninstrument(self) -> None:
        for instrumentor in self.instrumentors.values():
            instrumentor.uninstrument()
        self.instrumentors = {}


def instrument(
    libraries: Iterable[str],
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: otel_metrics.MeterProvider | None = None,
) -> Instrumented:
    """Instrument the named LLM SDKs (``"openai"``, ``"anthropic"``) on a provider.

    ``configure(instrument=[...])`` calls this with its own providers. For a provider of your
    own, put otelhooks' :class:`~otelhooks.HookSpanProcessor` on it and build the
    :class:`~otelhooks.AgentTracer` on that processor's engine, so the SDKs' spans are seen.

    Args:
        libraries: which SDKs.
        tracer_provider, meter_provider: where the instrumentations' spans and metrics go (the
            global providers when omitted).

    Raises:
        ConfigError: an unknown library, or its instrumentation is not installed (the error
            names the extra: ``pip install 'otelhooks[openai]'``).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from otelhooks import AgentTracer, HookSpanProcessor, instrument
        >>> provider = TracerProvider()
        >>> hooks = HookSpanProcessor()
        >>> provider.add_span_processor(hooks)
        >>> instrumented = instrument(["openai"], tracer_provider=provider)
        >>> tracer = AgentTracer(tracer_provider=provider, engine=hooks.engine)
        >>> instrumented.libraries
        ['openai']
        >>> instrumented.uninstrument()
    """
    found: dict[str, Any] = {}
    for library in dict.fromkeys(libraries):
        known = INSTRUMENTATIONS.get(library)
        if known is None:
            raise ConfigError(
                f"no instrumentation for {library!r}; known: {', '.join(INSTRUMENTATIONS)}",
                field="instrument",
            )
        module_name, class_name, extra = known
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"instrumenting {library} needs pip install 'otelhooks[{extra}]' ({exc})",
                field="instrument",
            ) from None
        found[library] = getattr(module, class_name)()
    done: dict[str, Any] = {}
    for library, instrumentor in found.items():
        if instrumentor.is_instrumented_by_opentelemetry:
            # Instrumentors are process-wide: a second provider cannot take over a library
            # another one instruments. Said loudly, since its calls would go to that one.
            raise ConfigError(
                f"{library} is already instrumented (by an earlier configure() or "
                "instrument()); uninstrument it first",
                field="instrument",
            )
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        done[library] = instrumentor
    return Instrumented(done)
