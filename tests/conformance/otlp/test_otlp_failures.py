"""OTLP/HTTP failure answers against opentelemetry-proto's specification (``otlp_failures.json``).

Source: github.com/open-telemetry/opentelemetry-proto, ``docs/specification.md``
("Failures", "OTLP/HTTP Response"), commit ac2c4b5d1f3a6079de62f9afec860158ecc8af09.

A real :class:`~otelhooks.EventLogServer` on 127.0.0.1 gets each bad request of the fixture; the
answer must have the request's Content-Type and decode, as that encoding, into a
``google.rpc.Status`` with a message (and a ``BadRequest`` detail on a 400).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from otelhooks import EventLogServer, HookSpanProcessor

FIXTURE = json.loads((Path(__file__).parent / "otlp_failures.json").read_text())
TOKEN = "otlp-conformance-token"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    processor = HookSpanProcessor()
    server = EventLogServer(span_processors=[processor], token=TOKEN, owned=[processor]).start()
    try:
        yield server.url
    finally:
        server.stop()


def _send(url: str, case: dict[str, Any]) -> httpx.Response:
    headers = {"Content-Type": case["content_type"], **case.get("headers", {})}
    if case.get("auth", True):
        headers["Authorization"] = f"Bearer {TOKEN}"
    body = bytes.fromhex(case["body_hex"]) if "body_hex" in case else case["body_text"].encode()
    method = case.get("method", "POST")
    return httpx.request(method, f"{url}/v1/traces", content=body or None, headers=headers)


def _status(response: httpx.Response) -> Any:
    answer = status_pb2.Status()
    if response.headers["content-type"] == "application/x-protobuf":
        answer.ParseFromString(response.content)
    else:
        json_format.Parse(response.text, answer)  # strict: unknown fields would fail
    return answer


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[c["what"] for c in FIXTURE["cases"]])
def test_a_failure_is_a_status_in_the_request_encoding(
    server_url: str, case: dict[str, Any]
) -> None:
    response = _send(server_url, case)
    assert response.status_code == case["status"]
    assert response.headers["content-type"] == case["content_type"]
    answer = _status(response)
    assert answer.message
    kinds = [detail.type_url for detail in answer.details]
    assert "type.googleapis.com/google.rpc.ErrorInfo" in kinds
    if case["status"] == 400:
        assert FIXTURE["bad_request_detail"] in kinds
        bad = error_details_pb2.BadRequest()
        next(d for d in answer.details if d.type_url.endswith("BadRequest")).Unpack(bad)
        assert bad.field_violations[0].description == answer.message


def test_the_error_info_names_the_failure(server_url: str) -> None:
    case = {"content_type": "application/x-protobuf", "body_hex": "ffffff"}
    info = error_details_pb2.ErrorInfo()
    _status(_send(server_url, case)).details[0].Unpack(info)
    assert (info.domain, info.reason) == ("otelhooks", "BAD_REQUEST")
