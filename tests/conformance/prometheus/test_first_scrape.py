"""The first Prometheus scrape is one valid exposition: checked by the real ``promtool check
metrics`` (Debian's ``prometheus`` package) after a flush of a configured pipeline and on the
first scrape of ``otelhooks demo``. The SDK alone fails it, which is why ``OtelHooks`` flushes
only the push readers."""

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

from otelhooks import configure
from tests._realparts import promtool_binary, require, reserved_port

DEMO = (sys.executable, "-m", "otelhooks", "demo", "--quiet")


def check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    binary = promtool_binary()
    require("promtool", binary is not None)
    assert binary is not None
    return subprocess.run(
        [binary, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def scrape_after_flush() -> str:
    """A first scrape after ``MeterProvider.force_flush``, with the SDK's reader alone."""
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)
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
    # The cause: the SDK's MeterProvider.force_flush collects pull readers too, and its
    # Prometheus reader then serves each queued batch. If the SDK fixes that, this fails.
    text = scrape_after_flush()
    assert text.count("# TYPE target_info") == 2
    assert check_metrics(text).returncode != 0


def test_a_configured_pipeline_flushed_before_the_first_scrape_passes_promtool(
    tmp_path: Path,
) -> None:
    # A user's own SDK reader handed to configure(): a flush must not queue a batch in it.
    registry = CollectorRegistry()
    oh = configure(
        service_name="scrape",
        metric_readers=[PrometheusMetricReader(registry=registry)],
        otlp=False,
        set_global=False,
        structured_logging=False,
        outbox_path=tmp_path / "outbox.db",
    )
    try:
        with oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", {}, lambda: "ok")
        assert oh.force_flush(10)
        text = generate_latest(registry).decode()
    finally:
        oh.shutdown(5)
    assert text.count("# TYPE target_info") == 1
    assert text.count("# TYPE otelhooks_tool_calls_total counter") == 1
    proc = check_metrics(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_first_scrape_of_a_demo_run_passes_promtool_check_metrics(tmp_path: Path) -> None:
    with reserved_port() as port:
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
