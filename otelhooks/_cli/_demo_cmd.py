"""``otelhooks demo``: run the demo agents, print the tree, export the spans."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelhooks._cli._common import (
    CLI_SHUTDOWN_TIMEOUT_S,
    EXIT_UNDELIVERED,
    Subcommands,
    writable_file_problem,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

    from otelhooks._demo import DemoReport

__all__ = ["add_parser"]

DEFAULT_TRACES_OUT = "otelhooks-demo-traces.jsonl"


def _demo(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otelhooks._config import load_config
    from otelhooks._demo import missing_events, run_demo
    from otelhooks._errors import ConfigError
    from otelhooks._export import read_otlp_json_lines
    from otelhooks._export._otlp import summarise_sdk_logs
    from otelhooks._setup import configure, shutdown_timeout

    if args.linger and args.prometheus_port is None:
        print("otelhooks demo: --linger needs --prometheus-port", file=sys.stderr)
        return 2
    try:
        extra = load_config(args.hooks).hooks
    except ConfigError as exc:
        print(f"otelhooks demo: {exc}", file=sys.stderr)
        return 2
    traces_out = Path(args.traces_out).absolute()
    problem = writable_file_problem(traces_out)
    if problem is not None:
        print(f"otelhooks demo: --traces-out {args.traces_out}: {problem}", file=sys.stderr)
        return 2
    reader = InMemoryMetricReader()
    readers: list[MetricReader] = [reader]
    endpoint = None
    if args.prometheus_port is not None:
        try:
            endpoint = _PrometheusEndpoint(args.prometheus_port)
        except OSError as exc:  # the port is taken, or not ours to bind
            print(f"otelhooks demo: cannot serve metrics: {exc}", file=sys.stderr)
            return 2
        readers.append(endpoint.reader)
    summarise_sdk_logs(math.inf)  # the delivery report at the end says it once
    try:
        oh = configure(
            service_name="otelhooks-demo",
            traces_out=traces_out,
            metric_readers=readers,
            structured_logging=not args.quiet,
            # A short-lived command: a dead endpoint is reported, not waited for.
            fail_fast=True,
            shutdown_timeout_s=shutdown_timeout(CLI_SHUTDOWN_TIMEOUT_S),
        )
        report = run_demo(oh, extra_hooks=extra)
        if endpoint is not None:
            endpoint.linger(args.linger)
        # Before the endpoint stops: shutting the meter provider down empties it.
        delivery = oh.shutdown(log=False)
    finally:
        if endpoint is not None:
            endpoint.stop()
    spans = read_otlp_json_lines(traces_out)
    if not args.quiet:
        print(
            _verbose_report(spans, report, reader) if args.verbose else _first_screen(spans, report)
        )
    print("Delivery:")
    for line in delivery.lines():
        print(f"  {line}")
    if not args.quiet:
        print(next_steps(traces_out, verbose=args.verbose))
    missing = missing_events(report)
    if missing:
        print(f"not every lifecycle hook fired: {', '.join(missing)}", file=sys.stderr)
        return 1
    return EXIT_UNDELIVERED if delivery.dead else 0


def _first_screen(spans: list[dict[str, Any]], report: DemoReport) -> str:
    """The first operation's tree and one line per operation: what fits on one screen."""
    from otelhooks._demo import INTERCEPT_OF, tally_hooks
    from otelhooks._demo_tree import operation_summary, render_trees

    first = next(s for s in spans if s["name"] == "invoke_agent research-assistant")
    trace = [s for s in spans if s["traceId"] == first["traceId"]]
    counters = {hook["id"] for hook in tally_hooks(report)}
    return "\n".join(
        [
            render_trees(trace, hide_hooks=counters),
            operation_summary(spans),
            f"Hooks: {sum(report.intercepts.values())} runs of the {len(INTERCEPT_OF)} hooks "
            f"of demo-hooks.yaml (named in the tree), and {sum(report.fired.values())} of the "
            f"demo's\n  {len(counters)} counting hooks, one per LobeHub hook type "
            "(shown by --verbose)",
        ]
    )


def _verbose_report(spans: list[dict[str, Any]], report: DemoReport, reader: object) -> str:
    from otelhooks._demo import KERNEL_INTERCEPTS, LOBEHUB_TYPES
    from otelhooks._demo_tree import LIFECYCLE_PREFIX, render_trees

    runs = [s for s in spans if not s["name"].startswith(LIFECYCLE_PREFIX)]
    lifecycle = [s["name"].removeprefix(LIFECYCLE_PREFIX) for s in spans if s not in runs]
    lines = [render_trees(runs)]
    if lifecycle:
        lines.append(
            "Lifecycle events outside any operation (one span each, a trace of its own): "
            + ", ".join(lifecycle)
        )
    lines.append("Hook invocations by LobeHub hook type (the demo counts each type):")
    lines += [f"  {hook_type:<28} {report.fired[hook_type]}" for hook_type in LOBEHUB_TYPES]
    lines.append("Intercept hooks run, by event (demo-hooks.yaml):")
    lines += [f"  {point:<28} {report.intercepts[point]}" for point in KERNEL_INTERCEPTS]
    lines.append(_metrics_summary(reader))
    return "\n".join(lines)


