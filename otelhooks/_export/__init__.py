"""Span export: a batch processor that counts its drops, and OTLP/JSON lines files."""

from __future__ import annotations

from otelhooks._export._batch import CountingBatchSpanProcessor
from otelhooks._export._otlp_json import (
    OtlpJsonLinesSpanExporter,
    encode_otlp_json,
    read_otlp_json_lines,
)
from otelhooks._export._webhook import WebhookSpanExporter

__all__ = [
    "CountingBatchSpanProcessor",
    "OtlpJsonLinesSpanExporter",
    "WebhookSpanExporter",
    "encode_otlp_json",
    "read_otlp_json_lines",
]
