"""Claude Code's ``PermissionRequest`` held by an ``approval:`` hook until a person answers, on
both roads: the HTTP route of ``otelhooks serve`` and the command bridge (one process, and the
daemon the hook client starts). The input is the documented one (the conformance fixture's
``PermissionRequest input``); the answer is PermissionRequest's own output,
``hookSpecificOutput.decision`` with ``behavior`` and ``updatedInput`` / ``message``; the answer
is a span event on the request's span, in the SDK's export and in the ``--traces-out`` file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import EventLogServer, serve
from otelhooks.integrations.claude_code import hook_client, install
from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge
from tests._webhook_server import webhook_server
from tests.integrations._daemon_procs import daemon_pid
from tests.web.conftest import approval_holder

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "conformance" / "claude_code" / "fixtures"
TOKEN = "perm-admin-t0ken-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SPAN = "agent_lifecycle before_human_intervention"


def _documented_input(session: str) -> dict[str, Any]:
    inputs = json.loads((FIXTURES / "hook_inputs.json").read_text())["inputs"]
    (doc,) = [i for i in inputs if i["section"] == "PermissionRequest input"]
    return {**doc["input"], "session_id": session}


def _hooks_file(path: Path, hook_id: str, *, url: str | None = None, timeout: float = 30) -> Path:
    approval: dict[str, Any] = {"timeout": timeout, "default": "deny", "reason": "asks a person"}
    if url is not None:
        approval["url"] = url
    hooks = {"hooks": [{"id": hook_id, "type": "PermissionRequest", "matcher": "Bash", **{}}]}
    hooks["hooks"][0]["approval"] = approval
    path.write_text(json.dumps(hooks))
    return path


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> None:
    # content capture on: the person sees the command and may edit it
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")


def _pending(api: httpx.Client, hook_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for item in api.get("/v1/approvals").json()["pending"]:
            if item["hook_id"] == hook_id:
                return dict(item)
        time.sleep(0.05)
    raise AssertionError(f"no approval of {hook_id} became pending")


def _while_pending(
    api: httpx.Client,
    hook_id: str,
    ask: Callable[[], Any],
    answer: dict[str, Any],
    after_s: float = 0.0,
) -> tuple[Any, dict[str, Any]]:
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(result=ask()))
    worker.start()
    item = _pending(api, hook_id)
    time.sleep(after_s)
    assert api.post(f"/v1/approvals/{item['id']}", json=answer).status_code == 200
    worker.join(60)
    assert not worker.is_alive()
    return out["result"], item


def _exported(exported: InMemorySpanExporter) -> Any:
    """The request's span, once serve's batch exported it (every 0.5 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        spans = [s for s in exported.get_finished_spans() if s.name == SPAN]
        if spans:
            (span,) = spans
            return span
        time.sleep(0.05)
    raise AssertionError(f"serve exported no {SPAN} span")


def _event_of(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (span,) = [s for s in spans if s["name"] == SPAN]
    (event,) = [e for e in span["events"] if e["name"] == name]
    return {a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}


def _otlp_spans(path: Path) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans.extend(ss["spans"])
    return spans


# -- the HTTP route -------------------------------------------------------------------------------


@pytest.fixture
def route_server(tmp_path: Path, capture: None) -> Iterator[tuple[EventLogServer, Any]]:
    exported = InMemorySpanExporter()
    hooks = _hooks_file(tmp_path / "hooks.json", "ask-permission")
    started = serve([hooks], token=TOKEN, span_exporters=[exported])
    try:
        yield started, exported
    finally:
        started.stop()


def _post_hook(url: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/hooks/claude-code", json=body, headers=AUTH, timeout=60)
    assert answer.status_code == 200, answer.text
    decided: dict[str, Any] = answer.json()
    return decided


def test_the_http_route_allows_a_permission_request_with_the_edited_command(
    route_server: tuple[EventLogServer, InMemorySpanExporter],
) -> None:
    server, exported = route_server
    with httpx.Client(base_url=server.url, headers=AUTH) as api:
        output, item = _while_pending(
            api,
            "ask-permission",
            lambda: _post_hook(server.url, _documented_input("s-route-allow")),
            {"decision": "allow", "by": "alice", "args": {"command": "npm run lint"}},
        )
    assert item["tool"] == "Bash"
    assert item["args"]["command"] == "rm -rf node_modules"  # what Claude Code asked about
    assert output["hookSpecificOutput"] == {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedInput": {"command": "npm run lint"}},
    }
    span = _exported(exported)
    (event,) = [e for e in span.events if e.name == "otelhooks.approve"]
    assert event.attributes is not None
    assert event.attributes["otelhooks.approval.answered_by"] == "alice"
    assert event.attributes["otelhooks.approval.args_edited"] is True


def test_the_http_route_denies_a_permission_request_with_the_persons_reason(
    route_server: tuple[EventLogServer, InMemorySpanExporter],
) -> None:
    server, exported = route_server
    with httpx.Client(base_url=server.url, headers=AUTH) as api:
        output, _ = _while_pending(
            api,
            "ask-permission",
            lambda: _post_hook(server.url, _documented_input("s-route-deny")),
            {"decision": "deny", "by": "bob", "reason": "keep node_modules"},
        )
    decision = output["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "keep node_modules" in decision["message"]
    assert "bob" in decision["message"]
    span = _exported(exported)
    (event,) = [e for e in span.events if e.name == "otelhooks.reject"]
    assert event.attributes is not None
    assert event.attributes["otelhooks.approval.reason"] == "keep node_modules"


def test_a_persons_edit_on_the_http_route_is_judged_by_the_pre_tool_use_guards(
    tmp_path: Path, capture: None
) -> None:
    # before: the guard judged the asked command at PreToolUse; the person's edit into
    # `rm -rf /` was answered as an allow with that updatedInput, which Claude Code runs
    hooks = _hooks_file(tmp_path / "hooks.json", "ask-edit")
    spec = json.loads(hooks.read_text())
    guard = "if grep -q 'rm -rf'; then echo 'no rm -rf' >&2; exit 2; fi"
    spec["hooks"].insert(
        0, {"id": "no-rm", "type": "PreToolUse", "matcher": "Bash", "command": guard}
    )
    hooks.write_text(json.dumps(spec))
    server = serve([hooks], token=TOKEN)
    asked = {**_documented_input("s-route-edit"), "tool_input": {"command": "ls node_modules"}}
    try:
        with httpx.Client(base_url=server.url, headers=AUTH) as api:
            denied, _ = _while_pending(
                api,
                "ask-edit",
                lambda: _post_hook(server.url, asked),
                {"decision": "allow", "by": "eve", "args": {"command": "rm -rf /"}},
            )
            # an edit the guard lets through is the allow the person gave
            allowed, _ = _while_pending(
                api,
                "ask-edit",
                lambda: _post_hook(server.url, {**asked, "session_id": "s-route-edit-2"}),
                {"decision": "allow", "by": "eve", "args": {"command": "ls -la node_modules"}},
            )
    finally:
        server.stop()
    assert denied["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "no rm -rf"}
    assert allowed["hookSpecificOutput"]["decision"] == {
        "behavior": "allow",
        "updatedInput": {"command": "ls -la node_modules"},
    }


# -- the command bridge ---------------------------------------------------------------------------


@pytest.fixture
def asking_server(capture: None) -> Iterator[EventLogServer]:
    started = serve(token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


def _bridge_env(project: Path, runtime_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "CLAUDE_PROJECT_DIR": str(project),
        "OTELHOOKS_CLAUDE_STATE": str(project / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "5",  # the daemon leaves soon after the test
        "OTELHOOKS_INGEST_TOKEN": TOKEN,
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }


def _run(argv: list[str], env: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        argv, input=json.dumps(body), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    output: dict[str, Any] = json.loads(done.stdout)
    return output


def test_the_command_bridge_waits_and_answers_a_deny_into_its_traces_file(
    asking_server: EventLogServer, tmp_path: Path, runtime_dir: Path
) -> None:
    hooks = _hooks_file(tmp_path / "hooks.json", "ask-bridge", url=asking_server.url)
    traces = tmp_path / "traces.jsonl"
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks)]
    argv += ["--traces-out", str(traces)]
    env = _bridge_env(tmp_path, runtime_dir)
    with httpx.Client(base_url=asking_server.url, headers=AUTH) as api:
        output, _ = _while_pending(
            api,
            "ask-bridge",
            lambda: _run(argv, env, _documented_input("s-bridge")),
            {"decision": "deny", "by": "carol", "reason": "not today"},
        )
    decision = output["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "not today" in decision["message"]
    event = _event_of(_otlp_spans(traces), "otelhooks.reject")
    assert event["otelhooks.approval.answered_by"] == "carol"
    assert event["otelhooks.approval.decision"] == "deny"


def test_the_bridge_daemon_waits_past_its_answer_deadline_for_an_approval(
    asking_server: EventLogServer, tmp_path: Path, runtime_dir: Path
) -> None:
    hooks = _hooks_file(tmp_path / "hooks.json", "ask-daemon", url=asking_server.url, timeout=6)
    env = {**_bridge_env(tmp_path, runtime_dir), "OTELHOOKS_CLAUDE_DAEMON_ANSWER_S": "1"}
    argv = [sys.executable, "-I", "-S", hook_client.__file__, "--hooks", str(hooks)]
    argv += ["--traces-out", str(tmp_path / "traces.jsonl")]
    start = {"session_id": "s-daemon", "hook_event_name": "SessionStart", "source": "startup"}
    subprocess.run(argv, input=json.dumps(start), env=env, text=True, timeout=30, check=True)
    daemon_pid(runtime_dir, timeout_s=90)  # a loaded machine takes seconds to start it
    with httpx.Client(base_url=asking_server.url, headers=AUTH) as api:
        # answered 2 s after it was asked: past the daemon's 1 s answer deadline
        output, _ = _while_pending(
            api,
            "ask-daemon",
            lambda: _run(argv, env, _documented_input("s-daemon")),
            {"decision": "allow", "by": "dan", "args": {"command": "ls node_modules"}},
            after_s=2.0,
        )
    assert output["hookSpecificOutput"]["decision"] == {
        "behavior": "allow",
        "updatedInput": {"command": "ls node_modules"},
    }


def test_install_gives_permission_request_more_time_than_its_approval(tmp_path: Path) -> None:
    hooks = tmp_path / ".claude" / "otelhooks.yaml"
    hooks.parent.mkdir()
    hooks.write_text(
        "hooks:\n  - id: ask\n    type: PermissionRequest\n    matcher: Bash\n"
        "    approval: {timeout: 200, default: deny}\n"
    )
    for name, http in (("settings.json", "http://127.0.0.1:4318"), ("settings.local.json", None)):
        settings = tmp_path / ".claude" / name
        install(settings, http=http)
        handler = json.loads(settings.read_text())["hooks"]["PermissionRequest"][0]["hooks"][0]
        assert handler["timeout"] > 200, (name, handler)
        assert "async" not in handler  # Claude Code waits for its answer


def test_a_persons_edited_allow_of_pretooluse_is_an_allow_with_updated_input(
    tmp_path: Path, capture: None
) -> None:
    hooks = tmp_path / "pre.yaml"
    hooks.write_text(
        "hooks:\n  - id: ask-pre\n    type: PreToolUse\n    matcher: Bash\n"
        "    approval: {timeout: 30, default: deny}\n"
    )
    server = serve([hooks], token=TOKEN)
    body = {
        "session_id": "s-pre",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf node_modules"},
        "tool_use_id": "toolu_pre",
    }
    try:
        with httpx.Client(base_url=server.url, headers=AUTH) as api:
            output, _ = _while_pending(
                api,
                "ask-pre",
                lambda: _post_hook(server.url, body),
                {"decision": "allow", "by": "erin", "args": {"command": "ls node_modules"}},
            )
    finally:
        server.stop()
    # a person approved: allow (not ask), with the arguments they edited
    assert output["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": "approved by erin",
        "updatedInput": {"command": "ls node_modules"},
    }


def test_an_approved_tool_use_span_ended_by_a_later_process_carries_the_approve_event(
    asking_server: EventLogServer, tmp_path: Path, runtime_dir: Path
) -> None:
    # PreToolUse and PostToolUse run in two bridge processes: the event waits in the state file
    hooks = tmp_path / "pre.json"
    hook = {
        "id": "ask-pre-bridge",
        "type": "PreToolUse",
        "matcher": "Bash",
        "approval": {"timeout": 30, "default": "deny", "url": asking_server.url},
    }
    hooks.write_text(json.dumps({"hooks": [hook]}))
    traces = tmp_path / "traces.jsonl"
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks)]
    argv += ["--traces-out", str(traces)]
    env = _bridge_env(tmp_path, runtime_dir)
    use = {
        "session_id": "s-two",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_two",
    }
    with httpx.Client(base_url=asking_server.url, headers=AUTH) as api:
        _while_pending(
            api,
            "ask-pre-bridge",
            lambda: _run(argv, env, {**use, "hook_event_name": "PreToolUse"}),
            {"decision": "allow", "by": "gus"},
        )
    written = _otlp_spans(traces) if traces.exists() else []
    assert not any(s["name"] == "execute_tool Bash" for s in written)  # the tool is still open
    post = {**use, "hook_event_name": "PostToolUse", "tool_response": "a b"}
    done = subprocess.run(argv, input=json.dumps(post), env=env, text=True, timeout=60)
    assert done.returncode == 0
    (span,) = [s for s in _otlp_spans(traces) if s["name"] == "execute_tool Bash"]
    (event,) = [e for e in span["events"] if e["name"] == "otelhooks.approve"]
    attrs = {a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}
    assert attrs["otelhooks.approval.answered_by"] == "gus"
    assert not any(a["key"].startswith("~") for a in span["attributes"])


def test_the_bridges_tool_span_sent_to_serve_is_the_one_record_of_its_approval(
    asking_server: EventLogServer, tmp_path: Path, runtime_dir: Path
) -> None:
    hooks = tmp_path / "pre.json"
    hook = {
        "id": "ask-pre-sent",
        "type": "PreToolUse",
        "matcher": "Bash",
        "approval": {"timeout": 30, "default": "deny", "url": asking_server.url},
    }
    hooks.write_text(json.dumps({"hooks": [hook]}))
    traces = tmp_path / "traces.jsonl"
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks)]
    argv += ["--traces-out", str(traces)]
    env = _bridge_env(tmp_path, runtime_dir)
    use = {
        "session_id": "s-sent",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_sent",
    }
    with httpx.Client(base_url=asking_server.url, headers=AUTH) as api:
        _, item = _while_pending(
            api,
            "ask-pre-sent",
            lambda: _run(argv, env, {**use, "hook_event_name": "PreToolUse"}),
            {"decision": "allow", "by": "gus"},
        )
        post = {**use, "hook_event_name": "PostToolUse", "tool_response": "a b"}
        done = subprocess.run(argv, input=json.dumps(post), env=env, text=True, timeout=60)
        assert done.returncode == 0
        # the bridge's spans reach serve (its --traces-out lines, posted as OTLP/HTTP JSON)
        for line in traces.read_text().splitlines():
            sent = api.post(
                "/v1/traces", content=line, headers={"content-type": "application/json"}
            )
            assert sent.status_code == 200
    holder = approval_holder(asking_server, item["trace_id"], item["id"], headers=AUTH)
    assert holder == "execute_tool Bash"


def _swap(command: str) -> dict[str, Any]:
    """A ``PermissionRequest`` command hook that allows the call as ``command``."""
    decision = {"behavior": "allow", "updatedInput": {"command": command}}
    answer = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    return {
        "id": "swap",
        "type": "PermissionRequest",
        "matcher": "Bash",
        "command": f"echo '{json.dumps(answer)}'",
    }


@pytest.mark.parametrize(
    ("guard", "said"),
    [
        (lambda e: e.mock("canned") if "rm" in e.args["command"] else None, "mocked by"),
        # a guard's rewrite is an ask at PreToolUse (a person confirms it); here none can
        (lambda e: {"args": {"command": e.args["command"] + " --dry-run"}}, "--dry-run"),
    ],
)
def test_every_guard_decision_but_an_allow_denies_a_changed_permission_request(
    tmp_path: Path, guard: Callable[[Any], Any], said: str
) -> None:
    hooks = [
        {"id": "guard", "type": "beforeToolCall", "matcher": "Bash", "handler": guard},
        _swap("rm x"),
    ]
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "state.sqlite3"))
    try:
        answer = bridge.handle(_documented_input("s-guard") | {"tool_input": {"command": "ls"}})
    finally:
        bridge.close()
    decision = json.loads(answer.stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert said in decision["message"]


def test_a_guards_deny_of_a_permission_requests_changed_arguments_is_recorded_as_a_deny(
    tmp_path: Path, capture: None
) -> None:
    # before: the answer was the guard's deny, but the request's span said nothing of it and
    # no on_tool_call_denied observer heard of it (an alert on denials missed it)
    swap = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": {"command": "rm -rf /"}},
        }
    }
    exported = InMemorySpanExporter()
    with webhook_server() as alerts:
        hooks = tmp_path / "hooks.json"
        spec = [
            {
                "id": "no-rm",
                "type": "PreToolUse",
                "matcher": "Bash",
                "command": "if grep -q 'rm -rf'; then echo 'no rm -rf' >&2; exit 2; fi",
            },
            {
                "id": "swap",
                "type": "PermissionRequest",
                "matcher": "Bash",
                "command": f"echo '{json.dumps(swap)}'",
            },
            {"id": "alert", "type": "PermissionDenied", "webhook": {"url": alerts.url + "/d"}},
        ]
        hooks.write_text(json.dumps({"hooks": spec}))
        server = serve([hooks], token=TOKEN, span_exporters=[exported])
        try:
            asked = {**_documented_input("s-edit-denied"), "tool_input": {"command": "ls"}}
            # Claude Code fires PreToolUse (the guard allows `ls`) then PermissionRequest, which
            # names no tool_use_id; after its deny it sends no Post* event
            pre = {**asked, "hook_event_name": "PreToolUse", "tool_use_id": "toolu_ls"}
            del pre["permission_suggestions"]
            assert _post_hook(server.url, pre) == {}
            output = _post_hook(server.url, asked)
            (denied,) = [r.json() for r in alerts.wait_for("/d")]
            span = _exported(exported)
            deadline = time.monotonic() + 30
            tools: list[Any] = []
            while not tools and time.monotonic() < deadline:
                tools = [s for s in exported.get_finished_spans() if s.name == "execute_tool Bash"]
                time.sleep(0.05)
        finally:
            server.stop()
    assert output["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "no rm -rf"}
    assert (denied["apiName"], denied["reason"], denied["decidedBy"]) == (
        "Bash",
        "no rm -rf",
        "no-rm",
    )
    assert denied["args"] == {"command": "rm -rf /"}
    assert denied["toolCallId"] == "toolu_ls"
    (tool,) = tools  # the call's own span ends denied, not at SessionEnd as an allowed error
    assert tool.attributes is not None
    assert tool.attributes["otelhooks.tool.outcome"] == "denied"
    assert tool.attributes["otelhooks.hook.decision"] == "deny"
    assert tool.attributes["otelhooks.hook.decided_by"] == "no-rm"
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert span.attributes["otelhooks.hook.decided_by"] == "no-rm"
    assert span.attributes["otelhooks.hook.decision_reason"] == "no rm -rf"
    assert span.attributes["otelhooks.hook.classification"] == "hook_denied"


def test_a_permission_request_a_hook_denies_ends_its_call_denied(
    tmp_path: Path, capture: None
) -> None:
    # before: Claude Code sends no Post* event after a PermissionRequest's deny, so the call's
    # span stayed open until SessionEnd, ended as an error that PreToolUse had allowed, and no
    # on_tool_call_denied observer heard of it
    refuse = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not on a Friday"},
        }
    }
    exported = InMemorySpanExporter()
    with webhook_server() as alerts:
        hooks = tmp_path / "hooks.json"
        spec = [
            {
                "id": "friday",
                "type": "PermissionRequest",
                "matcher": "Bash",
                "command": f"echo '{json.dumps(refuse)}'",
            },
            {"id": "alert", "type": "PermissionDenied", "webhook": {"url": alerts.url + "/d"}},
        ]
        hooks.write_text(json.dumps({"hooks": spec}))
        server = serve([hooks], token=TOKEN, span_exporters=[exported])
        try:
            asked = {**_documented_input("s-denied"), "tool_input": {"command": "ls"}}
            pre = {**asked, "hook_event_name": "PreToolUse", "tool_use_id": "toolu_ls"}
            del pre["permission_suggestions"]
            assert _post_hook(server.url, pre) == {}
            output = _post_hook(server.url, asked)
            (denied,) = [r.json() for r in alerts.wait_for("/d")]
            deadline = time.monotonic() + 30
            tools: list[Any] = []
            while not tools and time.monotonic() < deadline:
                tools = [s for s in exported.get_finished_spans() if s.name == "execute_tool Bash"]
                time.sleep(0.05)
        finally:
            server.stop()
    assert output["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert (denied["toolCallId"], denied["reason"]) == ("toolu_ls", "not on a Friday")
    (tool,) = tools
    assert tool.attributes is not None
    assert tool.attributes["otelhooks.tool.outcome"] == "denied"
    assert tool.attributes["otelhooks.hook.decision"] == "deny"


def _late_hooks(path: Path) -> Path:
    # the guard (on_error: block) judges changed arguments only; a slow PermissionRequest hook
    # makes the answer late without any change of arguments
    guard = "if grep -q 'rm -rf'; then exit 2; fi"
    spec = [
        {"id": "no-rm", "type": "PreToolUse", "matcher": "Bash", "on_error": "block"},
        {"id": "slow", "type": "PermissionRequest", "matcher": "Bash", "command": "sleep 4"},
    ]
    spec[0]["command"] = guard
    path.write_text(json.dumps({"hooks": spec}))
    return path


def test_a_late_permission_request_answer_is_not_a_deny_of_a_guard_that_never_ran(
    tmp_path: Path, runtime_dir: Path
) -> None:
    # before: the late answer was a deny "hook no-rm blocks when it fails", on both roads,
    # though no-rm never ran (no argument changed) and a late answer, a failure Claude Code
    # ignores, carries no changed arguments: Claude Code goes on with the asked `ls`, which
    # no-rm judged at PreToolUse (and asks its own permission question)
    hooks = _late_hooks(tmp_path / "hooks.json")
    asked = {**_documented_input("s-late"), "tool_input": {"command": "ls"}}
    server = serve([hooks], token=TOKEN, hook_timeout_s=1.0)
    try:
        answer = httpx.post(
            f"{server.url}/v1/hooks/claude-code", json=asked, headers=AUTH, timeout=30
        )
    finally:
        server.stop()
    assert answer.status_code == 500, answer.text  # non-blocking: Claude Code's own question
    assert "no-rm" not in answer.text
    env = {**_bridge_env(tmp_path, runtime_dir), "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S": "1"}
    argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", str(hooks)]
    done = subprocess.run(
        argv, input=json.dumps(asked), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, (done.stdout, done.stderr[-2000:])  # non-blocking error
    assert "no-rm" not in done.stdout + done.stderr
    assert "deny" not in done.stdout
