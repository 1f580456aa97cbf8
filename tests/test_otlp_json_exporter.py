"""Tests for otelhooks._export._otlp_json: OTLP/JSON lines written and read back."""

from __future__ import annotations

import base64
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict  # type: ignore[import-untyped,unused-ignore]
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from otelhooks import OtlpJsonLinesSpanExporter, read_otlp_json_lines

SPAN_ATTRIBUTES: dict[str, Any] = {
    "str": "hello",
    "bool": True,
    "int": 2**62,
    "float": 1.5,
    "bytes": b"\x00\xff",
    "strs": ["a", "b"],
    "ints": [1, -2],
    "floats": [0.5, 2.0],
    "bools": [True, False],
}


class Run:
    """Spans written through a real TracerProvider, both to a file and to memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "otlp-test"}), shutdown_on_exit=False
        )
        self.provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        tracer = self.provider.get_tracer("otelhooks.test", "1.2.3")
        with tracer.start_as_current_span("other") as other:
            self.other = other.get_span_context()
        with tracer.start_as_current_span("parent", attributes=SPAN_ATTRIBUTES) as parent:
            self.parent = parent.get_span_context()
            with tracer.start_as_current_span(
                "child",
                kind=trace.SpanKind.CLIENT,
                links=[trace.Link(self.other, {"link.reason": "retry"})],
            ) as child:
                self.child = child.get_span_context()
                child.add_event("tool.call", {"tool": "search", "attempt": 1})
                child.set_status(trace.StatusCode.ERROR, "tool failed")
        self.provider.shutdown()

    @property
    def lines(self) -> list[str]:
        return self.path.read_text().splitlines()

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.memory.get_finished_spans()


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(tmp_path / "spans.jsonl")


def hex_ids_to_base64(request: dict[str, Any]) -> dict[str, Any]:
    def convert(message: dict[str, Any]) -> None:
        for field in ("traceId", "spanId", "parentSpanId"):
            if field in message:
                message[field] = base64.b64encode(bytes.fromhex(message[field])).decode()

    for resource_spans in request["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                convert(span)
                for link in span.get("links", ()):
                    convert(link)
    return request


def only_span(line: str) -> dict[str, Any]:
    request = json.loads(line)
    [resource_spans] = request["resourceSpans"]
    [scope_spans] = resource_spans["scopeSpans"]
    [span] = scope_spans["spans"]
    return span  # type: ignore[no-any-return]


def test_each_export_writes_one_line(run: Run) -> None:
    assert len(run.lines) == 3  # SimpleSpanProcessor exports each span alone


def test_one_export_of_many_spans_is_one_line(run: Run, tmp_path: Path) -> None:
    exporter = OtlpJsonLinesSpanExporter(tmp_path / "batch.jsonl")
    assert exporter.export(run.spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    [line] = (tmp_path / "batch.jsonl").read_text().splitlines()
    assert [span["name"] for span in read_otlp_json_lines(tmp_path / "batch.jsonl")] == [
        "other",
        "child",
        "parent",
    ]
    assert json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["scope"]["version"] == "1.2.3"


def test_lines_round_trip_through_protobuf_as_the_sdk_encodes_them(run: Run) -> None:
    for line, span in zip(run.lines, run.spans, strict=True):
        parsed = ParseDict(hex_ids_to_base64(json.loads(line)), ExportTraceServiceRequest())
        assert parsed == encode_spans([span])


def test_ids_are_lowercase_hex_matching_the_span_context(run: Run) -> None:
    other, child, parent = (only_span(line) for line in run.lines)
    assert child["traceId"] == format(run.child.trace_id, "032x")
    assert child["spanId"] == format(run.child.span_id, "016x")
    assert child["parentSpanId"] == format(run.parent.span_id, "016x")
    assert child["links"][0]["traceId"] == format(run.other.trace_id, "032x")
    assert child["links"][0]["spanId"] == format(run.other.span_id, "016x")
    assert "parentSpanId" not in parent
    for span in (other, child, parent):
        assert re.fullmatch("[0-9a-f]{32}", span["traceId"])
        assert re.fullmatch("[0-9a-f]{16}", span["spanId"])


def test_fields_follow_otlp_json_encoding(run: Run) -> None:
    child = only_span(run.lines[1])
    assert child["kind"] == 3  # SPAN_KIND_CLIENT, as an integer
    assert child["status"] == {"code": 2, "message": "tool failed"}
    assert re.fullmatch("[0-9]+", child["startTimeUnixNano"])
    assert child["events"][0]["name"] == "tool.call"
    assert {"key": "attempt", "value": {"intValue": "1"}} in child["events"][0]["attributes"]
    assert "droppedAttributesCount" not in child  # zero is a default, so omitted
    parent = only_span(run.lines[2])
    assert {"key": "bytes", "value": {"bytesValue": "AP8="}} in parent["attributes"]


def test_lines_are_compact_json(run: Run) -> None:
    for line in run.lines:
        assert line == json.dumps(json.loads(line), separators=(",", ":"))


def test_read_returns_flat_span_dicts(run: Run) -> None:
    other, child, parent = read_otlp_json_lines(run.path)

    assert [other["name"], child["name"], parent["name"]] == ["other", "child", "parent"]
    assert parent["attributes"] == SPAN_ATTRIBUTES
    assert child["parentSpanId"] == parent["spanId"]
    assert child["events"][0]["attributes"] == {"tool": "search", "attempt": 1}
    assert child["links"][0]["attributes"] == {"link.reason": "retry"}
    assert child["links"][0]["spanId"] == other["spanId"]
    assert child["status"] == {"code": 2, "message": "tool failed"}
    assert child["scope"] == "otelhooks.test"
    assert child["resource"]["service.name"] == "otlp-test"
    assert child["resource"]["telemetry.sdk.language"] == "python"


def test_read_decodes_every_any_value_kind(tmp_path: Path) -> None:
    value_kinds = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "b", "value": {"boolValue": False}},
        {"key": "i", "value": {"intValue": "-9007199254740993"}},
        {"key": "d", "value": {"doubleValue": 0.25}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "raw", "value": {"bytesValue": "AP8="}},
        {"key": "empty", "value": {}},
        {
            "key": "arr",
            "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "two"}]}},
        },
        {"key": "no_values", "value": {"arrayValue": {}}},
        {
            "key": "kv",
            "value": {
                "kvlistValue": {
                    "values": [
                        {"key": "inner", "value": {"boolValue": True}},
                        {"key": "nested", "value": {"kvlistValue": {}}},
                    ]
                }
            },
        },
    ]
    line = {
        "resourceSpans": [{"scopeSpans": [{"spans": [{"name": "s", "attributes": value_kinds}]}]}]
    }
    path = tmp_path / "kinds.jsonl"
    path.write_text(json.dumps(line) + "\n\n")

    [span] = read_otlp_json_lines(path)
    attributes = span["attributes"]
    nan = attributes.pop("nan")
    assert nan != nan
    assert attributes == {
        "s": "x",
        "b": False,
        "i": -9007199254740993,
        "d": 0.25,
        "raw": b"\x00\xff",
        "empty": None,
        "arr": [1, "two"],
        "no_values": [],
        "kv": {"inner": True, "nested": {}},
    }
    assert span["resource"] == {}
    assert span["scope"] == ""


def test_read_names_the_line_that_is_not_otlp_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": []}\n{not json\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2:"):
        read_otlp_json_lines(path)


def test_file_is_not_created_before_first_export(tmp_path: Path) -> None:
    path = tmp_path / "lazy.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)
    assert not path.exists()
    exporter.shutdown()
    assert not path.exists()


def test_export_appends_to_an_existing_file(run: Run) -> None:
    Run(run.path)
    assert len(run.lines) == 6


def test_export_returns_failure_on_os_error(tmp_path: Path, run: Run) -> None:
    exporter = OtlpJsonLinesSpanExporter(tmp_path / "missing-dir" / "spans.jsonl")
    with capture_logs() as logs:
        assert exporter.export(run.spans) is SpanExportResult.FAILURE
    assert [log["event"] for log in logs] == ["writing spans failed"]


def test_export_after_shutdown_returns_failure(tmp_path: Path, run: Run) -> None:
    exporter = OtlpJsonLinesSpanExporter(tmp_path / "closed.jsonl")
    exporter.shutdown()
    assert exporter.export(run.spans) is SpanExportResult.FAILURE


def test_concurrent_exports_write_whole_lines(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "concurrent.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)

    def export_many() -> None:
        for _ in range(50):
            exporter.export(run.spans)

    threads = [threading.Thread(target=export_many) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    exporter.shutdown()
    lines = path.read_text().splitlines()
    assert len(lines) == 400
    for line in lines:
        assert len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 3
