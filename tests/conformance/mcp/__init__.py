"""MCP conformance.

Source: github.com/open-telemetry/semantic-conventions-genai, `model/mcp/common.yaml` at
0e5e6a8d59d38c9c19556a5164a83cc11a7d53ff, `model/mcp/spans.yaml` at
5c50d346f1c9e8f745889f7777a412991564b334 and `model/mcp/metrics.yaml` at
14567fad6858f82588325657c4bb262fafc885bd (tests/conformance/references.json)."""
