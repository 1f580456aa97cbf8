"""The first Prometheus scrape is one valid exposition: checked by the real ``promtool check
metrics`` (Debian's ``prometheus`` package), on the SDK alone and on ``otelhooks demo``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest

from otelhooks._metrics._prometheus import LatestPrometheusMetricReader
from tests._realparts import free_port, promtool_binary, require

DEMO = (sys.executable, "-m", "otelhooks", "demo", "--quiet")


def check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    binary = promtool_binary()
    require("promtool", binary is not None)
    assert binary is not None
    return subprocess.run(
        [binary, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def scrape_after_flush(reader_type: type[PrometheusMetricReader]) -> str:
    registry = CollectorRegistry()
    reader = reader_type(registry=registry)
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("t").create_counter(
        "otelhooks.tool.calls", unit="{call}", description="Tool calls."
    ).add(1)
    provider.force_flush()  # what OtelHooks.force_flush and the demo do before any scrape
    try:
        return generate_latest(registry).decode()
    finally:
        provider.shutdown()


def test_the_sdk_reader_repeats_every_family_after_a_flush() -> None:
    # The cause, kept as a test: if the SDK fixes its reader, this fails and the subclass can go.
    text = scrape_after_flush(PrometheusMetricReader)
    assert text.count("# TYPE target_info") == 2
    assert check_metrics(text).returncode != 0


def test_the_latest_batch_reader_lists_each_family_once_after_a_flush() -> None:
    text = scrape_after_flush(LatestPrometheusMetricReader)
    assert text.count("# TYPE target_info") == 1
    assert text.count("# TYPE otelhooks_tool_calls_total counter") == 1
    assert 'otel_scope_name="t"' in text
    assert text.rstrip().endswith(" 1.0")
    proc = check_metrics(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_first_scrape_of_a_demo_run_passes_promtool_check_metrics(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    demo = subprocess.Popen(
        [*DEMO, "--prometheus-port", str(port), "--linger", "30"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stderr is not None
        deadline = time.monotonic() + 120
        for line in demo.stderr:  # "serving metrics on ..." comes once the run is over
            if "serving metrics on" in line or time.monotonic() > deadline:
                break
        assert demo.poll() is None, "the demo ended before it served its metrics"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        demo.terminate()
        demo.wait(30)
    assert text.count("# TYPE target_info") == 1
    assert "otelhooks_agent_operations_total" in text
    proc = check_metrics(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr
