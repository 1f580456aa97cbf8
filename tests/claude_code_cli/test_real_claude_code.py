"""The real Claude Code CLI against otelhooks: the command bridge and HTTP hooks into ``serve``.

Each session asks (through a scripted Messages API on 127.0.0.1) for ``rm -rf victim`` and then
for a harmless ``touch``. A ``no-rm`` command hook denies the first: the Bash tool never runs
(``victim/`` survives), the second runs (its file exists). The hooks are written by
``otelhooks claude-code install`` itself, so Claude Code accepting that file is tested too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelhooks._eventlog._otlp import decode_traces
from otelhooks.integrations.claude_code import install, session_trace_id
from tests._realparts import require, serve_url
from tests._webhook_server import Reply, WebhookServer, webhook_server
from tests.claude_code_cli._messages_api import (
    CLAUDE,
    MessagesApi,
    ToolStep,
    claude_p,
    serve_messages_api,
)
from tests.coding_agents_cli._runs import CLI_TEST_S
from tests.reliability._serve_proc import INGEST, ServeProc

pytestmark = pytest.mark.timeout(CLI_TEST_S)

HERE = Path(__file__).parent
REPO = HERE.parent.parent
TOKEN = "t0ken-claude-native"

HOOKS = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
  - id: tool-audit
    type: PostToolUse
    webhook: {{url: "{webhook}/tools"}}
  - id: llm-audit
    type: llm_output
    webhook: {{url: "{webhook}/llm"}}
"""


@pytest.fixture(scope="module")
def claude() -> Path:
    require("the Claude Code CLI (npm ci --prefix tests/claude_code_cli)", CLAUDE.exists())
    return CLAUDE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / "victim").mkdir()
    (root / "victim" / "keep.txt").write_text("precious")
    return root


def _steps() -> list[ToolStep]:
    return [
        ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim", "description": "clean"}),
        ToolStep("toolu_ok", "Bash", {"command": "touch harmless.txt", "description": "touch"}),
    ]


def _run_claude(
    project: Path,
    api_url: str,
    home: Path,
    extra: dict[str, str],
    *,
    timeout_s: float = 40,
) -> dict[str, Any]:
    python_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{python_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": str(home),
        **extra,
    }
    options = ["--output-format", "json"]
    result = claude_p(api_url, project, env, options=options, timeout_s=timeout_s)
    assert result.returncode == 0, result.stderr[-2000:]
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def _tool_results(api: MessagesApi) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for body in api.requests:
        for message in body.get("messages") or ():
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
    return results


def _assert_deny_and_allow(project: Path, api: MessagesApi) -> None:
    # The deny: Bash never ran (its side effect is absent) and Claude was told why.
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    results = _tool_results(api)
    assert results["toolu_rm"]["is_error"] is True
    assert "rm -rf is not allowed here" in str(results["toolu_rm"]["content"])
    # The allowed call ran.
    assert (project / "harmless.txt").exists()
    assert results["toolu_ok"].get("is_error") is False


def _tool_webhooks(server: WebhookServer) -> list[dict[str, Any]]:
    bodies = [r.json() for r in server.wait_for("/tools", 1)]
    return [b.get("data", b) if isinstance(b, dict) else b for b in bodies]


