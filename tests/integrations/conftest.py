"""Fixtures shared by the adapter tests: a real webhook server and a webhook deliverer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from otelhooks._actions._webhook_delivery import WebhookDeliverer, set_default_deliverer
from tests._webhook_server import WebhookServer, webhook_server
from tests.conftest import Pipeline


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with webhook_server() as s:
        yield s


@pytest.fixture
def deliverer(pipe: Pipeline, tmp_path: Path) -> Iterator[WebhookDeliverer]:
    d = WebhookDeliverer(
        metrics=pipe.metrics, retry_deadline_s=3.0, outbox_path=tmp_path / "outbox.db"
    )
    set_default_deliverer(d)
    yield d
    d.shutdown(5)
