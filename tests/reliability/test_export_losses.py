"""Spans and records of what an agent did that used to be lost with nothing counted or said.

Each test runs the real pipeline of ``configure()`` (in a process of its own where processes
are the point), exporting over OTLP/HTTP to a real receiver on 127.0.0.1, to a real traces file
or to a real SQLite event log, and looks at what arrived and what was counted.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import otelhooks
from tests._realparts import OtlpHttpSink
from tests._webhook_server import Reply, webhook_server

_CHILDREN = 2

# configure(), then child processes of multiprocessing, each running one agent operation and
# ending as multiprocessing ends them (os._exit), then the parent's own operation.
# multiprocessing is imported after configure(), which must not depend on the order.
_FORKING_SCRIPT = """
import sys
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False, **{configure})

import multiprocessing

def child(n):
    with oh.operation(f"child{{n}}"):
        pass

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    children = [context.Process(target=child, args=(n,)) for n in range({children})]
    for process in children:
        process.start()
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    with oh.operation("parent"):
        pass
    print(oh.shutdown())
"""


@pytest.fixture
def sink() -> Iterator[OtlpHttpSink]:
    receiver = OtlpHttpSink()
    try:
        yield receiver
    finally:
        receiver.stop()


def _run(
    script: str, tmp_path: Path, method: str, env: dict[str, str], timeout_s: float = 60
) -> str:
    path = tmp_path / "agent.py"
    path.write_text(script)
    result = subprocess.run(
        [sys.executable, str(path), method],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr  # structlog's lines are on stdout


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_the_spans_of_a_multiprocessing_child_are_exported(
    sink: OtlpHttpSink, tmp_path: Path, method: str
) -> None:
    script = _FORKING_SCRIPT.format(configure="{'otlp': True}", children=_CHILDREN)
    _run(script, tmp_path, method, {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint})
    # Before, the children ended with their spans still queued: only the parent's arrived.
    assert sink.wait_for_count(_CHILDREN + 1, timeout=10), sink.span_names
    assert sorted(sink.span_names) == sorted(
        [*(f"invoke_agent child{n}" for n in range(_CHILDREN)), "invoke_agent parent"]
    )


def test_a_traces_file_keeps_the_lines_of_forked_children(tmp_path: Path) -> None:
    # Only fork: a forkserver or spawn child runs configure() again, a run of its own that
    # empties the file as any run does (span_exporters=[OtlpJsonLinesSpanExporter(path)] adds).
    (tmp_path / "traces.jsonl").write_text("a line of an earlier run\n")
    script = _FORKING_SCRIPT.format(configure="{'traces_out': 'traces.jsonl'}", children=_CHILDREN)
    _run(script, tmp_path, "fork", {})
    # Before, the parent emptied the file at its first export, after the children had written
    # theirs (and with fork each child emptied it too, each reporting its span exported).
    names = [span["name"] for span in otelhooks.read_otlp_json_lines(tmp_path / "traces.jsonl")]
    assert sorted(names) == sorted(
        [*(f"invoke_agent child{n}" for n in range(_CHILDREN)), "invoke_agent parent"]
    )


# Notifications still on their way when the children are forked; each child notifies once.
_NOTIFY_THEN_FORK = """
import multiprocessing, sys
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False)
oh.register([{{"id": "notify", "type": "afterToolCall", "webhook": {{"url": "{url}"}}}}])

def agent(name, calls):
    with oh.operation(name) as op, op.step() as step:
        for n in range(calls):
            step.run_tool("calc", "add", {{"n": n}}, lambda n: "ok")