def test_command_bridge_denies_rm_and_runs_the_harmless_call(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "traces.jsonl"
    install(project / ".claude" / "settings.json")  # the command form
    extra = {
        "OTELHOOKS_TRACES_OUT": str(traces),
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",  # the bridge daemon leaves soon after the test
    }
    with webhook_server() as hooks_server:
        (project / ".claude" / "otelhooks.yaml").write_text(HOOKS.format(webhook=hooks_server.url))
        api = MessagesApi(_steps())
        with serve_messages_api(api) as url:
            out = _run_claude(project, url, tmp_path / "home", extra)
        _assert_deny_and_allow(project, api)
        webhook = hooks_server.wait_for("/tools", 1)
        assert webhook, "the PostToolUse webhook was not delivered"
    session = out["session_id"]
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    tools = [s for s in _flat_json_spans(spans) if s["name"] == "execute_tool Bash"]
    trace = format(session_trace_id(session), "032x")
    assert {s["traceId"] for s in tools} == {trace}
    outcomes = sorted(_attr(s, "otelhooks.tool.outcome") for s in tools)
    assert outcomes == ["denied", "success"]


def _flat_json_spans(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for line in lines:
        for rs in line.get("resourceSpans") or ():
            for ss in rs.get("scopeSpans") or ():
                spans.extend(ss.get("spans") or ())
    return spans


def _attr(span: dict[str, Any], key: str) -> Any:
    for kv in span.get("attributes") or ():
        if kv["key"] == key:
            return next(iter(kv["value"].values()))
    return None


@pytest.fixture
def otelhooks_serve(project: Path, tmp_path: Path) -> Iterator[tuple[str, WebhookServer, Path]]:
    """A real ``otelhooks serve`` process exporting its spans over OTLP to a capture server."""
    with webhook_server() as sink:
        hooks_file = project / ".claude" / "otelhooks.yaml"
        hooks_file.write_text(HOOKS.format(webhook=sink.url))
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTELHOOKS_ADMIN_TOKEN": TOKEN,
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "otelhooks", "serve", "--hooks", str(hooks_file)),
                *("--port", "0", "--traces-out", str(tmp_path / "serve-traces.jsonl")),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield serve_url(proc)[0], sink, hooks_file
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(10)


def test_http_hooks_into_serve_deny_allow_and_join_claude_telemetry(
    claude: Path, project: Path, tmp_path: Path, otelhooks_serve: tuple[str, WebhookServer, Path]
) -> None:
    url, sink, _ = otelhooks_serve
    change = install(project / ".claude" / "settings.json", http=url)
    assert change.warnings  # the http guard fails open when the server is down, and says so
    api = MessagesApi(_steps())
    telemetry = {
        "OTELHOOKS_INGEST_TOKEN": TOKEN,
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {TOKEN}",
    }
    with serve_messages_api(api) as api_url:
        out = _run_claude(project, api_url, tmp_path / "home", telemetry)
    _assert_deny_and_allow(project, api)
    session = out["session_id"]
    trace = session_trace_id(session)

    # The event log holds the hook decisions of this session.
    events = _get_events(url)
    records = [e for e in events if e["session"] == session]
    assert sorted((r["tool"], r["success"]) for r in records)[:2] == [
        ("Bash", False),
        ("Bash", True),
    ]
    assert any(r["detail"] == "denied by no-rm" for r in records)

    # A webhook at a real local server: the PostToolUse observer of the allowed call.
    assert sink.wait_for("/tools", 1)

    # Claude Code's api_request log events reached the observer hooks, in the session's trace.
    llm = [json.dumps(r.json()) for r in sink.wait_for("/llm", 3)]
    mine = [text for text in llm if session in text]
    assert len(mine) >= 3  # one per model request of the scripted conversation
    assert all(f"{trace:032x}" in text and "costUsd" in text for text in mine)

    # One trace per session: the hook spans and Claude Code's own spans, joined.
    spans = _exported_spans(sink, lambda s: s.name == "claude_code.interaction")
    ours = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    in_trace = [s for s in spans if s.context.trace_id == trace]
    names = {s.name for s in in_trace}
    assert {"execute_tool Bash", "invoke_agent claude-code", "claude_code.tool"} <= names
    assert ours
    hook_tool_spans = {s.context.span_id for s in in_trace if s.name == "execute_tool Bash"}
    claude_tools = [s for s in in_trace if s.name == "claude_code.tool"]
    assert len(claude_tools) == 2
    for span in claude_tools:
        linked = {link.context.span_id for link in span.links}
        assert linked & hook_tool_spans, "Claude Code's tool span is not linked to the hook span"
        assert span.attributes is not None
        assert "claude_code.trace_id" in span.attributes

    # The same, as the tree `otelhooks claude-code tree` prints from serve's --traces-out.
    tree = _tree(tmp_path / "serve-traces.jsonl", session)
    assert f"trace {trace:032x}" in tree
    assert "execute_tool Bash" in tree
    assert "DENIED by no-rm" in tree
    assert "claude_code.tool" in tree
    assert "link -> hook span" in tree


def _tree(path: Path, session: str) -> str:
    deadline = time.monotonic() + 30
    while True:  # serve writes the joined spans in batches (every 0.5 s)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "otelhooks",
                "claude-code",
                "tree",
                str(path),
                "--session",
                session,
            ],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=False,
        )
        if "link -> hook span" in result.stdout or time.monotonic() > deadline:
            return result.stdout
        time.sleep(0.3)


