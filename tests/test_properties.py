"""Property-based tests: no input produces an exception other than the documented one."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from otelhooks import (
    EVENTS,
    Block,
    ConfigError,
    ControlProtocolError,
    InvalidMatcherError,
    compile_matcher,
)
from otelhooks._actions._webhook_control import parse_control_response
from otelhooks._actions._webhook_http import Delivery
from otelhooks._matchers import MatchKind

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(status=st.integers(100, 599), body=st.binary(max_size=300))
def test_control_parser_on_any_bytes_is_allow_deny_or_protocol_error(
    status: int, body: bytes
) -> None:
    delivery = Delivery(
        200 <= status < 300 and status == 200,
        status,
        None if status == 200 else "http_error",
        "",
        body,
    )
    try:
        verdict = parse_control_response(delivery)
    except ControlProtocolError:
        return
    # Only a 200 whose JSON says exactly "allow" may allow.
    assert status == 200
    data = json.loads(body)
    if verdict is None:
        assert data["decision"] == "allow"
    else:
        assert isinstance(verdict, Block)
        assert data["decision"] == "deny"


@settings(max_examples=300)
@given(data=json_values)
def test_control_parser_on_any_json_never_allows_without_an_explicit_allow(data: Any) -> None:
    body = json.dumps(data).encode()
    try:
        verdict = parse_control_response(Delivery(True, 200, body=body))
    except ControlProtocolError:
        return
    assert isinstance(data, dict)
    assert data.get("decision") in ("allow", "deny")
    assert (verdict is None) == (data["decision"] == "allow")


@given(body=st.sampled_from([b"", b" ", b"\n", b"null", b"{}", b"[]", b'""', b"0"]))
def test_empty_or_trivial_control_responses_are_never_an_allow(body: bytes) -> None:
    try:
        parse_control_response(Delivery(True, 200, body=body))
    except ControlProtocolError:
        return
    raise AssertionError(f"{body!r} was accepted")


@settings(max_examples=400)
@given(
    source=st.none() | st.text(max_size=30),
    dialect=st.sampled_from(["otelhooks", "lobehub", "kernel", "workspace", "claude"]),
    values=st.lists(st.text(max_size=20), min_size=1, max_size=3),
)
def test_matchers_compile_from_any_string_and_match_without_raising(
    source: str | None, dialect: str, values: list[str]
) -> None:
    refused: InvalidMatcherError | None = None
    try:
        matcher = compile_matcher(source, dialect)
    except InvalidMatcherError as exc:
        refused = exc
    if refused is not None:
        # the two refusals: a regex that could backtrack, and a tool kind no table names (a
        # typo in a guard such as ``@shel`` must be loud, never a matcher that matches nothing)
        assert "exponential time" in str(refused) or "unknown tool kind" in str(refused)
        return
    assert isinstance(matcher.matches(tuple(values)), bool)
    if source is None or source.strip() in ("", "*"):
        assert matcher.kind is MatchKind.ALL


payload_models = sorted({spec.payload for spec in EVENTS.values()}, key=lambda m: m.__name__)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(payload_models),
    data=st.dictionaries(st.text(max_size=12), json_values, max_size=6),
)
def test_payload_models_accept_or_reject_any_mapping_with_a_validation_error(
    model: Any, data: dict[str, Any]
) -> None:
    try:
        event = model.model_validate(data)
    except ValidationError:
        return
    # What validates serializes to JSON and back.
    dumped = event.model_dump(mode="json", by_alias=True)
    assert model.model_validate(dumped).model_dump(mode="json", by_alias=True) == dumped


HOOK_KEYS = ["id", "type", "matcher", "timeout", "intercept", "on_error", "dialect", "webhook", "x"]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(hook=st.dictionaries(st.sampled_from(HOOK_KEYS), json_values, max_size=6))
def test_hook_definitions_are_valid_or_a_config_error(hook: dict[str, Any]) -> None:
    from otelhooks._actions import build_hook as coerce_hook

    with contextlib.suppress(ConfigError):
        coerce_hook({**hook, "handler": print} if "webhook" not in hook else hook)