if __name__ == "__main__":
    agent("parent", 20)
    context = multiprocessing.get_context(sys.argv[1])
    children = [context.Process(target=agent, args=(f"child{{c}}", 1)) for c in range(2)]
    for process in children:
        process.start()
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    print(oh.shutdown())
"""


def test_a_forked_child_notifies_and_reports_only_what_it_sent(tmp_path: Path) -> None:
    with webhook_server() as server:
        server.routes["/notify"] = Reply(delay_s=0.2)  # the parent's are on their way at the fork
        script = _NOTIFY_THEN_FORK.format(url=server.url + "/notify")
        output = _run(script, tmp_path, "fork", {})
        received = server.wait_for("/notify", 22)
    # Before, a child ended without delivering its notification, and a child that shut down
    # at exit reported its parent's deliveries as dropped ("1 of 21 webhooks delivered ...
    # (20 dropped): no answer before the shutdown deadline") in the agent's output.
    assert len(received) == 22
    assert "not everything was delivered" not in output, output


def test_a_fork_never_waits_for_a_traces_fifo_to_be_read(tmp_path: Path) -> None:
    # The traces file is emptied before the first fork; a FIFO nobody reads yet cannot be
    # opened without waiting for its reader, and the fork must not wait with it.
    os.mkfifo(tmp_path / "traces.fifo")
    script = """
import os, sys
import otelhooks
oh = otelhooks.configure(traces_out="traces.fifo", set_global=False, structured_logging=False)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
os._exit(0)  # the FIFO has no reader: nothing is exported, nothing waits for it
"""
    _run(script, tmp_path, "", {}, timeout_s=20)  # before this fix: waited forever


class KeepAliveCollector:
    """An OTLP/HTTP receiver on 127.0.0.1 that keeps connections open (HTTP/1.1, as collectors
    do) and records the client port each span came from, and every request it could not read.
    A body over ``max_body`` bytes is refused with 413, as collectors and ``otelhooks serve``
    refuse one past their limit."""

    def __init__(self, *, max_body: int | None = None) -> None:
        self.spans: list[tuple[str, int]] = []
        self.unreadable = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status = 200
                if max_body is not None and len(body) > max_body:
                    status = 413
                elif self.path == "/v1/traces":
                    try:
                        request = ExportTraceServiceRequest.FromString(body)
                    except Exception:
                        collector.unreadable += 1
                        status = 400
                    else:
                        collector.spans += [
                            (span.name, self.client_address[1])
                            for rs in request.resource_spans
                            for ss in rs.scope_spans
                            for span in ss.spans
                        ]
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# The parent exports before it forks (its connection stays open in the pool), then it and its
# children export at the same time.
_EXPORT_THEN_FORK = """
import multiprocessing, sys
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False, otlp=True)
with oh.operation("before the fork"):
    pass
assert oh.force_flush()

def agent(name):
    for n in range(10):
        with oh.operation(f"{name} {n}"):
            pass
        oh.tracer_provider.force_flush()

