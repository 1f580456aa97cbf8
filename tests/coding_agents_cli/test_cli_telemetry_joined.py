"""The CLIs' own OpenTelemetry joined into the session's trace by ``otelhooks serve``.

Codex (``[otel] trace_exporter`` in ``config.toml``) and Gemini CLI (``telemetry`` settings with
an OTLP endpoint) export their spans to a real ``otelhooks serve`` in the same loopback-only
namespace, while the hooks ``install`` wrote trace the session through the command bridge. The
CLI's spans that name the session come out of serve in the session's trace, the trace of the
bridge's ``execute_tool`` span; with the bridge's spans sent to serve as well, Codex's shell span
and that span are linked (its ``call_id`` is the hook's tool use id), whichever reaches serve
first: the one-process bridge exports before it answers, the fast client's daemon in batches.
With serve's web view on, the same spans are in the run it lists (``GET /v1/ui/traces/{id}``).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from otelhooks.integrations.claude_code import session_trace_id
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    SERVE_TOKEN,
    SERVE_URL,
    WebView,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

STEPS = [("call_hi", "echo hi")]
# Gemini CLI's telemetry settings: OTLP over HTTP to serve
_GEMINI_TELEMETRY = {
    "enabled": True,
    "target": "local",
    "otlpEndpoint": SERVE_URL,
    "otlpProtocol": "http",
    "logPrompts": False,
}


def _spans(path: Path) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines() if path.exists() else ():
        for rs in json.loads(line).get("resourceSpans") or ():
            service = {
                kv["key"]: next(iter(kv["value"].values()))
                for kv in (rs.get("resource") or {}).get("attributes") or ()
            }.get("service.name")
            for ss in rs.get("scopeSpans") or ():
                spans.extend({**s, "service": service} for s in ss.get("spans") or ())
    return spans


def _attr(span: dict[str, Any], key: str) -> Any:
    for kv in span.get("attributes") or ():
        if kv["key"] == key:
            value = kv["value"]
            if "arrayValue" in value:
                return [next(iter(v.values())) for v in value["arrayValue"].get("values") or ()]
            return next(iter(value.values()))
    return None


def _install(dialect: str, project: Path, tmp_path: Path) -> Path:
    hooks = project / f".{dialect}" / "otelhooks.yaml"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text("hooks: []\n")
    # the bridge's spans go to serve too (its export file beside the hooks): serve links the
    # CLI's tool span to the hook's execute_tool span by the tool use id
    (hooks.parent / "otelhooks.env").write_text(
        f"OTEL_EXPORTER_OTLP_ENDPOINT={SERVE_URL}\n"
        f"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer {SERVE_TOKEN}\n"
    )
    traces = tmp_path / "bridge.jsonl"
    install_agent(dialect, project=project, hooks_file=hooks, traces_out=str(traces))
    return traces


def _one_process_hooks(project: Path, tmp_path: Path) -> Path:
    """Codex hooks running the one-process bridge (``otelhooks codex``): each span is exported
    before the hook answers, so the bridge's ``execute_tool`` span reaches serve before Codex
    exports its own at exit (the fast client's daemon batches its export)."""
    _install("codex", project, tmp_path)  # the hooks file and its export file
    traces = tmp_path / "bridge.jsonl"
    hooks = project / ".codex" / "otelhooks.yaml"
    bridge = [sys.executable, "-m", "otelhooks", "codex", "--hooks", str(hooks)]
    state = str(tmp_path / "state.sqlite3")
    command = shlex.join([*bridge, "--traces-out", str(traces), "--state", state])
    handler = {"type": "command", "command": command, "timeout": 30}
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    groups = {e: [{"matcher": "*", "hooks": [handler]}] for e in events}
    (project / ".codex" / "hooks.json").write_text(json.dumps({"hooks": groups}))
    return traces


def _bridge_env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }


def _assert_joined(bridge: Path, served: Path, service: str) -> list[dict[str, Any]]:
    (tool,) = [s for s in _spans(bridge) if s["name"].startswith("execute_tool")]
    session = str(_attr(tool, "gen_ai.conversation.id"))
    trace = format(session_trace_id(session), "032x")
    assert tool["traceId"] == trace
    own = [s for s in _spans(served) if s["service"] == service]
    joined = [s for s in own if s["traceId"] == trace]
    assert joined, f"no {service} span in the session's trace: {[s['name'] for s in own][:20]}"
    return joined


def _codex_exporting_to_serve(home: Path, project: Path) -> None:
    codex_home = codex_config(home, trusted=project)
    exporter = (
        f'{{ otlp-http = {{ endpoint = "{SERVE_URL}/v1/traces", protocol = "json", '
        f'headers = {{ authorization = "Bearer {SERVE_TOKEN}" }} }} }}'
    )
    config = codex_home / "config.toml"
    otel = f'[otel]\nenvironment = "test"\ntrace_exporter = {exporter}\n\n'
    config.write_text(config.read_text().replace("[analytics]", f"{otel}[analytics]"))


def test_codex_spans_join_the_sessions_trace_and_link_the_tool_span(tmp_path: Path) -> None:
    need_cli(CODEX)
    project = tmp_path / "project"
    project.mkdir()
    bridge = _one_process_hooks(project, tmp_path)
    home = tmp_path / "home"
    _codex_exporting_to_serve(home, project)
    served = tmp_path / "served.jsonl"
    run = run_codex(project, home, STEPS, extra_env=_bridge_env(tmp_path), serve_traces=served)
    assert run.returncode == 0, skip_reason(run)
    joined = _assert_joined(bridge, served, "codex_exec")
    (tool,) = [s for s in _spans(bridge) if s["name"].startswith("execute_tool")]
    linked = [s for s in joined if _attr(s, "otelhooks.hook.span_id") == tool["spanId"]]
    assert linked, [s["name"] for s in joined if _attr(s, "call_id")]
    assert all(_attr(s, "codex.trace_id") for s in joined)


