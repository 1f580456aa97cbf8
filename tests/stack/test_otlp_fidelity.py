"""Spans exported over OTLP reach a real collector and come out of it unchanged.

``otelhooks demo`` exports to a real OTLP collector (``rotel``), which forwards over OTLP/HTTP to
:class:`~tests._realparts.OtlpHttpSink`. What the sink received, written in the encoding of the
demo's ``--traces-out`` file, must equal that file span for span: same ids, parents, links,
events, attributes, status, times and resource.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks import read_otlp_json_lines
from tests._realparts import OtlpHttpSink, rotel_collector


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_spans_pass_through_a_real_collector_unchanged(tmp_path: Path, protocol: str) -> None:
    sink = OtlpHttpSink()
    try:
        with rotel_collector(sink.endpoint, tmp_path) as (grpc_port, http_port):
            port = grpc_port if protocol == "grpc" else http_port
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            env |= {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            }
            written = tmp_path / "written.jsonl"
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "otelhooks",
                    "demo",
                    "--quiet",
                    "--traces-out",
                    str(written),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr
            expected = read_otlp_json_lines(written)
            assert sink.wait_for_span_count(len(expected)), (
                f"{len(sink.span_names)} of {len(expected)} spans arrived"
            )
        received_file = tmp_path / "received.jsonl"
        sink.write_otlp_json_lines(received_file)
        received = read_otlp_json_lines(received_file)
    finally:
        sink.stop()

    by_id = {span["spanId"]: span for span in received}
    assert len(by_id) == len(received), "a span arrived twice"
    assert set(by_id) == {span["spanId"] for span in expected}
    for span in expected:
        assert by_id[span["spanId"]] == span, span["name"]
    # Not a vacuous comparison: the demo's spans have all of these.
    assert sum(1 for s in expected if s.get("parentSpanId")) > len(expected) / 2
    assert sum(1 for s in expected if s.get("links")) >= 3
    assert sum(1 for s in expected if s.get("events")) >= 5
    assert any(s.get("status", {}).get("code") == 2 for s in expected)
    assert len({s["traceId"] for s in expected}) >= 4