if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=agent, args=(f"child{c}",)) for c in range(2)]
    for process in children:
        process.start()
    agent("parent")
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    print(oh.shutdown())
"""


def test_a_forked_child_never_sends_on_the_parents_connection(tmp_path: Path) -> None:
    receiver = KeepAliveCollector()
    try:
        _run(
            _EXPORT_THEN_FORK, tmp_path, "fork", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        )
    finally:
        receiver.stop()
    # Before, each child's pool held the parent's open connection: their requests went out on
    # one socket, one cutting into another (a 400, the batch lost) or each reading the other's
    # answer, whatever the collector made of them.
    assert receiver.unreadable == 0
    names = sorted(name for name, _ in receiver.spans)
    assert names == sorted(
        ["invoke_agent before the fork"]
        + [f"invoke_agent {who} {n}" for who in ("parent", "child0", "child1") for n in range(10)]
    )
    parents = {port for name, port in receiver.spans if "child" not in name}
    assert not any(port in parents for name, port in receiver.spans if "child" in name)


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


def test_a_span_too_large_for_the_collector_is_lost_alone_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tool whose captured result (2 MiB) is more than the collector takes in one request (here
    # 1 MiB; 16 MiB for otelhooks serve, 20 MiB for the Collector's default): before, the 413
    # lost every span of its batch, the other calls' and the run's own with it.
    receiver = KeepAliveCollector(max_body=1 << 20)
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        reader = InMemoryMetricReader()
        oh = otelhooks.configure(
            otlp=True, capture_content=True, metric_readers=[reader], set_global=False,
            structured_logging=False,
        )  # fmt: skip
        with oh.operation("agent", input="go") as op, op.step() as step:
            for name in ("list", "read", "grep", "stat", "diff"):
                result = "x" * (2 << 20) if name == "read" else "small"
                step.run_tool("fs", name, {}, lambda result=result: result)
        assert oh.force_flush(5.0)  # a 413 is not retried: the halves are sent at once
        assert oh.metrics.flush(5.0)
        assert _dropped(reader) == {("span_export", "export_failed"): 1}
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        receiver.stop()

    assert sorted(name for name, _ in receiver.spans) == [
        "execute_tool diff", "execute_tool grep", "execute_tool list", "execute_tool stat",
        "invoke_agent agent", "step 0",
    ]  # fmt: skip
    assert report.lines() == [
        f"6 of 7 spans exported to {receiver.endpoint}/v1/traces: 413 Request Entity Too Large"
    ]


def test_records_a_stalled_event_log_refuses_are_counted(tmp_path: Path) -> None:
    # A neighbour (the sqlite3 shell, a backup) holds the event log file's write lock while
    # the agent makes calls faster than the log's queue holds. Before, the records it refused
    # were counted only in the log's own stats: no log line, nothing in otelhooks.dropped.
    reader = InMemoryMetricReader()
    oh = otelhooks.configure(metric_readers=[reader], set_global=False, structured_logging=False)
    path = tmp_path / "events.sqlite3"
    log = otelhooks.SqliteEventLog(path, max_queue_size=4, max_batch_size=4)
    events = otelhooks.AgentEvents(otelhooks.AgentEventsConfig(name="shop"), log=log)
    events.install(oh.hooks)
    neighbour = sqlite3.connect(path)
    neighbour.execute("BEGIN IMMEDIATE")
    try:
        with oh.operation("shop") as op, op.step() as step:
            for n in range(20):
                step.run_tool("shop", "order_create", {"n": n}, lambda n: "ok")
        assert oh.engine.flush(5.0)
    finally:
        neighbour.rollback()
        neighbour.close()
    assert log.flush(10.0)
    refused = log.stats().dropped
    assert refused > 0  # the queue of 4 could not hold 20 records
    assert log.stats().appended + refused == 20
    assert oh.metrics.flush(5.0)
    assert _dropped(reader) == {("event_log", "queue_full"): refused}
    events.close()
    oh.shutdown(timeout_s=5.0, log=False)


# The disk fills once the event log is open: the commits of the records that follow fail.
_EVENT_LOG_ON_A_FULL_DISK = """
import os, resource, signal
import otelhooks
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

