"""A real Prometheus, with the project's rules, scraping real ``otelhooks demo`` processes.

Two demos run side by side, each serving its metrics with ``--prometheus-port`` and lingering
until the test is done:

* ``A`` runs with the hooks in :mod:`tests.stack.stack_demo_hooks` (one fails, one times out,
  one control hook is slow), so the failure series the alerts watch exist; its traces file is
  what the panel links are checked against;
* ``B`` runs with a one-span export queue (``OTEL_BSP_MAX_QUEUE_SIZE=1``), so that spans are
  dropped and ``otelhooks_dropped_total`` exists.

Prometheus scrapes both every second and evaluates the rules every second. Then every
expression of every dashboard panel, dashboard variable and rule must return series carrying
the demo's service: a metric or label renamed in the code without the dashboards and rules
following fails here.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from otelhooks import read_otlp_json_lines
from otelhooks._metrics import (
    CLIENT_DURATION_BUCKETS_S,
    DURATION_BUCKETS_S,
    INVOKE_AGENT_BUCKETS_S,
)
from tests._realparts import PrometheusApi, prometheus_server, reserved_port
from tests.stack._stack import (
    RULE_FILES,
    Expression,
    as_signal,
    dashboard_expressions,
    rule_expressions,
    selectors,
    substitute,
    variable_queries,
)
from tests.stack.stack_demo_hooks import HOOKS_YAML

SERVICE = "otelhooks-demo"
STACK_DIR = Path(__file__).resolve().parent


@dataclass
class LiveStack:
    api: PrometheusApi
    at: float  # the instant every query is evaluated at
    spans: list[dict[str, Any]]  # demo A's spans, from its --traces-out file

    def query(self, promql: str) -> list[dict[str, Any]]:
        return self.api.query(promql, at=self.at)


def start_demo(
    workdir: Path, name: str, port: int, *args: str, **env: str
) -> subprocess.Popen[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    pythonpath = os.pathsep.join(filter(None, [str(STACK_DIR), clean.get("PYTHONPATH")]))
    with (workdir / f"{name}.out").open("wb") as out, (workdir / f"{name}.err").open("wb") as err:
        return subprocess.Popen(
            [
                sys.executable, "-m", "otelhooks", "demo", "--quiet",
                "--traces-out", str(workdir / f"{name}.jsonl"),
                "--prometheus-port", str(port),
                "--linger", "120",
                *args,
            ],
            stdout=out,
            stderr=err,
            env={**clean, "PYTHONPATH": pythonpath, **env},
        )  # fmt: skip


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


def epoch(rfc3339: str) -> float:
    # Prometheus writes nanoseconds; fromisoformat takes at most microseconds.
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", rfc3339).replace("Z", "+00:00")
    return datetime.fromisoformat(trimmed).timestamp()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveStack]:
    workdir = tmp_path_factory.mktemp("live-stack")
    (workdir / "hooks.yaml").write_text(HOOKS_YAML)
    with reserved_port() as port_a, reserved_port() as port_b:
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(path) for path in RULE_FILES],
            "scrape_configs": [
                {
                    "job_name": "otelhooks-demo",
                    "static_configs": [{"targets": [f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"]}],
                }
            ],
        }
        with prometheus_server(config, workdir) as api:
            demos = {
                "A": start_demo(workdir, "A", port_a, "--hooks", str(workdir / "hooks.yaml")),
                "B": start_demo(
                    workdir,
                    "B",
                    port_b,
                    OTEL_BSP_MAX_QUEUE_SIZE="1",
                    OTEL_BSP_MAX_EXPORT_BATCH_SIZE="1",
                ),
            }
            try:
                for name, proc in demos.items():

                    def serving(name: str = name, proc: subprocess.Popen[bytes] = proc) -> bool:
                        assert proc.poll() is None, (workdir / f"{name}.err").read_text()
                        return b"serving metrics on" in (workdir / f"{name}.err").read_bytes()

                    wait_for(f"demo {name} serving its metrics", serving)
                runs_done = time.time()

                def scraped_twice_since() -> bool:
                    # rate() needs two samples; Prometheus starts scraping new targets only after
                    # its discovery throttle (5 s), so count the scrapes since the runs ended.
                    window = int(time.time() - runs_done)
                    if window < 1:
                        return False
                    counts = api.query(f'count_over_time(up{{job="otelhooks-demo"}}[{window}s])')
                    up = api.query('up{job="otelhooks-demo"}')
                    return (
                        len(counts) == 2
                        and all(float(s["value"][1]) >= 2 for s in counts)
                        and all(s["value"][1] == "1" for s in up)
                    )

                wait_for("two scrapes of each demo after its run", scraped_twice_since)
                last_scrape = max(
                    float(s["value"][1]) for s in api.query('timestamp(up{job="otelhooks-demo"})')
                )
                wait_for(
                    "a rule evaluation after the last scrape",
                    lambda: all(
                        epoch(g["lastEvaluation"]) > last_scrape for g in api.rule_groups()
                    ),
                )
                yield LiveStack(api, time.time(), read_otlp_json_lines(workdir / "A.jsonl"))
            finally:
                for proc in demos.values():
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGINT)  # ends --linger early; the demo exits 0
                codes = {}
                for name, proc in demos.items():
                    try:
                        codes[name] = proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        codes[name] = proc.wait()
        assert codes == {"A": 0, "B": 0}, [
            (workdir / f"{n}.err").read_text()[-2000:] for n in codes
        ]


def by_clauses(expr: str) -> list[str]:
    return re.findall(r"\bby\s*\(([^)]*)\)", expr)


def assert_series_carry_the_service(expression: Expression, result: list[dict[str, Any]]) -> None:
    clauses = by_clauses(expression.expr)
    keeps_service = bool(clauses) and all("service_name" in clause for clause in clauses)
    for series in result:
        labels = series["metric"]
        if keeps_service or "service_name" in labels:
            assert labels.get("service_name") == SERVICE, f"{expression.where}: {labels}"


@pytest.mark.parametrize("expression", dashboard_expressions(), ids=lambda e: e.where)
def test_dashboard_expression_returns_series_of_the_demo(
    live: LiveStack, expression: Expression
) -> None:
    result = live.query(expression.promql)
    assert result, f"{expression.where}: no series for\n{expression.promql}"
    assert_series_carry_the_service(expression, result)


# serve's own metrics: `otelhooks demo` opens no store, so their series never exist here; their
# rules are proved by promtool's unit tests (prometheus/tests), the metric by tests/fleet
SERVE_ONLY = ("otelhooks_store_errors_total", "otelhooks:store_errors:")


def _of_the_demo(expressions: list[Expression]) -> list[Expression]:
    return [e for e in expressions if not any(name in e.promql for name in SERVE_ONLY)]


@pytest.mark.parametrize("expression", _of_the_demo(rule_expressions()), ids=lambda e: e.where)
def test_rule_expression_returns_series_of_the_demo(
    live: LiveStack, expression: Expression
) -> None:
    # An alert returns series only while it fires: its `bool` form returns them all.
    promql = as_signal(expression.promql)
    result = live.query(promql)
    assert result, f"{expression.where}: no series for\n{promql}"
    assert_series_carry_the_service(expression, result)


SELECTORS = sorted(
    {
        sel
        for e in _of_the_demo(dashboard_expressions() + rule_expressions())
        for sel in selectors(e.promql)
    }
)


@pytest.mark.parametrize("selector", SELECTORS)
def test_every_selector_of_dashboards_and_rules_matches_series(
    live: LiveStack, selector: str
) -> None:
    # Stricter than the expressions: `a or 0 * b` returns series even if `a` matches nothing.
    assert live.query(f"count({selector})"), selector


@pytest.mark.parametrize(
    ("where", "selector", "label"), variable_queries(), ids=[v[0] for v in variable_queries()]
)
def test_dashboard_variable_lists_values(
    live: LiveStack, where: str, selector: str, label: str
) -> None:
    result = live.query(f"count by ({label}) ({substitute(selector)})")
    values = {series["metric"].get(label, "") for series in result}
    assert values, where
    assert "" not in values, where
    if label == "service_name":
        assert values == {SERVICE}


def test_rules_evaluate_without_errors(live: LiveStack) -> None:
    evaluated = [rule for group in live.api.rule_groups() for rule in group["rules"]]
    assert len(evaluated) == len(rule_expressions())
    for rule in evaluated:
        assert rule["health"] == "ok", f"{rule['name']}: {rule.get('lastError')}"


def active_alerts(live: LiveStack) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for group in live.api.rule_groups():
        for rule in group["rules"]:
            if rule["type"] == "alerting":
                found[rule["name"]] = [alert["labels"] for alert in rule["alerts"]]
    return found


def test_the_demo_trips_the_alerts_it_should_each_with_its_service(live: LiveStack) -> None:
    alerts = active_alerts(live)
    assert {name for name, active in alerts.items() if active} == {
        "OtelhooksAgentErrorsRising",  # brittle-bot and flaky-agent fail
        "OtelhooksHookFailures",  # stack-test-fails, stack-test-hangs
        "OtelhooksTelemetryDropped",  # demo B's one-span queue
        "OtelhooksControlHookSlow",  # stack-test-slow-gate (pending: for 5m)
    }
    for labels in (labels for active in alerts.values() for labels in active):
        assert labels["service_name"] == SERVICE, labels

    def values(name: str, label: str) -> set[str]:
        return {labels[label] for labels in alerts[name]}

    assert values("OtelhooksAgentErrorsRising", "gen_ai_agent_name") == {
        "brittle-bot",
        "flaky-agent",
    }
    assert values("OtelhooksHookFailures", "otelhooks_hook_id") == {
        "stack-test-fails",
        "stack-test-hangs",
    }
    assert values("OtelhooksHookFailures", "otelhooks_outcome") == {"error", "timeout"}
    assert values("OtelhooksTelemetryDropped", "otelhooks_drop_source") == {"span_export"}
    assert values("OtelhooksControlHookSlow", "otelhooks_hook_id") == {"stack-test-slow-gate"}


def test_every_series_carries_the_service_name(live: LiveStack) -> None:
    named = live.query('count({__name__=~"(otelhooks|gen_ai)_.+"})')
    assert named
    assert float(named[0]["value"][1]) > 100
    assert live.query(f'{{__name__=~"(otelhooks|gen_ai)_.+", service_name!="{SERVICE}"}}') == []


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        # the GenAI conventions' boundaries for their metrics, otelhooks' own for the rest
        ("gen_ai_invoke_agent_duration_seconds", INVOKE_AGENT_BUCKETS_S),
        ("otelhooks_agent_step_duration_seconds", DURATION_BUCKETS_S),
        ("gen_ai_execute_tool_duration_seconds", CLIENT_DURATION_BUCKETS_S),
        ("gen_ai_client_operation_duration_seconds", CLIENT_DURATION_BUCKETS_S),
        ("otelhooks_hook_duration_seconds", DURATION_BUCKETS_S),
    ],
)
def test_duration_histograms_have_second_scale_buckets(
    live: LiveStack, metric: str, expected: tuple[float, ...]
) -> None:
    result = live.query(f"count by (le) ({metric}_bucket)")
    bounds = {float(series["metric"]["le"]) for series in result}
    assert bounds == {*map(float, expected), math.inf}


GO_DURATION = re.compile(r"\d+(\.\d+)?(ns|us|ms|s|m|h)")


def link_targets(link: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The Jaeger queries a link opens for a series with ``labels`` (Grafana's interpolation)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("__field.labels."):
            label = name.removeprefix("__field.labels.")
            assert label in labels, f"link uses label {label}, the series has {sorted(labels)}"
            return labels[label]
        return {"__value.raw": "0.5", "__from": "1700000000000", "__to": "1700003600000"}[name]

    url = re.sub(r"\$\{([^}]+)\}", value, link["url"])
    (panes,) = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["panes"]
    queries: list[dict[str, Any]] = [
        query for pane in json.loads(panes).values() for query in pane["queries"]
    ]
    return queries


def matching_spans(query: dict[str, Any], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [s for s in spans if s["resource"].get("service.name") == query["service"]]
    if query.get("operation"):
        found = [s for s in found if s["name"] == query["operation"]]
    if "error=true" in query.get("tags", ""):
        found = [s for s in found if s.get("status", {}).get("code") == 2]
    return found


LINKED = [e for e in dashboard_expressions() if e.links and e.where.endswith("[A]")]


@pytest.mark.parametrize("expression", LINKED, ids=lambda e: e.where)
def test_panel_links_open_traces_the_demo_made(live: LiveStack, expression: Expression) -> None:
    result = live.query(expression.promql)
    assert result
    for link in expression.links:
        reachable = []
        for series in result:
            for query in link_targets(link, series["metric"]):
                assert query["service"] == SERVICE
                if "minDuration" in query:
                    assert GO_DURATION.fullmatch(query["minDuration"]), query
                reachable += matching_spans(query, live.spans)
        assert reachable, f"{expression.where}: {link['title']} finds no span of the demo"
