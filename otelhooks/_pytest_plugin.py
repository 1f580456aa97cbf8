"""otelhooks' pytest plugin: the ``otelhooks_pipeline`` fixture (see :mod:`otelhooks.testing`).

Registered through the ``pytest11`` entry point, so a project that has otelhooks installed gets
the fixture without importing anything.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otelhooks.testing import TestPipeline, pipeline

__all__ = ["otelhooks_pipeline"]


@pytest.fixture
def otelhooks_pipeline() -> Iterator[TestPipeline]:
    """A fresh in-memory pipeline per test (content capture off), shut down afterwards."""
    with pipeline() as pipe:
        yield pipe