def _assert_linked_in_either_order(
    served: Path, joined: list[dict[str, Any]], tool: dict[str, Any]
) -> None:
    """The daemon's bridge span and Codex's tool span are linked once, by whichever came second:
    Codex's span (bridge first) or the bridge's."""
    spans = _spans(served)
    ids = [(s["traceId"], s["spanId"]) for s in spans]
    assert len(ids) == len(set(ids)), "a span exported more than once"
    (received,) = [s for s in spans if s["spanId"] == tool["spanId"]]
    codex_tools = {s["spanId"] for s in joined if _attr(s, "call_id") == "call_hi"}
    assert codex_tools, [s["name"] for s in joined]
    hook_linked = {
        s["spanId"] for s in joined if _attr(s, "otelhooks.hook.span_id") == tool["spanId"]
    }
    agent_linked = set(_attr(received, "otelhooks.agent.span_ids") or ())
    assert hook_linked | agent_linked == codex_tools
    assert not hook_linked & agent_linked
    links = {link["spanId"] for link in received.get("links") or ()}
    assert links == agent_linked


def _web_spans(dump: Path, trace: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and spans of ``trace`` as serve's web view showed them."""
    found = [t for t in json.loads(dump.read_text()) if t["summary"]["trace_id"] == trace]
    assert found, "the session's trace is not in the web view"
    return found[0]["summary"], found[0]["spans"]


def test_codex_daemon_spans_link_in_either_order_and_show_in_serves_web_view(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """One real Codex CLI run whose hooks run on the daemon: its bridge span and Codex's tool
    span are linked in either order, and serve's web view shows both."""
    need_cli(CODEX)
    project = tmp_path / "project"
    project.mkdir()
    bridge = _install("codex", project, tmp_path)
    home = tmp_path / "home"
    _codex_exporting_to_serve(home, project)
    sockets = runtime_dir  # short enough for a socket's path
    env = {**_bridge_env(tmp_path), "XDG_RUNTIME_DIR": str(sockets)}
    served, dump = tmp_path / "served.jsonl", tmp_path / "web.json"
    # the view is read once the session's trace holds Codex's spans, its tool span, the
    # bridge's execute_tool span and the link between them (whichever side carries it)
    wait_for = [
        ["codex.trace_id"],
        ["call_id"],
        ["gen_ai.tool.call.id"],
        ["otelhooks.hook.span_id", "otelhooks.agent.span_ids"],
    ]
    run = run_codex(
        project,
        home,
        STEPS,
        extra_env=env,
        serve_traces=served,
        settle_locks=sockets,
        web_view=WebView(dump, wait_for),
    )
    assert run.returncode == 0, skip_reason(run)
    assert list(sockets.glob("*.sock.lock")), "the hooks did not run on a daemon"
    joined = _assert_joined(bridge, served, "codex_exec")
    (tool,) = [s for s in _spans(bridge) if s["name"].startswith("execute_tool")]
    _assert_linked_in_either_order(served, joined, tool)
    summary, spans = _web_spans(dump, tool["traceId"])
    assert summary["agent"] == "codex"
    assert summary["tools"] == ["Bash"]
    shown = {s["s"]: s for s in spans}
    assert tool["spanId"] in shown  # the bridge's span, and Codex's own beside it
    codex = [s for s in spans if "codex.trace_id" in s["a"]]
    assert codex
    assert {s["s"] for s in codex} <= {s["spanId"] for s in joined}
    codex_tools = {s["spanId"] for s in joined if _attr(s, "call_id") == "call_hi"}
    linked = {s["s"] for s in codex if s["a"].get("otelhooks.hook.span_id") == tool["spanId"]}
    linked |= set(shown[tool["spanId"]]["a"].get("otelhooks.agent.span_ids") or ())
    assert linked
    assert linked <= codex_tools


def test_gemini_spans_join_the_sessions_trace_and_show_in_serves_web_view(tmp_path: Path) -> None:
    """One real Gemini CLI run: its spans join the session's trace in serve, and the web view
    shows them beside the bridge's."""
    need_cli(GEMINI)
    project = tmp_path / "project"
    project.mkdir()
    bridge = _install("gemini", project, tmp_path)
    served, dump = tmp_path / "served.jsonl", tmp_path / "web.json"
    run = run_gemini(
        project,
        tmp_path / "home",
        STEPS,
        extra_env={
            **_bridge_env(tmp_path),
            "GEMINI_TELEMETRY_ENABLED": "true",
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {SERVE_TOKEN}",
        },
        settings={"telemetry": _GEMINI_TELEMETRY},
        serve_traces=served,
        web_view=WebView(dump, [["gemini_cli.trace_id"], ["gen_ai.tool.call.id"]]),
    )
    assert run.returncode == 0, skip_reason(run)
    joined = _assert_joined(bridge, served, "gemini-cli")
    assert {"llm_call", "tool_call"} <= {s["name"] for s in joined}
    assert all(_attr(s, "gemini_cli.trace_id") for s in joined)
    (tool,) = [s for s in _spans(bridge) if s["name"].startswith("execute_tool")]
    summary, spans = _web_spans(dump, tool["traceId"])
    assert summary["agent"] == "gemini-cli"
    assert tool["spanId"] in {s["s"] for s in spans}
    gemini = [s for s in spans if "gemini_cli.trace_id" in s["a"]]
    assert gemini
    assert {s["s"] for s in gemini} <= {s["spanId"] for s in joined}