def _get_events(url: str) -> list[dict[str, Any]]:
    import httpx

    deadline = time.monotonic() + 30
    while True:
        response = httpx.get(
            f"{url}/v1/events",
            params={"mode": "drain", "since": 0},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        response.raise_for_status()
        events: list[dict[str, Any]] = response.json()["events"]
        if len(events) >= 2 or time.monotonic() > deadline:
            return events
        time.sleep(0.1)


def _exported_spans(sink: WebhookServer, done: Any) -> list[Any]:
    deadline = time.monotonic() + 30
    while True:
        spans = []
        for request in sink.requests("/v1/traces"):
            decoded, _ = decode_traces(request.body, "application/x-protobuf")
            spans.extend(decoded)
        if any(done(s) for s in spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


# Hooks as a user writes them for Claude Code, run by otelhooks: each prints Claude Code's own
# JSON answer (its hooks reference, "PostToolUse decision control", "UserPromptSubmit decision
# control", "Stop decision control"); the bridge must pass every answer on.
_REDACT = (
    "import json, sys; e = json.load(sys.stdin); r = dict(e['tool_response']); "
    "r['stdout'] = r['stdout'].replace('S-42', '[redacted]'); "
    "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', "
    "'updatedToolOutput': r, 'additionalContext': 'CTX-TOOL-17'}}))"
)
_STOP_ONCE = (
    "import json, sys; e = json.load(sys.stdin); "
    "print('' if e.get('stop_hook_active') else "
    "json.dumps({'decision': 'block', 'reason': 'STOP-REASON-53: run the tests first'}))"
)
_CONTEXT = (
    "import json, sys; sys.stdin.read(); print(json.dumps({'hookSpecificOutput': "
    "{'hookEventName': 'UserPromptSubmit', 'additionalContext': 'CTX-PROMPT-31'}}))"
)
ANSWERS = """\
hooks:
  - id: redact
    type: PostToolUse
    matcher: Bash
    command: [{python}, -c, {redact}]
  - id: prompt-context
    type: UserPromptSubmit
    command: [{python}, -c, {context}]
  - id: stop-once
    type: Stop
    command: [{python}, -c, {stop}]
"""


def test_command_bridge_passes_on_redaction_context_and_a_stop_block(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    """What the scripted model API received: the secret the PostToolUse hook redacted never
    arrives, the UserPromptSubmit and PostToolUse contexts do, and so does the Stop reason."""
    install(project / ".claude" / "settings.json")
    (project / ".claude" / "otelhooks.yaml").write_text(
        ANSWERS.format(
            python=json.dumps(sys.executable),
            redact=json.dumps(_REDACT),
            context=json.dumps(_CONTEXT),
            stop=json.dumps(_STOP_ONCE),
        )
    )
    extra = {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
    }
    # the secret is computed by the shell: the command line the model sent does not hold it
    api = MessagesApi([ToolStep("toolu_echo", "Bash", {"command": "echo S-$((6*7))"})])
    with serve_messages_api(api) as url:
        _run_claude(project, url, tmp_path / "home", extra)
    sent = json.dumps(api.requests)
    result = _tool_results(api)["toolu_echo"]
    assert "[redacted]" in json.dumps(result)
    assert "S-42" not in sent
    assert "CTX-TOOL-17" in sent
    assert "CTX-PROMPT-31" in sent
    # the Stop block kept Claude working: its reason is in a request after the first end
    assert "STOP-REASON-53" in json.dumps(api.requests[-1])


# HTTP hooks into a serve whose PreToolUse went elsewhere (another instance, or this one before a
# restart without a store): the PostToolUse redaction still keeps the secret from the model (it
# was answered 409, a non-blocking error for Claude Code, and the model read the secret).
def test_a_redaction_reaches_claude_code_when_serve_never_saw_the_tool_start(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    hooks = project / ".claude" / "otelhooks.yaml"
    hooks.write_text(
        ANSWERS.format(
            python=json.dumps(sys.executable),
            redact=json.dumps(_REDACT),
            context=json.dumps("print()"),
            stop=json.dumps("print()"),
        )
    )
    serve = ServeProc(tmp_path, "--hooks", str(hooks))
    try:
        settings = project / ".claude" / "settings.json"
        install(settings, http=serve.url)
        written = json.loads(settings.read_text())
        del written["hooks"]["PreToolUse"]  # the start goes elsewhere: this serve never sees it
        settings.write_text(json.dumps(written))
        api = MessagesApi([ToolStep("toolu_echo", "Bash", {"command": "echo S-$((6*7))"})])
        with serve_messages_api(api) as url:
            _run_claude(project, url, tmp_path / "home", {"OTELHOOKS_INGEST_TOKEN": INGEST})
    finally:
        serve.stop()
    assert "[redacted]" in json.dumps(_tool_results(api)["toolu_echo"])
    assert "S-42" not in json.dumps(api.requests)


# The deny matrix's Claude Code rows with the real CLI: each way to deny guards one Bash call of
# its own (`touch victim-<way>`), all in one session; none of the files may exist afterwards, and
# what the scripted API received says each call was denied with its reason.
_MATRIX_SCRIPT = """
from otelhooks import Block

def _mine(event, way):
    return f"victim-{way}" in str(event.args.get("command", ""))

def block(event):
    return Block("stopped by python-block") if _mine(event, "python-block") else None

def deny(event):
    if _mine(event, "python-deny"):
        event.deny("stopped by python-deny")

def kernel(event):
    return None if _mine(event, "kernel-none") else event
"""


def _matrix_command(way: str, printed: str, code: int) -> str:
    test = f"grep -q 'victim-{way}' || exit 0"
    return json.dumps(f"{test}; printf '%s' '{printed}'; echo 'stopped by {way}' >&2; exit {code}")


def _deny_json(way: str) -> str:
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": f"stopped by {way}",
            }
        }
    )


def _matrix_hooks(url: str, ways: list[str]) -> str:
    lines = ["hooks:"]
    scripts = {"python-block": "block", "python-deny": "deny", "kernel-none": "kernel"}
    for way in ways:
        if way in scripts:
            extra = ", intercept: true" if way == "kernel-none" else ""
            lines.append(
                f"  - {{id: {way}, type: before_tool_call, script: hooks.py:{scripts[way]}{extra}}}"
            )
        elif way == "lobehub-webhook":
            lines.append(
                f"  - {{id: {way}, type: beforeToolCall, "
                f"webhook: {{url: '{url}/control', responseHandling: toolCall}}}}"
            )
        else:
            printed, code = {
                "command-exit2": ("", 2),
                "deny-json-exit0": (_deny_json(way), 0),
                "deny-json-exit1": (_deny_json(way), 1),
                "continue-false": (
                    json.dumps({"continue": False, "stopReason": f"stopped by {way}"}),
                    0,
                ),
            }[way]
            command = _matrix_command(way, printed, code)
            lines.append(f"  - {{id: {way}, type: PreToolUse, command: {command}}}")
    return "\n".join(lines) + "\n"


def _control(received: Any) -> Reply:
    if "victim-lobehub-webhook" in received.body.decode():
        return Reply.json({"decision": "deny", "reason": "stopped by lobehub-webhook"})
    return Reply.json({"decision": "allow"})


@pytest.mark.timeout(240)  # nine guarded calls in one session, each a bridge process or more
def test_every_way_to_deny_stops_the_real_claude_code(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    from otelhooks import ToolCallEvent

    ways = [
        "python-block",
        "kernel-none",
        "lobehub-webhook",
        "command-exit2",
        "deny-json-exit0",
        "deny-json-exit1",
        "http-hook",
    ]
    if hasattr(ToolCallEvent, "deny"):  # event.deny() comes with the "command" work
        ways.append("python-deny")
    ways.append("continue-false")  # last: it ends the session (no further call is asked for)
    settings = project / ".claude" / "settings.json"
    traces = tmp_path / "traces.jsonl"
    with webhook_server() as server:
        server.routes["/control"] = _control
        server.routes["/claude"] = Reply.json(json.loads(_deny_json("http-hook")))
        install(settings)
        # Claude Code's own http hook, run by otelhooks from a settings file of its own
        (project / ".claude" / "guard-settings.json").write_text(
            json.dumps(
                {
                    "hooks": {
                        "PreToolUse": [
                            {
                                "matcher": "Bash",
                                "hooks": [
                                    {
                                        "type": "http",
                                        "if": "Bash(touch victim-http-hook*)",
                                        "url": f"{server.url}/claude",
                                    }
                                ],
                            }
                        ]
                    }
                }
            )
        )
        (project / ".claude" / "hooks.py").write_text(_MATRIX_SCRIPT)
        (project / ".claude" / "otelhooks.yaml").write_text(
            _matrix_hooks(server.url, [w for w in ways if w != "http-hook"])
        )
        extra = {
            "OTELHOOKS_HOOKS": str(project / ".claude" / "guard-settings.json"),
            "OTELHOOKS_TRACES_OUT": str(traces),
            "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
            "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
        }
        steps = [
            ToolStep(f"toolu_{i}", "Bash", {"command": f"touch victim-{way}"})
            for i, way in enumerate(ways)
        ]
        api = MessagesApi(steps)
        with serve_messages_api(api) as url:
            _run_claude(project, url, tmp_path / "home", extra, timeout_s=200)
    results = _tool_results(api)
    ran = [way for way in ways if (project / f"victim-{way}").exists()]
    assert ran == []
    # continue: false stopped Claude Code: no tool result follows, and no further request
    assert f"toolu_{len(ways) - 1}" not in results
    for i, way in enumerate(ways[:-1]):
        # a kernel interceptor's None has no reason: the default one
        reason = "Blocked by beforeToolCall hook." if way == "kernel-none" else f"stopped by {way}"
        assert reason in json.dumps(results[f"toolu_{i}"]), way
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    decided = {
        _attr(s, "otelhooks.hook.decided_by")
        for s in _flat_json_spans(spans)
        if s["name"] == "execute_tool Bash"
    }
    assert {w for w in ways if w != "http-hook"} <= decided


_SLOW_REDACT = "import time, sys; sys.stdin.read(); time.sleep(4)"


def test_a_late_redaction_that_blocks_when_it_fails_withholds_the_output(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    """HTTP hooks into serve, whose PostToolUse redaction (``on_error: block``) does not answer
    within ``--hook-timeout``: the model reads the withheld note, never the secret (it was a
    500, a non-blocking error for Claude Code)."""
    hooks = project / ".claude" / "otelhooks.yaml"
    hooks.write_text(
        "hooks:\n  - id: redact\n    type: PostToolUse\n    matcher: Bash\n"
        f"    on_error: block\n    timeout: 20\n"
        f"    command: [{json.dumps(sys.executable)}, -c, {json.dumps(_SLOW_REDACT)}]\n"
    )
    serve = ServeProc(tmp_path, "--hooks", str(hooks), "--hook-timeout", "1")
    try:
        install(project / ".claude" / "settings.json", http=serve.url)
        api = MessagesApi([ToolStep("toolu_echo", "Bash", {"command": "echo S-$((6*7))"})])
        with serve_messages_api(api) as url:
            _run_claude(project, url, tmp_path / "home", {"OTELHOOKS_INGEST_TOKEN": INGEST})
    finally:
        serve.stop()
    assert "[tool output withheld" in json.dumps(_tool_results(api)["toolu_echo"])
    assert "S-42" not in json.dumps(api.requests)
