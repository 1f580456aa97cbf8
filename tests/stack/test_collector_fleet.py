"""collector/fleet/: the gateway (loadbalancing by trace id) and the sidecar in front of each
``otelhooks serve``, checked structurally as collector/config.yaml is (no contrib collector
runs here: see REAL-PARTS), and the sidecar's exporter pointed at a real serve's route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.stack._stack import ROOT, load_yaml

FLEET = ROOT / "collector" / "fleet"


@pytest.fixture(scope="module", params=["gateway.yaml", "sidecar.yaml"])
def config(request: pytest.FixtureRequest) -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(FLEET / request.param)
    return loaded


def test_pipelines_use_only_defined_components_and_all_of_them(config: dict[str, Any]) -> None:
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces"}
    for kind in ("receivers", "processors", "exporters"):
        used = {c for p in pipelines.values() for c in p.get(kind, [])}
        assert used == set(config.get(kind) or {}), kind
    assert set(config["service"].get("extensions", [])) <= set(config.get("extensions") or {})


def test_memory_limiter_comes_first(config: dict[str, Any]) -> None:
    assert config["service"]["pipelines"]["traces"]["processors"][0] == "memory_limiter"


def test_the_gateway_routes_by_trace_id_over_otlp_to_every_instance() -> None:
    gateway = load_yaml(FLEET / "gateway.yaml")
    exporter = gateway["exporters"]["loadbalancing"]
    assert exporter["routing_key"] == "traceID"
    assert set(exporter["protocol"]) == {"otlp"}  # the only protocol the exporter speaks
    assert exporter["protocol"]["otlp"]["retry_on_failure"]["enabled"] is True
    hostnames = exporter["resolver"]["static"]["hostnames"]
    assert len(hostnames) >= 2
    sidecar = load_yaml(FLEET / "sidecar.yaml")
    sidecar_port = sidecar["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].rsplit(":", 1)[1]
    assert {h.rsplit(":", 1)[1] for h in hostnames} == {sidecar_port}


def test_the_sidecar_posts_otlp_http_to_serve_with_the_ingest_token_from_the_environment() -> None:
    from otelhooks._cli._serve_cmd import DEFAULT_PORT

    sidecar = load_yaml(FLEET / "sidecar.yaml")
    (name,) = sidecar["service"]["pipelines"]["traces"]["exporters"]
    assert name.split("/")[0] == "otlphttp"
    exporter = sidecar["exporters"][name]
    assert exporter["endpoint"] == f"http://127.0.0.1:{DEFAULT_PORT}"
    assert exporter["headers"]["Authorization"] == "Bearer ${env:OTELHOOKS_INGEST_TOKEN}"
    assert exporter["retry_on_failure"]["enabled"] is True  # serve's 503s are retried


def test_the_sidecar_path_is_the_route_serve_answers(tmp_path: Path) -> None:
    # otlphttp appends /v1/traces to its endpoint: a real serve must accept a post there.
    from tests.reliability._serve_proc import ServeProc, post_traces, tool_spans_json

    server = ServeProc(tmp_path, "--no-web")
    try:
        assert post_traces(server.url, tool_spans_json(3)).status_code == 200
    finally:
        server.stop()
