"""Grafana provisioning and dashboards checked against each other."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

from tests.stack._stack import ALL_VALUE, PROVISIONING, dashboards, load_yaml, panels


def provisioned() -> dict[str, str]:
    """Datasource uid -> type, from grafana/provisioning/datasources."""
    found = {}
    for path in sorted((PROVISIONING / "datasources").glob("*.yml")):
        for datasource in load_yaml(path)["datasources"]:
            found[datasource["uid"]] = datasource["type"]
    return found


def datasource_refs(node: Any) -> Iterator[dict[str, Any]]:
    """Every ``"datasource": {...}`` object anywhere in a dashboard."""
    if isinstance(node, dict):
        ref = node.get("datasource")
        if isinstance(ref, dict):
            yield ref
        for value in node.values():
            yield from datasource_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from datasource_refs(item)


def explore_panes(url: str) -> dict[str, Any]:
    """The ``panes`` JSON of a Grafana Explore URL (Grafana variables left as they are)."""
    parsed = urllib.parse.urlsplit(url)
    assert parsed.path == "/explore", url
    (panes,) = urllib.parse.parse_qs(parsed.query)["panes"]
    decoded: dict[str, Any] = json.loads(panes)
    return decoded


def all_links() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, dashboard in dashboards().items():
        for panel in panels(dashboard):
            for link in panel.get("fieldConfig", {}).get("defaults", {}).get("links", ()):
                yield f"{name}: {panel['title']}", link


def test_datasources_have_fixed_uids() -> None:
    assert provisioned() == {
        "prometheus": "prometheus",
        "jaeger": "jaeger",
        "alertmanager": "alertmanager",
    }


def test_dashboards_use_only_provisioned_datasources_by_uid() -> None:
    uids = provisioned()
    for name, dashboard in dashboards().items():
        refs = list(datasource_refs(dashboard))
        assert refs, name
        for ref in refs:
            assert ref.get("uid") in uids, f"{name}: {ref}"
            assert ref.get("type") == uids[ref["uid"]], f"{name}: {ref}"


def test_trace_links_open_explore_on_the_jaeger_datasource() -> None:
    uids = provisioned()
    links = list(all_links())
    assert len(links) >= 10
    for where, link in links:
        panes = explore_panes(link["url"])
        for pane in panes.values():
            assert uids[pane["datasource"]] == "jaeger", where
            for query in pane["queries"]:
                assert query["datasource"] == {"type": "jaeger", "uid": pane["datasource"]}
                assert query["queryType"] == "search", where
                assert query["service"] == "${__field.labels.service_name}", where


def test_dashboard_panels_and_uids_are_unique() -> None:
    seen = set()
    for name, dashboard in dashboards().items():
        assert dashboard["uid"] not in seen, name
        seen.add(dashboard["uid"])
        ids = [panel["id"] for panel in panels(dashboard)]
        assert len(ids) == len(set(ids)), name
        for panel in panels(dashboard):
            assert panel.get("title"), f"{name}: {panel.get('id')}"
            assert panel.get("targets"), f"{name}: {panel['title']}"


def test_dashboards_cover_the_issue_list() -> None:
    titles = {
        name: " | ".join(panel["title"].lower() for panel in panels(dashboard))
        for name, dashboard in dashboards().items()
    }
    for needed in (
        "runs by outcome",
        "error rate",
        "step latency p50 / p95 / p99",
        "tool latency p50 / p95 / p99",
        "token usage",
        "top tools",
        "denials and mocks",
        "compactions",
        "tokens saved",
        "human interventions",
    ):
        assert needed in titles["agent-overview.json"], needed
    for needed in ("invocations", "failures", "drops", "delivery latency by hook"):
        assert needed in titles["hooks.json"], needed


def test_variables_offer_all_as_the_value_the_tests_substitute() -> None:
    for name, dashboard in dashboards().items():
        variables = dashboard["templating"]["list"]
        assert variables, name
        for variable in variables:
            assert variable["includeAll"], name
            assert variable["allValue"] == ALL_VALUE, name
            assert variable["datasource"]["uid"] == "prometheus"
        used = {
            match
            for panel in panels(dashboard)
            for target in panel["targets"]
            for match in re.findall(r"\$(\w+)", target["expr"])
        }
        assert used - {"__rate_interval", "__range"} == {v["name"] for v in variables}, name


def test_alerting_routes_grafana_alerts_to_the_alertmanager() -> None:
    alerting = load_yaml(PROVISIONING / "alerting" / "otelhooks.yml")
    names = {point["name"] for point in alerting["contactPoints"]}
    for policy in alerting["policies"]:
        assert policy["receiver"] in names
    receivers = [r for point in alerting["contactPoints"] for r in point["receivers"]]
    assert {r["type"] for r in receivers} == {"prometheus-alertmanager"}


def test_dashboard_provider_loads_the_dashboards_read_only() -> None:
    (provider,) = load_yaml(PROVISIONING / "dashboards" / "otelhooks.yml")["providers"]
    assert provider["type"] == "file"
    assert provider["allowUiUpdates"] is False
