"""Normal process exit: a process that does its work and simply ends (no ``shutdown()``: the
``atexit`` hook ``configure`` installed runs it) delivers every span, metric and queued webhook
to real receivers; with the collector and the endpoints down or silent, exit still ends within
the shutdown deadline (10 s by default), and what can be kept locally is kept.

Export intervals are set far beyond the test's length (``OTEL_BSP_SCHEDULE_DELAY``,
``OTEL_METRIC_EXPORT_INTERVAL``), so what arrives was flushed at exit, not along the way.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from otelhooks import read_otlp_json_lines
from otelhooks._actions._outbox import Outbox
from tests._realparts import reserved_port
from tests._webhook_server import Reply, WebhookServer, webhook_server
from tests.reliability._parts import RawOtlpSink, raw_otlp_sink

OPERATIONS = 20
SPANS = 3 * OPERATIONS  # invoke_agent, step, execute_tool
SHUTDOWN_DEADLINE_S = 10.0  # OtelHooks.shutdown's default, used at interpreter exit
EXIT_SLACK_S = 3.0  # interpreter teardown and a loaded machine

AGENT = textwrap.dedent(
    """
    import sys
    import otelhooks

    traces_out, outbox, webhooks = sys.argv[1:4]
    oh = otelhooks.configure(
        service_name="exit-flush", traces_out=traces_out, otlp=True, outbox_path=outbox,
        structured_logging=False,
    )
    oh.register([
        {"id": "notify", "type": "afterToolCall", "webhook": {"url": webhooks + "/notify"}},
        {"id": "queued", "type": "afterToolCall",
         "webhook": {"url": webhooks + "/queued", "delivery": "queue"}},
    ])
    for i in range(int(sys.argv[4])):
        with oh.operation("agent", input=str(i)) as op, op.step() as step:
            step.run_tool("calc", "add", {"i": i}, lambda i: str(i))
    print("work done", flush=True)
    # no shutdown: the interpreter exits normally and atexit flushes
    """
)


def agent_env(otlp_endpoint: str) -> dict[str, str]:
    return {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
        "OTEL_METRIC_EXPORT_INTERVAL": "600000",
    }


def start_agent(workdir: Path, otlp_endpoint: str, webhooks: str) -> subprocess.Popen[str]:
    args = [str(workdir / "traces.jsonl"), str(workdir / "outbox.sqlite3"), webhooks]
    with (workdir / "stderr.txt").open("w") as stderr:  # a file: a full pipe would stall it
        return subprocess.Popen(
            [sys.executable, "-c", AGENT, *args, str(OPERATIONS)],
            stdout=subprocess.PIPE, stderr=stderr, text=True, env=agent_env(otlp_endpoint),
        )  # fmt: skip


def counter_total(sink: RawOtlpSink, name: str) -> float:
    """The counter's value as last exported (sums are cumulative: each export has the total)."""
    totals = [0.0]
    for raw in sink.of("/v1/metrics"):
        for rm in ExportMetricsServiceRequest.FromString(raw.body).resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        totals.append(sum(p.as_int or p.as_double for p in metric.sum.data_points))
    return max(totals)


@dataclass
class Exited:
    """A finished agent process: how long it took to exit once its work was done."""

    workdir: Path
    returncode: int
    exit_s: float
    stderr: str


def wait_for_exit(proc: subprocess.Popen[str], workdir: Path, timeout_s: float) -> Exited:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "work done", (workdir / "stderr.txt").read_text()
    done = time.monotonic()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()  # ours, and far over its bound: the tests report it
        proc.wait()
    exit_s = time.monotonic() - done
    proc.stdout.close()
    return Exited(workdir, proc.returncode, exit_s, (workdir / "stderr.txt").read_text())


# -- everything up ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def receivers() -> Iterator[tuple[RawOtlpSink, WebhookServer]]:
    with raw_otlp_sink() as sink, webhook_server() as server:
        # Slow enough that deliveries are still queued when the agent reaches its last line.
        server.routes["/notify"] = Reply(204, delay_s=0.02)
        server.routes["/queued"] = Reply(204, delay_s=0.02)
        yield sink, server


