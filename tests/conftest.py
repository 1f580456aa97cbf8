"""Shared fixtures: the public ``otelhooks.testing.pipeline`` (``configure()`` in memory:
hook processor, in-memory exporter and metric reader, nothing global, nothing on the network)
per test, and real webhook parts on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otelhooks import AgentTracer, WebhookDeliverer
from otelhooks.testing import Recorder, TestPipeline, pipeline
from tests._webhook_server import WebhookServer, webhook_server
from tests.integrations._daemon_procs import runtime_folder


@pytest.fixture
def pipe() -> Iterator[TestPipeline]:
    """A fresh pipeline with content capture off."""
    with pipeline() as fresh:
        yield fresh


@pytest.fixture
def tracer(pipe: TestPipeline) -> AgentTracer:
    return pipe.tracer


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A bridge daemon's socket folder (``XDG_RUNTIME_DIR``) of the test's own; every daemon
    still serving in it is killed at the end."""
    with runtime_folder() as path:
        yield path


def hook(hook_id: str, type: str, handler: Callable[..., Any], **options: Any) -> dict[str, Any]:
    """A hook definition in the dict (LobeHub ``AgentHook``) shape users register."""
    return {"id": hook_id, "type": type, "handler": handler, **options}


def attribute_values(spans: Sequence[ReadableSpan]) -> list[str]:
    """Every attribute value (span, span event and link attributes) rendered as a string."""
    out: list[str] = []
    for span in spans:
        sources: list[Mapping[str, Any]] = [span.attributes or {}]
        sources.extend(e.attributes or {} for e in span.events)
        sources.extend(link.attributes or {} for link in span.links)
        for attrs in sources:
            out.extend(str(v) for v in attrs.values())
    return out


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    """A real HTTP server on 127.0.0.1 whose answers the test scripts per path."""
    with webhook_server() as s:
        yield s


@pytest.fixture
def deliverer(pipe: TestPipeline, tmp_path: Path) -> Iterator[WebhookDeliverer]:
    """A webhook deliverer recording into ``pipe``'s metrics, installed as its engine's: test
    local for its short retry deadline (3 s) and its outbox under ``tmp_path``."""
    d = WebhookDeliverer(
        metrics=pipe.oh.metrics, retry_deadline_s=3.0, outbox_path=tmp_path / "outbox.db"
    )
    pipe.oh.engine.deliverer = d
    yield d
    d.shutdown(5)
