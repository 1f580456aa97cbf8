"""``otelhooks demo``: run the demo agents, print the tree, export the spans."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from otelhooks._config import load_hook_files
from otelhooks._errors import ConfigError

__all__ = ["add_parser"]

DEFAULT_TRACES_OUT = "otelhooks-demo-traces.jsonl"


def _demo(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otelhooks._demo import KERNEL_INTERCEPTS, LOBEHUB_TYPES, missing_events, run_demo
    from otelhooks._demo_tree import render_trees
    from otelhooks._export import read_otlp_json_lines
    from otelhooks._setup import _otlp_configured, configure

    try:
        extra = load_hook_files(args.hooks)
    except ConfigError as exc:
        print(f"otelhooks demo: {exc}", file=sys.stderr)
        return 2
    traces_out = Path(args.traces_out)
    if traces_out.exists():
        traces_out.unlink()  # one demo run per file, so the tree shows this run only
    reader = InMemoryMetricReader()
    oh = configure(
        service_name="otelhooks-demo",
        traces_out=traces_out,
        metric_readers=[reader],
        structured_logging=not args.quiet,
    )
    report = run_demo(oh, extra_hooks=extra)
    oh.shutdown()
    spans = read_otlp_json_lines(traces_out)
    if not args.quiet:
        print(render_trees(spans))
        print("Hook types fired (LobeHub names; count of hook invocations):")
        for hook_type in LOBEHUB_TYPES:
            print(f"  {hook_type:<28} {report.fired[hook_type]}")
        print("Kernel intercept points:")
        for point in KERNEL_INTERCEPTS:
            print(f"  {point:<28} {report.intercepts[point]}")
        print(_metrics_summary(reader))
    print(f"{len(spans)} spans written as OTLP JSON lines to {traces_out}")
    if _otlp_configured():
        print("and exported over OTLP to the endpoint in OTEL_EXPORTER_OTLP_*")
    missing = missing_events(report)
    if missing:
        print(f"not every lifecycle hook fired: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        help="load extra hooks from a config file (repeatable)",
    )
    demo.add_argument("--quiet", action="store_true", help="print only the summary line")
    demo.set_defaults(func=_demo)