def next_steps(traces_out: Path, *, verbose: bool = False) -> str:
    """What to try after the demo: more of this run, a hook file of one's own, replay."""
    from otelhooks._demo_hooks import demo_hooks_file

    steps = f"""
Next:
  otelhooks demo --verbose       every trace of this run, the hooks fired, the counters
  otelhooks tree {traces_out}
  otelhooks init                 a starter hook file; then: otelhooks demo --hooks hooks.yaml
  otelhooks replay {traces_out} --hooks {demo_hooks_file()}
  Jaeger, Grafana, Prometheus (docker compose up -d), the event log (otelhooks serve): README"""
    if not verbose:
        return steps
    return f"""{steps}
  in Jaeger:       docker compose up -d    (from a checkout: collector, Jaeger, Grafana...)
                   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 otelhooks demo
                   then open http://127.0.0.1:16686, service otelhooks-demo
  in the event log of otelhooks serve (docs/eventlog.md):
                   export OTELHOOKS_ADMIN_TOKEN=$(openssl rand -hex 24)
                   otelhooks serve --hooks examples/agent-os/hooks/events.yaml &
                   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4319/v1/traces \\
                   OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20$OTELHOOKS_ADMIN_TOKEN" \\
                   otelhooks demo
                   curl -H "Authorization: Bearer $OTELHOOKS_ADMIN_TOKEN" \\
                        "http://127.0.0.1:4319/v1/events?mode=drain&since=0\""""


class _PrometheusEndpoint:
    """An OTel Prometheus reader served on 127.0.0.1:``port`` (``/metrics``) until ``stop``.

    The reader has its own registry (a second reader on the default one would duplicate every
    series) and copies ``service.name`` onto every series as ``service_name``, as the stack's
    collector does: otherwise the service would appear only in ``target_info``.

    Raises:
        OSError: If the port cannot be bound.
    """

    def __init__(self, port: int) -> None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry()
        self.reader = PrometheusMetricReader(
            registry=registry, resource_attribute_filter=lambda key: key == "service.name"
        )
        self._server, self._thread = start_http_server(port, addr="127.0.0.1", registry=registry)
        self.port: int = self._server.server_port  # the one bound: port 0 is any free port

    def linger(self, seconds: float) -> None:
        """Keep serving for ``seconds`` (Ctrl-C ends it early), so Prometheus can scrape."""
        if seconds <= 0:
            return
        if threading.current_thread() is not threading.main_thread():
            self._announce(seconds)
            with contextlib.suppress(KeyboardInterrupt):
                time.sleep(seconds)
            return
        # Ctrl-C or a SIGTERM ends the wait, also when the shell that started the demo in the
        # background left SIGINT ignored (Python then never raises KeyboardInterrupt). The
        # handler only sets a flag: one that took a lock (Event.set) could deadlock against the
        # very wait it interrupts, which holds that lock for a moment.
        stop = [False]

        def end(signum: int, frame: object) -> None:
            stop[0] = True

        previous = {
            signum: signal.signal(signum, end) for signum in (signal.SIGINT, signal.SIGTERM)
        }
        # Announced once the handlers are in place: a signal sent on seeing the line must end
        # the wait (before, one sent in between was ignored and the demo lingered on).
        self._announce(seconds)
        try:
            until = time.monotonic() + seconds
            while not stop[0] and (left := until - time.monotonic()) > 0:
                time.sleep(min(left, 0.1))
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _announce(self, seconds: float) -> None:
        print(
            f"serving metrics on http://127.0.0.1:{self.port}/metrics for {seconds:g} s "
            "(Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _metrics_summary(reader: object) -> str:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Sum

    assert isinstance(reader, InMemoryMetricReader)
    data = reader.get_metrics_data()
    lines = ["Metrics (counters):"]
    if data is None:
        return "Metrics: none collected"
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if not isinstance(metric.data, Sum) or not metric.name.startswith("otelhooks."):
                    continue
                total = sum(int(p.value) for p in metric.data.data_points)
                lines.append(f"  {metric.name:<32} {total}")
    return "\n".join(lines)


def add_parser(sub: Subcommands) -> None:
    demo = sub.add_parser(
        "demo",
        help="run a complete agent scenario through every lifecycle event",
        description="Run the demo agents, print the trace tree, write OTLP JSON lines. "
        "With OTEL_EXPORTER_OTLP_ENDPOINT set, spans and metrics also go over OTLP.",
    )
    demo.add_argument(
        "--traces-out",
        default=os.environ.get("OTELHOOKS_TRACES_OUT", DEFAULT_TRACES_OUT),
        metavar="PATH",
        help=f"OTLP JSON lines file for the spans (default: {DEFAULT_TRACES_OUT})",
    )
    demo.add_argument(
        "--hooks",
        action="append",
        default=[],
        metavar="PATH",
        help="load extra hooks from a config file (repeatable); they run before the demo's own",
    )
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="print every trace, the hooks fired by type and the counters (default: the first "
        "operation's trace and a summary, one screen)",
    )
    demo.add_argument("--quiet", action="store_true", help="print only the delivery report")
    demo.add_argument(
        "--prometheus-port",
        type=int,
        metavar="PORT",
        help="also serve the metrics for Prometheus to scrape on 127.0.0.1:PORT/metrics "
        "(service.name becomes the service_name label of every series; 0: any free port, "
        "the one bound is printed)",
    )
    demo.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --prometheus-port: keep serving this long after the run, so Prometheus "
        "can scrape it (default: 0)",
    )
    demo.set_defaults(func=_demo)
