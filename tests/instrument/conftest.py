"""Instrumented SDK clients on the test pipeline's providers, uninstrumented after each test
(instrumentors are process-wide)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import otelhooks
from otelhooks.testing import TestPipeline


@pytest.fixture
def instrumented(pipe: TestPipeline) -> Iterator[None]:
    done = otelhooks.instrument(
        ["openai", "anthropic"],
        tracer_provider=pipe.oh.tracer_provider,
        meter_provider=pipe.oh.meter_provider,
    )
    try:
        yield
    finally:
        done.uninstrument()
