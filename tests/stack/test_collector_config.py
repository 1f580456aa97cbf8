"""collector/config.yaml checked structurally (no contrib collector runs here: see REAL-PARTS)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.stack._stack import COLLECTOR_CONFIG, load_yaml


@pytest.fixture(scope="module")
def collector() -> dict[str, Any]:
    config: dict[str, Any] = load_yaml(COLLECTOR_CONFIG)
    return config


def test_pipelines_use_only_components_the_config_defines(collector: dict[str, Any]) -> None:
    pipelines = collector["service"]["pipelines"]
    assert set(pipelines) == {"traces", "metrics"}
    for name, pipeline in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            used = pipeline.get(kind, [])
            if kind != "processors":
                assert used, f"{name} has no {kind}"
            undefined = set(used) - set(collector.get(kind) or {})
            assert not undefined, f"{name} uses undefined {kind}: {undefined}"
    assert set(collector["service"]["extensions"]) <= set(collector["extensions"])


def test_every_defined_component_but_debug_is_used(collector: dict[str, Any]) -> None:
    pipelines = collector["service"]["pipelines"].values()
    for kind in ("receivers", "processors", "exporters"):
        used = {component for pipeline in pipelines for component in pipeline.get(kind, [])}
        unused = set(collector[kind]) - used
        assert unused == ({"debug"} if kind == "exporters" else set()), kind


def test_debug_exporter_is_defined_but_off(collector: dict[str, Any]) -> None:
    assert "debug" in collector["exporters"]
    for pipeline in collector["service"]["pipelines"].values():
        assert "debug" not in pipeline["exporters"]


def test_memory_limiter_comes_first_and_batch_last(collector: dict[str, Any]) -> None:
    for name, pipeline in collector["service"]["pipelines"].items():
        processors = pipeline["processors"]
        assert processors[0] == "memory_limiter", name
        assert processors[-1] == "batch", name


def test_otlp_receiver_takes_grpc_and_http(collector: dict[str, Any]) -> None:
    for pipeline in collector["service"]["pipelines"].values():
        assert pipeline["receivers"] == ["otlp"]
    assert set(collector["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}


def test_traces_go_to_jaeger_over_otlp_and_metrics_to_prometheus(
    collector: dict[str, Any],
) -> None:
    pipelines = collector["service"]["pipelines"]
    (traces_exporter,) = pipelines["traces"]["exporters"]
    assert traces_exporter.split("/")[0] in {"otlp", "otlp_grpc"}
    assert collector["exporters"][traces_exporter]["endpoint"].startswith("jaeger:")
    assert pipelines["metrics"]["exporters"] == ["prometheus"]


def test_metrics_get_the_service_name_label(collector: dict[str, Any]) -> None:
    # The SDK's Prometheus reader and the collector's exporter both put service.name only in
    # target_info; the alerts and dashboards group by service_name instead.
    assert "transform/service_name" in collector["service"]["pipelines"]["metrics"]["processors"]
    (statements,) = collector["processors"]["transform/service_name"]["metric_statements"]
    assert statements["context"] == "datapoint"
    assert statements["statements"] == [
        'set(attributes["service.name"], resource.attributes["service.name"])'
    ]
