"""What every gateway test shares: an MCP client in this process that sends only what it is told.

The MCP SDK's client (2.3 and later) puts the W3C context of a span of its own into every
request's ``params._meta`` whenever this process has a global ``TracerProvider`` (which any
earlier test may have set: OpenTelemetry allows one per process). Each request would then
continue a trace of the test process, and whether a test saw one trace per session, or its own
``traceparent``, would depend on which tests ran before it in the same process. Here the global
propagator injects nothing for the length of each test, whatever ran before.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import propagate
from opentelemetry.propagators.composite import CompositePropagator


@pytest.fixture(autouse=True)
def client_injects_no_trace_context() -> Iterator[None]:
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    try:
        yield
    finally:
        propagate.set_global_textmap(before)
