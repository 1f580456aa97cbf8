"""OTLP conformance.

Source: github.com/open-telemetry/opentelemetry-proto, ``docs/specification.md``, commit
ac2c4b5d1f3a6079de62f9afec860158ecc8af09 (tests/conformance/references.json).
"""
