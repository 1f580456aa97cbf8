"""``span_limits()`` reads the ``OTEL_*`` span limits as the SDK's ``SpanLimits()`` does, a value
the SDK cannot read counting as unset (the SDK raises ``ValueError``, and a hook process with it
ended with exit 1: the CLI ran the tool its guard denies)."""

from __future__ import annotations

import itertools

import pytest
from opentelemetry.sdk.trace import SpanLimits

from otelhooks._resource import span_limits

GENERAL = ["OTEL_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"]
SPECIFIC = [
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_EVENT_COUNT_LIMIT",
    "OTEL_SPAN_LINK_COUNT_LIMIT",
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
]
FIELDS = [
    "max_attributes",
    "max_events",
    "max_links",
    "max_span_attributes",
    "max_event_attributes",
    "max_link_attributes",
    "max_attribute_length",
    "max_span_attribute_length",
]


def _limits(limits: SpanLimits) -> list[int | None]:
    return [getattr(limits, field) for field in FIELDS]


@pytest.mark.parametrize("general", [None, "", "7", "abc", "-1"], ids=repr)
@pytest.mark.parametrize("bad", SPECIFIC + GENERAL)
@pytest.mark.parametrize("value", ["abc", "-1", "1e3"])
def test_an_unreadable_limit_counts_as_unset(
    monkeypatch: pytest.MonkeyPatch, general: str | None, bad: str, value: str
) -> None:
    for name in GENERAL + SPECIFIC:
        monkeypatch.delenv(name, raising=False)
    for name in GENERAL:
        if general is not None:
            monkeypatch.setenv(name, general)
    for n, name in enumerate(SPECIFIC):
        if name != bad and n % 2:
            monkeypatch.setenv(name, str(n))  # some set, some left to the general ones
    monkeypatch.setenv(bad, value)
    got = _limits(span_limits())
    # the SDK's reading of the same environment with every unreadable value unset
    monkeypatch.delenv(bad)
    if general in ("abc", "-1"):
        for name in GENERAL:
            monkeypatch.delenv(name, raising=False)
    assert got == _limits(SpanLimits())


@pytest.mark.parametrize(
    ("name", "value"), list(itertools.product(GENERAL + SPECIFIC, ["", " 9", "0"]))
)
def test_a_readable_limit_is_the_sdks(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert _limits(span_limits()) == _limits(SpanLimits())