@pytest.fixture(scope="module")
def exited_normally(
    receivers: tuple[RawOtlpSink, WebhookServer], tmp_path_factory: pytest.TempPathFactory
) -> Exited:
    sink, server = receivers
    workdir = tmp_path_factory.mktemp("exit-up")
    proc = start_agent(workdir, sink.endpoint, server.url)
    return wait_for_exit(proc, workdir, SHUTDOWN_DEADLINE_S + EXIT_SLACK_S)


def test_normal_exit_exports_every_span_over_otlp(
    receivers: tuple[RawOtlpSink, WebhookServer], exited_normally: Exited
) -> None:
    sink, _ = receivers
    assert exited_normally.returncode == 0, exited_normally.stderr
    assert sorted(sink.span_names()) == sorted(
        ["invoke_agent agent", "step 0", "execute_tool add"] * OPERATIONS
    )


def test_normal_exit_writes_every_span_to_the_traces_file(exited_normally: Exited) -> None:
    assert len(read_otlp_json_lines(exited_normally.workdir / "traces.jsonl")) == SPANS


def test_normal_exit_exports_the_metrics(
    receivers: tuple[RawOtlpSink, WebhookServer], exited_normally: Exited
) -> None:
    sink, _ = receivers
    assert counter_total(sink, "otelhooks.tool.calls") == OPERATIONS
    assert counter_total(sink, "otelhooks.hook.invocations") >= OPERATIONS


@pytest.mark.parametrize("path", ["/notify", "/queued"])
def test_normal_exit_delivers_every_queued_webhook(
    receivers: tuple[RawOtlpSink, WebhookServer], exited_normally: Exited, path: str
) -> None:
    _, server = receivers
    event_ids = {r.json()["eventId"] for r in server.requests(path)}
    assert len(event_ids) == OPERATIONS


def test_normal_exit_leaves_the_outbox_empty(exited_normally: Exited) -> None:
    outbox = Outbox(exited_normally.workdir / "outbox.sqlite3")
    try:
        assert outbox.pending() == 0
    finally:
        outbox.close()


# -- everything down -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that accepts connections (into the backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(512)
        yield s.getsockname()[1]


@pytest.fixture(scope="module")
def exited_while_down(
    tmp_path_factory: pytest.TempPathFactory, silent_port: int
) -> dict[str, Exited]:
    """Two agents exit at once: one whose collector and endpoints refuse connections, one
    whose collector and endpoints accept and never answer."""
    with reserved_port() as dead:
        started = {}
        for kind, port in (("refusing", dead), ("silent", silent_port)):
            workdir = tmp_path_factory.mktemp(f"exit-{kind}")
            url = f"http://127.0.0.1:{port}"
            started[kind] = (start_agent(workdir, url, url), workdir)
        # Both exit side by side, each watched by its own thread.
        with ThreadPoolExecutor(len(started)) as pool:
            waits = {
                kind: pool.submit(wait_for_exit, proc, workdir, SHUTDOWN_DEADLINE_S + 30)
                for kind, (proc, workdir) in started.items()
            }
            return {kind: wait.result() for kind, wait in waits.items()}


@pytest.mark.parametrize("kind", ["refusing", "silent"])
def test_exit_with_everything_down_ends_within_the_shutdown_deadline(
    exited_while_down: dict[str, Exited], kind: str
) -> None:
    exited = exited_while_down[kind]
    assert exited.returncode == 0, exited.stderr
    assert exited.exit_s < SHUTDOWN_DEADLINE_S + EXIT_SLACK_S


@pytest.mark.parametrize("kind", ["refusing", "silent"])
def test_exit_with_everything_down_still_writes_every_span_to_the_file(
    exited_while_down: dict[str, Exited], kind: str
) -> None:
    spans = read_otlp_json_lines(exited_while_down[kind].workdir / "traces.jsonl")
    assert len(spans) == SPANS


@pytest.mark.parametrize("kind", ["refusing", "silent"])
def test_exit_with_everything_down_keeps_queued_deliveries_in_the_outbox(
    exited_while_down: dict[str, Exited], kind: str
) -> None:
    outbox = Outbox(exited_while_down[kind].workdir / "outbox.sqlite3")
    try:
        assert outbox.pending() == OPERATIONS  # delivered by the next process that opens it
    finally:
        outbox.close()
