"""Instrumented SDK clients on the test pipeline's providers, uninstrumented after each test
(instrumentors are process-wide)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import otelhooks
from tests.conftest import Pipeline


@pytest.fixture
def instrumented(pipe: Pipeline) -> Iterator[None]:
    done = otelhooks.instrument(
        ["openai", "anthropic"], tracer_provider=pipe.provider, meter_provider=pipe.meter_provider
    )
    try:
        yield
    finally:
        done.uninstrument()
