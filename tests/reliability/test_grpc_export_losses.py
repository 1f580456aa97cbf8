"""Spans lost over OTLP/gRPC with nothing counted or said, and the variables the gRPC exporter
honours.

Each test exports to a real OTLP/gRPC trace server on 127.0.0.1 (``grpc.server`` with the
generated servicer) through ``configure()``'s exporter or the one a coding agent's hook process
builds, and looks at what arrived, what was counted and what the delivery report says.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

import otelhooks
from otelhooks._export._otlp import otlp_span_exporter
from otelhooks._export._report import DeliveryTracker
from otelhooks.integrations.coding_agents._environment import otlp_exporter
from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    bash,
    client_env,
    daemon_pid,
    hook,
    one_process,
    runtime_folder,
)

# What the collector does with a request: return an answer, or abort the call.
Answer = Callable[[Any, list[str]], Any]


class GrpcCollector:
    """A real OTLP/gRPC trace and metrics server: keeps every span, unless ``answer`` says
    otherwise, and every metrics request, answered ``metrics_answer`` (a whole success)."""

    def __init__(
        self,
        answer: Answer | None = None,
        *,
        max_receive: int | None = None,
        tls: tuple[bytes, bytes] | None = None,
        metrics_answer: Any = None,
    ) -> None:
        self.spans: list[str] = []
        self.metric_requests = 0
        self.requests: list[Any] = []  # each request whole, trace and metrics alike
        self.metadata: list[dict[str, str]] = []
        self.release = threading.Event()  # a silent answer waits for this
        collector = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                collector.metadata.append(dict(context.invocation_metadata()))
                collector.requests.append(request)
                names = [
                    span.name
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]
                if answer is not None:
                    return answer(context, names)
                collector.spans.extend(names)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                collector.metric_requests += 1
                collector.requests.append(request)
                return metrics_answer or metrics_service_pb2.ExportMetricsServiceResponse()

        options = [("grpc.max_receive_message_length", max_receive)] if max_receive else []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self.server)
        if tls is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            credentials = grpc.ssl_server_credentials([tls])
            self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.server.start()

    def stop(self) -> None:
        self.release.set()
        self.server.stop(0)


@pytest.fixture
def grpc_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    for name in ("HEADERS", "INSECURE", "COMPRESSION", "TIMEOUT", "CERTIFICATE"):
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_{name}", raising=False)
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_TRACES_{name}", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)

    def use(endpoint: str) -> None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")

    return use


def _dropped(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                for point in metric.data.data_points if metric.name == "otelhooks.dropped" else ():
                    source = str(point.attributes["otelhooks.drop.source"])
                    reason = str(point.attributes["otelhooks.drop.reason"])
                    counts[source, reason] = counts.get((source, reason), 0) + int(point.value)
    return counts


def _agent_run(result: Callable[[str], str]) -> tuple[otelhooks.OtelHooks, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    oh = otelhooks.configure(
        otlp=True, capture_content=True, metric_readers=[reader], set_global=False,
        structured_logging=False,
    )  # fmt: skip
    with oh.operation("agent", input="go") as op, op.step() as step:
        for name in ("list", "read", "grep", "stat", "diff"):
            step.run_tool("fs", name, {}, lambda name=name: result(name))
    return oh, reader


def test_a_span_too_large_for_a_grpc_collector_is_lost_alone_and_counted(
    grpc_env: Callable[[str], None],
) -> None:
    # A captured tool result (2 MiB) over the collector's message limit (1 MiB here; 4 MiB is
    # gRPC's default): before, RESOURCE_EXHAUSTED was retried whole for 5 minutes, then every
    # span of the batch was lost, reported as "the exporter reported a failure".
    collector = GrpcCollector(max_receive=1 << 20)
    try:
        grpc_env(collector.endpoint)
        oh, reader = _agent_run(lambda name: "x" * (2 << 20) if name == "read" else "small")
        assert oh.force_flush(5.0)  # never retried as it is: the halves are sent at once
        assert oh.metrics.flush(5.0)
        assert _dropped(reader) == {("span_export", "export_failed"): 1}
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert sorted(collector.spans) == [
        "execute_tool diff", "execute_tool grep", "execute_tool list", "execute_tool stat",
        "invoke_agent agent", "step 0",
    ]  # fmt: skip
    [line] = report.lines()
    assert line.startswith(
        f"6 of 7 spans exported to {collector.endpoint}: RESOURCE_EXHAUSTED: "
    ), line
    assert "larger than max" in line


def test_a_grpc_collectors_partial_success_is_counted_and_reported(
    grpc_env: Callable[[str], None],
) -> None:
    # A collector that keeps part of a request says so in its answer (a full queue): over
    # OTLP/HTTP it was counted, over gRPC the whole batch was reported exported.
    def answer(context: Any, names: list[str]) -> Any:
        partial = trace_service_pb2.ExportTracePartialSuccess(
            rejected_spans=2, error_message="queue\nfull"
        )
        return trace_service_pb2.ExportTraceServiceResponse(partial_success=partial)

    collector = GrpcCollector(answer)
    try:
        grpc_env(collector.endpoint)
        oh, reader = _agent_run(lambda name: "small")
        assert oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        assert _dropped(reader) == {("span_export", "rejected"): 2}
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert report.lines() == [
        f"5 of 7 spans exported to {collector.endpoint}: 2 spans rejected: queue full"
    ]


def test_a_grpc_collector_refusing_the_credentials_is_not_retried_and_says_why(
    grpc_env: Callable[[str], None],
) -> None:
    # Before, UNAUTHENTICATED was retried for 5 minutes (a 401 over OTLP/HTTP never is) and the
    # report said only "the exporter reported a failure".
    def answer(context: Any, names: list[str]) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "no token")

    collector = GrpcCollector(answer)
    try:
        grpc_env(collector.endpoint)
        oh, _ = _agent_run(lambda name: "small")
        assert oh.force_flush(5.0)
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert len(collector.metadata) == 1  # one request, not retried
    [destination] = report.destinations
    assert (destination.delivered, destination.failed) == (0, 7)
    assert destination.reason == "UNAUTHENTICATED: no token"
    assert "OTEL_EXPORTER_OTLP_HEADERS" in (destination.hint or "")


def test_a_hook_processs_grpc_exporter_counts_a_partial_success() -> None:
    # The exporter a coding agent's hook process builds from the hooks' OTEL_* settings.
    def answer(context: Any, names: list[str]) -> Any:
        partial = trace_service_pb2.ExportTracePartialSuccess(rejected_spans=1)
        return trace_service_pb2.ExportTraceServiceResponse(partial_success=partial)

    collector = GrpcCollector(answer)
    tracker = DeliveryTracker("spans", "", fail_fast=True, request_timeout_s=2.0)
    try:
        settings = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc",
        }
        exporter = otlp_exporter(settings, tracker)
        assert exporter is not None
        assert exporter.export(_spans(2)) is SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        collector.stop()
    assert tracker.take_rejected() == 1
    assert tracker.reason == "1 spans rejected: no reason given"
    assert collector.metadata[0]["authorization"] == "Bearer abc"


# -- the variables the SDK's gRPC exporter honours, honoured by ours ------------------------------


def _spans(count: int, attribute: str = "") -> list[ReadableSpan]:
    tracer = TracerProvider().get_tracer("test")
    spans = []
    for n in range(count):
        span = tracer.start_span(f"span{n}", attributes={"data": attribute} if attribute else None)
        span.end()
        spans.append(span)
    return spans


def _export(spans: list[ReadableSpan]) -> tuple[SpanExportResult, DeliveryTracker]:
    tracker = DeliveryTracker("spans", "")
    exporter = otlp_span_exporter(tracker)
    try:
        return exporter.export(spans), tracker
    finally:
        exporter.shutdown()


def test_the_grpc_exporter_sends_the_headers_of_the_signal_before_the_general_ones(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = GrpcCollector()
    try:
        grpc_env(collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-general=1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Authorization=Bearer%20abc,x-b=2")
        result, _ = _export(_spans(1))
    finally:
        collector.stop()
    assert result is SpanExportResult.SUCCESS
    [metadata] = collector.metadata
    assert (metadata["authorization"], metadata["x-b"]) == ("Bearer abc", "2")
    assert "x-general" not in metadata


def test_a_header_grpc_will_not_send_fails_the_export_with_its_reason(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # gRPC takes a "-bin" metadata value as bytes only: the export raised (before, the hook
    # process's report then said "no answer before the shutdown deadline").
    collector = GrpcCollector()
    try:
        grpc_env(collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-token-bin=abc")
        result, tracker = _export(_spans(1))
    finally:
        collector.stop()
    assert result is SpanExportResult.FAILURE
    assert (tracker.reason or "").startswith("the request could not be made: ")
    assert not tracker.retryable
    assert collector.metadata == []


def test_the_grpc_exporter_takes_an_endpoint_without_scheme_as_tls_unless_insecure(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = GrpcCollector()
    try:
        grpc_env(f"127.0.0.1:{collector.port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
        secure, tracker = _export(_spans(1))
        assert secure is SpanExportResult.FAILURE  # a TLS handshake with a plain server
        assert (tracker.reason or "").startswith("UNAVAILABLE")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "true")
        plain, _ = _export(_spans(1))
    finally:
        collector.stop()
    assert plain is SpanExportResult.SUCCESS
    assert collector.spans == ["span0"]


class _CountingProxy:
    """A TCP relay on 127.0.0.1 that counts the bytes the client sends through it."""

    def __init__(self, port: int) -> None:
        self.sent = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target = port
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        try:
            while data := source.recv(65536):
                if count:
                    self.sent += len(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_the_grpc_exporter_compresses_as_the_variable_says(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    collector = GrpcCollector()
    proxy = _CountingProxy(collector.port)
    try:
        grpc_env(f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", compression)
        result, _ = _export(_spans(1, "x" * 500_000))
    finally:
        proxy.close()
        collector.stop()
    assert result is SpanExportResult.SUCCESS
    assert collector.spans == ["span0"]
    assert (proxy.sent < 100_000) == (compression == "gzip"), proxy.sent


def test_the_grpc_exporter_waits_for_an_answer_as_long_as_the_timeout_says(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    collector: GrpcCollector

    def silent(context: Any, names: list[str]) -> Any:
        collector.release.wait(10)
        return trace_service_pb2.ExportTraceServiceResponse()

    collector = GrpcCollector(silent)
    try:
        grpc_env(collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.5")
        started = time.monotonic()
        result, tracker = _export(_spans(1))
        waited = time.monotonic() - started
    finally:
        collector.stop()
    assert result is SpanExportResult.FAILURE
    assert 0.4 < waited < 3.0
    assert (tracker.reason or "").startswith("DEADLINE_EXCEEDED")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key.read_bytes(), cert.read_bytes()


def test_the_grpc_exporter_trusts_the_certificate_the_variable_names_and_no_other(
    grpc_env: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    certificate: tuple[Path, bytes, bytes],
) -> None:
    path, key, cert = certificate
    collector = GrpcCollector(tls=(key, cert))
    try:
        grpc_env(f"https://127.0.0.1:{collector.port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
        untrusted, tracker = _export(_spans(1))
        assert untrusted is SpanExportResult.FAILURE  # a self-signed certificate
        assert (tracker.reason or "").startswith("UNAVAILABLE")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", str(path))
        trusted, _ = _export(_spans(1))
    finally:
        collector.stop()
    assert trusted is SpanExportResult.SUCCESS
    assert collector.spans == ["span0"]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "FIFO", "cannot read FIFO: not a regular file"),
        (
            "OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER",
            "missing",
            "no credentials from the provider 'missing': no such entry point",
        ),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "none", "0 of 1 spans exported"),
    ],
    ids=["fifo-certificate", "missing-provider", "compression-none"],
)
def test_an_odd_grpc_setting_never_silences_a_guard(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    # Settings in the environment a CLI passes its hooks (Codex's, Gemini CLI's). Before, the
    # hook process failed while it built its gRPC exporter and exited 1, after which the CLI
    # ran the `rm -rf` the guard denies: a FIFO as the collector's trust root (a process
    # substitution's path, a pipe a script left) held it past its answer time (25 s); a
    # credential provider not installed, or the specification's `none` compression, raised.
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    (tmp_path / "otelhooks.env").write_text(
        "OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.1:9\nOTEL_EXPORTER_OTLP_PROTOCOL=grpc\n"
    )
    env = {variable: value.replace("FIFO", str(fifo))}
    done = one_process(tmp_path, bash("u1", "rm -rf /"), **env)
    assert done.deny_reason() == "rm -rf is not allowed here"
    assert done.seconds < 20
    assert said.replace("FIFO", str(fifo)) in done.stderr


@pytest.mark.parametrize("provider", ["trusting", "missing"])
def test_the_grpc_exporter_takes_its_credentials_from_the_provider_the_variable_names(
    grpc_env: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    certificate: tuple[Path, bytes, bytes],
    provider: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The SDK's exporter takes a plugin's credentials (an entry point, a cloud's sign-in); one
    # it cannot find made it raise (in a hook process, an exit 1 and the call ran).
    path, key, cert = certificate
    (tmp_path / "otel_test_provider.py").write_text(
        f"import grpc\ndef trusting():\n"
        f"    return grpc.ssl_channel_credentials(open({str(path)!r}, 'rb').read())\n"
    )
    info = tmp_path / "otel_test_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[opentelemetry_otlp_credential_provider]\ntrusting = otel_test_provider:trusting\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    collector = GrpcCollector(tls=(key, cert))
    try:
        grpc_env(f"https://127.0.0.1:{collector.port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
        monkeypatch.setenv("OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER", provider)
        with caplog.at_level(logging.WARNING):
            result, tracker = _export(_spans(1))
    finally:
        collector.stop()
    said = [r.getMessage() for r in caplog.records if "credentials" in r.getMessage()]
    if provider == "trusting":
        assert said == []
        assert result is SpanExportResult.SUCCESS
        assert collector.spans == ["span0"]
    else:  # the system's trust roots, which do not know this certificate
        assert result is SpanExportResult.FAILURE
        assert (tracker.reason or "").startswith("UNAVAILABLE")
        assert said == ["no credentials from the provider 'missing': no such entry point"]


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_hook_processs_report_says_what_a_collector_rejected(
    tmp_path: Path, protocol: str
) -> None:
    # Before, the hook process counted the whole batch exported (its report said nothing) while
    # the collector's answer said it had not kept one span.
    from tests.reliability.test_telemetry_losses import Collector

    def answer(context: Any, names: list[str]) -> Any:
        partial = trace_service_pb2.ExportTracePartialSuccess(
            rejected_spans=1, error_message="observer queue full"
        )
        return trace_service_pb2.ExportTraceServiceResponse(partial_success=partial)

    collector = GrpcCollector(answer) if protocol == "grpc" else Collector(reject=1)
    url = collector.endpoint + ("" if protocol == "grpc" else "/v1/traces")
    try:
        (tmp_path / "otelhooks.yaml").write_text(NO_RM)
        (tmp_path / "otelhooks.env").write_text(
            f"OTEL_EXPORTER_OTLP_ENDPOINT={collector.endpoint}\n"
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}\n"
        )
        done = one_process(tmp_path, bash("u1", "rm -rf /"))
    finally:
        collector.stop()
    assert done.deny_reason() == "rm -rf is not allowed here"
    said = f"0 of 1 spans exported to {url}: 1 spans rejected: observer queue full"
    assert said in done.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "FIFO"),
        ("OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER", "missing"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
    ],
    ids=["fifo-certificate", "missing-provider", "compression-none"],
)
def test_an_odd_grpc_setting_never_silences_a_guard_of_the_bridge_daemon(
    tmp_path: Path, variable: str, value: str
) -> None:
    # The same settings through the hook client: the first event starts the daemon (and is
    # answered by the one-process bridge), the next ones are the daemon's. Before, the daemon
    # built the SDK's gRPC exporter, which raised: every event it answered was an exit 1, after
    # which the CLI ran the `rm -rf` the guard denies; a FIFO held it while it built its bridge
    # (each event was the one-process bridge's, after the client's wait).
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    (tmp_path / "otelhooks.env").write_text(
        "OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.1:9\nOTEL_EXPORTER_OTLP_PROTOCOL=grpc\n"
    )
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, **{variable: value.replace("FIFO", str(fifo))})
        assert hook(env, bash("u1", "rm -rf /")).deny_reason() == "rm -rf is not allowed here"
        daemon_pid(runtime)
        done = hook(env, bash("u2", "rm -rf /"))
    assert done.deny_reason() == "rm -rf is not allowed here"
    assert NO_ANSWER not in done.stderr  # the daemon's own answer


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "FIFO", "cannot read FIFO: not a regular file"),
        (
            "OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER",
            "missing",
            "no credentials from the provider 'missing': no such entry point",
        ),
        ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "none", "configured"),
    ],
    ids=["fifo-certificate", "missing-provider", "compression-none"],
)
def test_an_odd_grpc_metrics_setting_never_stops_configure(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    # Before, the SDK's gRPC metric exporter read the FIFO in configure() and waited for a
    # writer for ever; a credential provider not installed or `none` made configure() raise.
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    script = (
        "import otelhooks\n"
        "oh = otelhooks.configure(otlp=True, set_global=False, structured_logging=False)\n"
        "print('configured', flush=True)\n"
        "oh.shutdown()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(otelhooks.__file__).parents[1]),
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:9",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTELHOOKS_SHUTDOWN_TIMEOUT": "1",
        variable: value.replace("FIFO", str(fifo)),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env=env,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("configure() did not return within 20 s")
    assert "configured" in done.stdout, done.stderr
    assert said.replace("FIFO", str(fifo)) in done.stdout + done.stderr


def test_a_span_too_large_for_a_grpc_collector_is_lost_alone_by_the_bridge_daemon(
    tmp_path: Path,
) -> None:
    # The bridge the daemon builds once, its events handled as the daemon handles them. Before,
    # its SDK batch processor sent the batch with the span too large (a captured 200 kB command)
    # whole, and every span of it was lost.
    from otelhooks.integrations.coding_agents._daemon_build import build_bridge
    from otelhooks.integrations.coding_agents._run import BridgeOptions

    collector = GrpcCollector(max_receive=64 * 1024)
    (tmp_path / "otelhooks.yaml").write_text("hooks: []\n")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "CLAUDE_PROJECT_DIR": str(tmp_path),
    }
    options = BridgeOptions(hooks=("otelhooks.yaml",), state=str(tmp_path / "state.sqlite3"))
    bridge, _ = build_bridge(options, env)
    try:
        for n in range(5):
            command = "x" * 200_000 if n == 2 else f"echo {n}"
            for event in ("PreToolUse", "PostToolUse"):
                bridge.handle(
                    {
                        "session_id": "s",
                        "hook_event_name": event,
                        "tool_name": "Bash",
                        "tool_input": {"command": command},
                        "tool_use_id": f"u{n}",
                        "tool_response": {"stdout": "ok"},
                    }
                )
        bridge.close()  # exports what is queued
    finally:
        collector.stop()
    assert collector.spans == ["execute_tool Bash"] * 4