reader = InMemoryMetricReader()
oh = otelhooks.configure(metric_readers=[reader], set_global=False, structured_logging=False)
log = otelhooks.SqliteEventLog("events.sqlite3")
events = otelhooks.AgentEvents(otelhooks.AgentEventsConfig(name="shop"), log=log)
events.install(oh.hooks)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
full = max(os.path.getsize(f) for f in ("events.sqlite3", "events.sqlite3-wal"))
resource.setrlimit(resource.RLIMIT_FSIZE, (full, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
with oh.operation("shop") as op, op.step() as step:
    for n in range(3):
        step.run_tool("shop", "order_create", {"n": n}, lambda n: "ok")
assert oh.engine.flush(5.0) and log.flush(5.0)
assert oh.metrics.flush(5.0)
data = reader.get_metrics_data()
counted = sorted(
    (str(p.attributes["otelhooks.drop.source"]), str(p.attributes["otelhooks.drop.reason"]),
     int(p.value))
    for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    if m.name == "otelhooks.dropped" for p in m.data.data_points
)
print("lost", log.stats().dropped, "counted", counted)
"""


def test_records_an_event_log_cannot_commit_are_counted(tmp_path: Path) -> None:
    output = _run(_EVENT_LOG_ON_A_FULL_DISK, tmp_path, "", {})
    assert "event log write failed" in output
    # Before, they were in the log's stats and a log line only: "counted []".
    assert "lost 3 counted [('event_log', 'write_failed', 3)]" in output


# Queued notifications (the durable outbox), the parent's still waiting at the fork: parent and
# children share one outbox file.
_QUEUE_THEN_FORK = """
import multiprocessing, sys
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False, outbox_path="outbox.db")
oh.register([{{"id": "q", "type": "afterToolCall",
               "webhook": {{"url": "{url}", "delivery": "queue"}}}}])

def agent(name, calls):
    with oh.operation(name) as op, op.step() as step:
        for n in range(calls):
            step.run_tool("calc", "add", {{"n": n}}, lambda n: "ok")

if __name__ == "__main__":
    agent("parent", 30)
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=agent, args=(f"child{{c}}", 5)) for c in range(3)]
    for process in children:
        process.start()
    agent("parent", 30)
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    print(oh.shutdown())
"""


def test_an_outbox_shared_with_forked_children_delivers_each_row_once(tmp_path: Path) -> None:
    with webhook_server() as server:
        server.routes["/q"] = Reply(delay_s=0.01)
        _run(_QUEUE_THEN_FORK.format(url=server.url + "/q"), tmp_path, "fork", {})
        received = server.requests("/q")
    keys = [r.headers["idempotency-key"] for r in received]
    # Before, every process that shut down delivered the due rows it saw, the others' too (61
    # repeats of 75 here); then the children's leases were left behind, their rows delayed
    left = sqlite3.connect(tmp_path / "outbox.db").execute("SELECT COUNT(*) FROM outbox")
    assert (len(set(keys)), len(keys), left.fetchone()[0]) == (75, 75, 0)


# A durable event log (one writer per file) opened before the fork: the children write to it too.
_EVENT_LOG_THEN_FORK = """
import multiprocessing
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False)
log = otelhooks.SqliteEventLog("events.sqlite3")
events = otelhooks.AgentEvents(otelhooks.AgentEventsConfig(name="shop"), log=log)
events.install(oh.hooks)

def agent(name, flush=False):
    with oh.operation(name) as op, op.step() as step:
        for n in range(10):
            step.run_tool("shop", "order_create", {"n": n}, lambda n: "ok")
    if flush:  # committed while the child runs; the others' at its exit
        assert oh.engine.flush(10.0) and log.flush(10.0)

if __name__ == "__main__":
    agent("parent")
    assert oh.engine.flush(10.0) and log.flush(10.0)
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=agent, args=(f"child{c}", c == 0)) for c in range(3)]
    for process in children:
        process.start()
    agent("parent")
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    oh.shutdown()
    events.close()
"""


def test_an_event_log_keeps_the_records_of_forked_children_in_one_order(
    tmp_path: Path,
) -> None:
    output = _run(_EVENT_LOG_THEN_FORK, tmp_path, "", {})
    # Before, a child wrote with the head it inherited (UNIQUE constraint failed: events.seq)
    # or ended with its records still queued: only the parent's 20 were kept.
    assert "event log write failed" not in output
    log = otelhooks.SqliteEventLog(tmp_path / "events.sqlite3")
    try:
        batch = log.read(0, 100)
    finally:
        log.close()
    assert [record.seq for record in batch.records] == list(range(1, 51))
    # five runs (the parent's two, a child's each) of ten calls each, a trace each
    traces = [record.trace_id for record in batch.records]
    assert sorted(traces.count(trace) for trace in set(traces)) == [10] * 5


_EVENT_LOG_THEN_OUTLIVED = """
import os, sys, time
import otelhooks
from otelhooks import EventEntry

