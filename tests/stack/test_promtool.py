"""The Prometheus side checked by the real promtool (Debian's ``prometheus`` package)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from otelhooks import EVENTS
from tests._realparts import promtool_binary, require
from tests.stack._stack import (
    PROMETHEUS_CONFIG,
    RULE_FILES,
    RULE_TEST_FILES,
    STACK_DOC,
    alert_rules,
    dashboard_expressions,
    load_yaml,
    rules,
)


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    binary = promtool_binary()
    require("promtool", binary is not None)
    assert binary is not None
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def test_prometheus_config_passes_promtool_check_config_with_its_rules(tmp_path: Path) -> None:
    # The config names its rules by their path in the container; point it at the repository's.
    config = load_yaml(PROMETHEUS_CONFIG)
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]
    config["rule_files"] = [str(path) for path in RULE_FILES]
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(config))
    proc = promtool("check", "config", str(local))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(rules())} rules found" in proc.stdout


def test_rule_files_pass_promtool_check_rules() -> None:
    assert RULE_FILES
    proc = promtool("check", "rules", *map(str, RULE_FILES))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rule_unit_tests_pass_promtool_test_rules() -> None:
    assert RULE_TEST_FILES
    proc = promtool("test", "rules", *map(str, RULE_TEST_FILES))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_alert_has_a_unit_test_where_it_fires_and_one_where_it_stays_silent() -> None:
    fires: set[str] = set()
    silent: set[str] = set()
    for path in RULE_TEST_FILES:
        for case in load_yaml(path)["tests"]:
            for check in case.get("alert_rule_test", ()):
                (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - fires == set(), "alerts never shown firing"
    assert names - silent == set(), "alerts never shown silent"


def test_every_alert_has_summary_description_runbook_and_severity() -> None:
    for rule in alert_rules():
        annotations = rule.get("annotations", {})
        for key in ("summary", "description", "runbook"):
            assert annotations.get(key, "").strip(), f"{rule['alert']}: no {key}"
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert annotations["runbook"].startswith("docs/stack.md#" + rule["alert"].lower())


def test_every_runbook_anchor_is_a_heading_of_the_stack_docs() -> None:
    # GitHub's anchor of a heading: lower case, spaces to "-", punctuation dropped.
    headings = re.findall(r"^#+ (.+)$", STACK_DOC.read_text(), flags=re.MULTILINE)
    anchors = {re.sub(r"[^a-z0-9 _-]", "", h.lower()).replace(" ", "-") for h in headings}
    for rule in alert_rules():
        anchor = re.match(r"docs/stack\.md#([\w-]+)", rule["annotations"]["runbook"])
        assert anchor, rule["alert"]
        assert anchor.group(1) in anchors, rule["alert"]


def test_control_hook_rules_cover_exactly_the_intercept_events() -> None:
    intercept = sorted(name for name, spec in EVENTS.items() if spec.intercept)
    pattern = "|".join(intercept)
    control = [r for r in rules() if "control_hook" in r.get("record", "")]
    assert control
    for rule in control:
        assert rule["expr"].count(f'otelhooks_hook_event=~"{pattern}"') == 3, rule["record"]


def test_every_dashboard_expression_parses(tmp_path: Path) -> None:
    # promtool 2.42 has no `promql` command: a recording rule's expression is parsed like any
    # query, so every expression becomes one (Grafana variables substituted).
    expressions = dashboard_expressions()
    assert expressions
    rule_file = tmp_path / "dashboards.yml"
    records = [
        {"record": f"dashboard:expr_{i}", "expr": e.promql} for i, e in enumerate(expressions)
    ]
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "parse", "rules": records}]}))
    proc = promtool("check", "rules", str(rule_file))
    index = "\n".join(f"expr_{i}: {e.where}" for i, e in enumerate(expressions))
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{index}"
    assert f"SUCCESS: {len(expressions)} rules found" in proc.stdout
