"""Resident memory over many lifecycle events while the hooks' consumers cannot keep up.

``python benchmarks/_memory.py --events 1000000 --sink slow-observer`` runs an agent loop (steps
of one LLM call and three tool calls, 13 lifecycle events each) on the pipeline ``configure``
builds, with a *sink* whose consumers are slow, and prints one JSON object: resident memory
before and after, peak, the events fired, and the drops as the ``otelhooks.dropped`` metric
reports them (read through an in-memory metric reader, by source and reason).

A sink is a function returning :class:`Sink` (the hooks to register and a ``close``). Today:

* ``slow-observer``: an observer on every observer event of the loop that takes 10 ms per call.
  The observer queue is bounded, so it fills and then drops (and counts).
* ``webhook-down``: a notification webhook on the same events to a 127.0.0.1 port nothing listens
  on (bound, never listening: every connection is refused). Deliveries are retried to their
  deadline, so the webhook queue fills and then drops (and counts).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EVENTS_PER_STEP = 13  # before_step, llm_input, llm_output, 3 x (before_tool_call,
#                       tool_result_persist, after_tool_call), after_step
OBSERVED_PER_STEP = 7  # before_step, llm_input, llm_output, 3 x after_tool_call, after_step
OBSERVED_EVENTS = ("before_step", "after_step", "llm_input", "llm_output", "after_tool_call")


def _observer_queue(oh: Any) -> Any:
    return oh.engine._dispatcher._observers.queue


def _stop_observers(oh: Any, timeout_s: float) -> None:
    oh.engine.shutdown(timeout_s)


@dataclass
class Sink:
    """What a memory case registers, and how to stop it. ``queue`` finds the bounded queue the
    sink fills in the configured pipeline (its own counter cross-checks the metric); ``stop``
    shuts that queue down within a deadline, so what is left is counted before the pipeline
    goes."""

    description: str
    hooks: list[dict[str, Any]]
    close: Callable[[], None] = field(default=lambda: None)
    queue: Callable[[Any], Any] = _observer_queue
    stop: Callable[[Any, float], None] = _stop_observers


def slow_observer(delay_s: float = 0.010) -> Sink:
    def slow(event: Any) -> None:
        time.sleep(delay_s)

    hooks = [{"id": f"slow-{e}", "type": e, "handler": slow} for e in OBSERVED_EVENTS]
    return Sink(f"observers taking {delay_s * 1000:g} ms per event on {OBSERVED_EVENTS}", hooks)


def webhook_down() -> Sink:
    # Bound but never listening: connections are refused, and no other program takes the port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/hooks"
    hooks = [{"id": f"down-{e}", "type": e, "webhook": {"url": url}} for e in OBSERVED_EVENTS]
    return Sink(
        f"notification webhooks to {url} (refused) on {OBSERVED_EVENTS}",
        hooks,
        close=sock.close,
        queue=lambda oh: oh.webhooks._worker,
        stop=lambda oh, timeout_s: oh.webhooks.shutdown(timeout_s),
    )


SINKS: dict[str, Callable[[], Sink]] = {
    "slow-observer": slow_observer,
    "webhook-down": webhook_down,
}


def rss_bytes() -> tuple[int, int]:
    """(current, peak) resident set size of this process, from /proc/self/status."""
    current = peak = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return current, peak


def dropped(reader: Any) -> dict[str, int]:
    """``otelhooks.dropped`` totals by ``source/reason``, as the metric pipeline reports them."""
    out: dict[str, int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != "otelhooks.dropped":
                    continue
                for point in metric.data.data_points:
                    attrs = point.attributes or {}
                    key = (
                        f"{attrs.get('otelhooks.drop.source')}/{attrs.get('otelhooks.drop.reason')}"
                    )
                    out[key] = out.get(key, 0) + int(point.value)
    return out


def run(events: int, sink_name: str, shutdown_s: float) -> dict[str, Any]:
    from _cases import ARGS, RESULT, NoopExporter
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import otelhooks

    sink = SINKS[sink_name]()
    reader = InMemoryMetricReader()
    oh = otelhooks.configure(
        service_name="bench-memory",
        hooks=sink.hooks,
        span_exporters=[NoopExporter()],
        metric_readers=[reader],
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    tracer = oh.tracer
    steps = -(-events // EVENTS_PER_STEP)
    steps_per_operation = 50

    def agent(n_steps: int) -> None:
        done = 0
        while done < n_steps:
            with tracer.operation("memory-bot", input="go") as op:
                for _ in range(min(steps_per_operation, n_steps - done)):
                    with op.step() as step:
                        with step.llm("scripted") as llm:
                            llm.record("calling tools", input_tokens=12, output_tokens=5)
                        for _ in range(3):
                            with step.tool_call("fs", "readFile", ARGS) as call:
                                if call.should_run:
                                    call.set_result(RESULT)
                    done += 1

    agent(2)  # warm-up: imports, caches, worker threads
    gc.collect()
    before, _ = rss_bytes()
    started = time.perf_counter()
    agent(steps)
    elapsed = time.perf_counter() - started
    gc.collect()
    after, peak = rss_bytes()
    drops = dropped(reader)
    worker = sink.queue(oh)  # cross-check of the metric, and what is still queued
    queued, counted = worker.queued, worker.dropped
    sink.stop(oh, shutdown_s)
    drops_after_shutdown = dropped(reader)
    oh.shutdown(timeout_s=shutdown_s)
    sink.close()
    return {
        "sink": sink_name,
        "sink_description": sink.description,
        "lifecycle_events": steps * EVENTS_PER_STEP,
        "steps": steps,
        "submissions": steps * OBSERVED_PER_STEP,
        "seconds": round(elapsed, 2),
        "rss_before_mb": round(before / 2**20, 1),
        "rss_after_mb": round(after / 2**20, 1),
        "rss_peak_mb": round(peak / 2**20, 1),
        "rss_growth_mb": round((after - before) / 2**20, 1),
        "dropped_during_run": drops,
        "queue_dropped_counter": counted,
        "queue_left": queued,
        "dropped_after_shutdown": drops_after_shutdown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sink", choices=sorted(SINKS), default="slow-observer")
    parser.add_argument("--shutdown-s", type=float, default=2.0)
    args = parser.parse_args()
    # Warnings go to stdout by default; at shutdown every abandoned observer event logs one.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    result = run(args.events, args.sink, args.shutdown_s)
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)  # worker threads still sleeping in the slow observer need not be waited for


if __name__ == "__main__":
    main()