log = otelhooks.SqliteEventLog("events.sqlite3")
parent = os.getpid()
child = os.fork()
if child == 0:
    while os.getppid() == parent:  # goes on after its parent exited
        time.sleep(0.01)
    log.append(EventEntry(0, "late", None, None, None, "after_loop", 0, 1, None, "", None, None))
    assert log.flush(10.0)
    print("written", flush=True)
    sys.stdin.read()  # until the test closes it
    log.close()
    os._exit(0)
print(parent, child, flush=True)
log.close()
"""


def test_a_fork_child_that_outlives_the_opener_of_an_event_log_is_named_as_its_writer(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(_EVENT_LOG_THEN_OUTLIVED)
    agent = subprocess.Popen(
        [sys.executable, "agent.py"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert agent.stdin is not None
    assert agent.stdout is not None
    try:
        parent, child = agent.stdout.readline().split()
        assert agent.wait(30) == 0
        assert agent.stdout.readline() == "written\n"  # the child still writes the log
        # Before, the error named only the opener, which no longer ran.
        with pytest.raises(OSError, match="already written by another event log") as refused:
            otelhooks.SqliteEventLog(tmp_path / "events.sqlite3")
        assert f"(pid {child}, forked from pid {parent} that opened it)" in str(refused.value)
    finally:
        agent.stdin.close()  # the child ends, and with it the lock
    deadline = time.monotonic() + 30
    while True:
        try:
            log = otelhooks.SqliteEventLog(tmp_path / "events.sqlite3")
            break
        except OSError:
            assert time.monotonic() < deadline, "the writer lock outlived the child"
            time.sleep(0.02)
    try:
        assert [record.agent for record in log.read(0, 10).records] == ["late"]
    finally:
        log.close()


class _GrpcCollector:
    """A real OTLP/gRPC trace server on 127.0.0.1 answering ``UNAVAILABLE`` to its first
    ``unavailable`` requests, then keeping every span."""

    def __init__(self, unavailable: int = 0) -> None:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.trace.v1 import (
            trace_service_pb2,
            trace_service_pb2_grpc,
        )

        self.requests = 0
        self.spans: list[str] = []
        collector = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                collector.requests += 1
                if collector.requests <= unavailable:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "starting")
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans.extend(span.name for span in scope.spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.server)
        self.endpoint = f"http://127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()


def _grpc_env(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")


def test_a_scripts_exit_with_a_refused_grpc_collector_is_quick(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as bound:  # bound, never listening: every connection is refused
        bound.bind(("127.0.0.1", 0))
        _grpc_env(monkeypatch, f"http://127.0.0.1:{bound.getsockname()[1]}")
        oh = otelhooks.configure(
            traces_out=tmp_path / "t.jsonl", set_global=False, structured_logging=False
        )
        with oh.operation("helper"):
            pass
        started = time.monotonic()
        report = oh.shutdown(timeout_s=10.0, log=False)
        # Before, the SDK's exporter retried until its own 10 s, deaf to the shutdown: the
        # exit took the whole deadline (OTLP/HTTP: at once).
        assert time.monotonic() - started < 3.0
    spans = [d for d in report if d.kind == "spans"]
    assert [(d.sent, d.delivered, d.failed) for d in spans] == [(1, 1, 0), (1, 0, 1)]


def test_a_grpc_collector_unavailable_for_a_while_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collector = _GrpcCollector(unavailable=2)
    try:
        _grpc_env(monkeypatch, collector.endpoint)
        oh = otelhooks.configure(set_global=False, structured_logging=False)
        with oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "read", {}, lambda: "ok")
        assert oh.force_flush(20.0)  # the batch processor retries what the exporter did not
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.server.stop(0)
    assert sorted(collector.spans) == ["execute_tool read", "invoke_agent agent", "step 0"]
    assert collector.requests >= 3  # two refused, then kept
    assert report.ok
