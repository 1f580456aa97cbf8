"""Secrets end to end: the demo with every exporter and every hook kind on, then a search of
everything that left the agent process.

Three secrets are planted: one in the environment (used by webhook header templates through
``allowedEnvVars``), one in a tool's arguments and one in the tool's result. The agent runs in a
subprocess (``_secrets_agent.py``: the demo scenario plus one tool call carrying the content
secrets) with: OTLP JSON lines to a file, OTLP/HTTP to a real receiver that keeps whole
requests, the Prometheus endpoint, structlog lines on its stdout/stderr, a durable event log
served over ``/v1/events``, a notification webhook, a queue-mode webhook (SQLite outbox), a
control webhook, a notification webhook limited by ``eventFields``, one whose ``eventFields``
names the arguments, a command hook that writes down what it was given, and three hooks that
fail quoting the environment secret (a command printing it to stderr, two Python hooks raising
with it). It runs once with content capture off and once with it on.

The rules tested: the environment secret is only ever in the header of the requests to the
endpoints whose template names it; a hook's error text that quotes it is recorded with
``[REDACTED]`` in its place. Content (arguments, results) reaches telemetry only with capture on,
and then only in the ``gen_ai.*`` content attributes. Content leaves over the network only where
the user turned it on: notification bodies and their outbox rows carry it only with capture on
(in their payload fields) or where ``eventFields`` names it; the control webhook (it decides on
the call) and the command hook (the user's own code, on this machine) get the whole event.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otelhooks import read_otlp_json_lines
from tests._webhook_server import Received, Reply, webhook_server
from tests.reliability._parts import RawRequest, raw_otlp_sink

AGENT = Path(__file__).with_name("_secrets_agent.py")
ENV_VAR = "RELIABILITY_SECRET_TOKEN"
# Where each webhook's template puts the environment secret: (path, header name).
SECRET_HEADERS = {
    ("/notify", "authorization"),
    ("/control", "authorization"),
    ("/queued", "x-api-key"),
}
CONTENT_ATTRIBUTES = {
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
}
# The payload fields of a LobeHub body that carry a tool's arguments or result.
BODY_CONTENT_FIELDS = {"args", "toolInput", "content", "result", "toolOutput"}
NOTIFICATIONS = ("/notify", "/queued", "/plain", "/opt-in")
# The hooks that fail quoting the environment secret, and where their failure is recorded.
LEAKY_INTERCEPTORS = ("leaky-command", "leaky-interceptor")
LEAKY_HOOKS = (*LEAKY_INTERCEPTORS, "leaky-observer")
COMMAND_CONTENT_VARIABLES = {"HOOK_EVENT_PAYLOAD", "HOOK_TOOL_INPUT", "HOOK_TOOL_RESULT"}


@dataclass
class AgentRun:
    """What one run of the agent process left behind, and where."""

    capture: bool
    env_secret: str
    arg_secret: str
    result_secret: str
    workdir: Path
    stdout: str
    stderr: str
    webhooks: list[Received]
    otlp: list[RawRequest]

    @property
    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = json.loads((self.workdir / "summary.json").read_text())
        return summary

    def file(self, name: str) -> bytes:
        return (self.workdir / name).read_bytes()

    def sqlite_files(self, name: str) -> bytes:
        """A SQLite file as it is on disk after the run, with any ``-wal``/``-shm`` beside it."""
        return b"".join(p.read_bytes() for p in sorted(self.workdir.glob(name + "*")))

    def commands(self) -> list[dict[str, Any]]:
        """What each run of the command hook was given: ``stdin`` and its ``HOOK_*`` variables."""
        return [json.loads(p.read_text()) for p in sorted((self.workdir / "commands").iterdir())]

    def requests_to(self, path: str) -> list[Received]:
        return [r for r in self.webhooks if r.path == path]

    def telemetry(self) -> dict[str, bytes]:
        """Every place telemetry went, each as bytes: where content needs capture on."""
        places = {
            "traces file": self.file("traces.jsonl"),
            "prometheus page": self.file("prometheus.txt"),
            "log lines (stdout)": self.stdout.encode(),
            "log lines (stderr)": self.stderr.encode(),
            "event records over /v1/events": self.file("events.json"),
            "event log file while open": self.file("eventlog-open.bin"),
            "event log file after the run": self.sqlite_files("events.sqlite3"),
        }
        for i, request in enumerate(self.otlp):
            places[f"OTLP request {i} to {request.path}"] = request.body
            places[f"OTLP request {i} headers"] = json.dumps(request.headers).encode()
        return places

    def metrics_and_records(self) -> dict[str, bytes]:
        """The telemetry that never carries content, whatever the capture switch says."""
        return {
            name: data
            for name, data in self.telemetry().items()
            if "traces" not in name and "/v1/traces" not in name
        }


def run_agent(workdir: Path, *, capture: bool) -> AgentRun:
    env_secret = "env-" + secrets.token_hex(12)
    arg_secret = "arg-" + secrets.token_hex(12)
    result_secret = "result-" + secrets.token_hex(12)
    with webhook_server() as server, raw_otlp_sink() as sink:
        server.routes["/control"] = Reply.json({"decision": "allow"})
        # The queued delivery of the secret tool call is held, so its outbox row is pending
        # when the agent copies the outbox file.
        server.routes["/queued"] = lambda got: Reply(
            204, delay_s=1.0 if b"vault" in got.body else 0
        )
        settings = {
            "workdir": str(workdir),
            "webhook_url": server.url,
            "capture": capture,
            "arg_secret": arg_secret,
            "result_secret": result_secret,
        }
        env = {
            **os.environ,
            ENV_VAR: env_secret,
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
        # The GenAI switch, which the webhook deliverer reads too (configure() gets it as well).
        env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
        if capture:
            env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        proc = subprocess.run(
            [sys.executable, str(AGENT), json.dumps(settings)],
            capture_output=True, text=True, env=env, timeout=90, cwd=workdir,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
        return AgentRun(
            capture, env_secret, arg_secret, result_secret, workdir, proc.stdout, proc.stderr,
            list(server.received), list(sink.requests),
        )  # fmt: skip


@pytest.fixture(scope="module")
def capture_off(tmp_path_factory: pytest.TempPathFactory) -> AgentRun:
    return run_agent(tmp_path_factory.mktemp("capture-off"), capture=False)


@pytest.fixture(scope="module")
def capture_on(tmp_path_factory: pytest.TempPathFactory) -> AgentRun:
    return run_agent(tmp_path_factory.mktemp("capture-on"), capture=True)


@pytest.fixture(params=["capture-off", "capture-on"])
def either(request: pytest.FixtureRequest) -> AgentRun:
    run: AgentRun = request.getfixturevalue(request.param.replace("-", "_"))
    return run


def holding(places: dict[str, bytes], secret: str) -> list[str]:
    return sorted(name for name, data in places.items() if secret.encode() in data)


def json_paths(value: Any, needle: str, path: str = "") -> set[str]:
    """Paths of the strings in ``value`` that contain ``needle``; an OTLP ``{key, value}`` pair
    is named by its key, and strings holding JSON are searched inside too."""
    found: set[str] = set()
    if isinstance(value, dict):
        if "key" in value and "value" in value:
            return {f"{path}/{value['key']}"} if needle in json.dumps(value["value"]) else set()
        for key, item in value.items():
            found |= json_paths(item, needle, f"{path}/{key}")
    elif isinstance(value, list):
        for item in value:
            found |= json_paths(item, needle, path)
    elif isinstance(value, str) and needle in value:
        found.add(path)
    return found


def protobuf_paths(message: Message, needle: str, path: str = "") -> set[str]:
    """As :func:`json_paths`, over every string field of a protobuf message."""
    found: set[str] = set()
    for field, value in message.ListFields():
        for item in value if field.is_repeated else [value]:
            if isinstance(item, Message):
                name = field.name
                if item.DESCRIPTOR.name == "KeyValue":
                    name += "/" + item.key  # type: ignore[attr-defined]
                found |= protobuf_paths(item, needle, f"{path}/{name}")
            elif isinstance(item, str | bytes) and needle.encode() in (
                item.encode() if isinstance(item, str) else item
            ):
                found.add(f"{path}/{field.name}")
    return found


def attribute_key(path: str) -> str:
    """The attribute a path found in a span goes through (``.../attributes/<key>/...``)."""
    parts = path.split("/")
    assert "attributes" in parts, f"content outside any attribute: {path}"
    return parts[parts.index("attributes") + 1]


# -- the run itself --------------------------------------------------------------------------------


def test_the_run_fired_every_hook_type_and_fed_every_exporter(either: AgentRun) -> None:
    assert either.summary["missing"] == []
    file_spans = read_otlp_json_lines(either.workdir / "traces.jsonl")
    otlp_spans = [
        span
        for r in either.otlp
        if r.path == "/v1/traces"
        for rs in ExportTraceServiceRequest.FromString(r.body).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    assert len(file_spans) == len(otlp_spans) > 60
    assert any(r.path == "/v1/metrics" for r in either.otlp)
    assert b"otelhooks_tool_calls" in either.file("prometheus.txt")
    assert either.summary["records"] > 20
    assert b"vault/lookup" in either.file("events.json")
    for path in (*NOTIFICATIONS, "/control"):
        assert either.requests_to(path), f"nothing reached {path}"
    assert either.commands()
    assert b"agent event" in either.stdout.encode()  # notices and other log lines were written


# -- the environment secret ------------------------------------------------------------------------


def test_the_env_secret_is_in_the_header_of_every_request_meant_for_it(either: AgentRun) -> None:
    for path, header in SECRET_HEADERS:
        values = [r.headers.get(header, "") for r in either.requests_to(path)]
        assert values
        assert all(either.env_secret in v for v in values), (path, header)


def test_the_env_secret_is_in_no_other_header_and_no_webhook_body(either: AgentRun) -> None:
    for request in either.webhooks:
        elsewhere = [
            name
            for name, value in request.headers.items()
            if either.env_secret in value and (request.path, name) not in SECRET_HEADERS
        ]
        assert elsewhere == [], request.path
        assert either.env_secret.encode() not in request.body, request.path


def test_the_env_secret_reaches_no_telemetry(either: AgentRun) -> None:
    assert holding(either.telemetry(), either.env_secret) == []


def test_the_outbox_keeps_the_header_template_never_the_env_secret(either: AgentRun) -> None:
    pending = either.file("outbox-pending.bin")
    assert f"${{{ENV_VAR}}}".encode() in pending  # the pending row is really in the copy
    assert either.env_secret.encode() not in pending
    assert either.env_secret.encode() not in either.sqlite_files("outbox.sqlite3")


def test_the_command_hook_gets_no_env_secret_from_otelhooks(either: AgentRun) -> None:
    # The command inherits the environment (as a shell would); otelhooks itself never copies the
    # secret into its stdin or the HOOK_* variables.
    for given in either.commands():
        assert either.env_secret not in given["stdin"]
        assert not [k for k, v in given["env"].items() if either.env_secret in v]


def test_hook_failures_quoting_the_env_secret_are_recorded_redacted(either: AgentRun) -> None:
    # The failures are recorded (so their absence elsewhere is no accident), the secret replaced.
    lines = [json.loads(line) for line in either.file("traces.jsonl").decode().splitlines()]
    errors = [
        error
        for line in lines
        for rs in line["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for attribute in span.get("attributes", [])
        if attribute["key"] == "otelhooks.hook.errors"
        for error in [v["stringValue"] for v in attribute["value"]["arrayValue"]["values"]]
    ]
    for hook_id in LEAKY_INTERCEPTORS:
        (error,) = [e for e in errors if e.startswith(f"{hook_id}: ")]
        assert "[REDACTED]" in error, error
    logs = either.stdout + either.stderr
    for hook_id in LEAKY_HOOKS:
        failures = [line for line in logs.splitlines() if hook_id in line and "failed" in line]
        assert failures, hook_id
        assert all("[REDACTED]" in line for line in failures), failures
    assert "vault token: [REDACTED]" in logs  # the command's stderr excerpt
    assert either.env_secret not in logs


# -- content, capture off --------------------------------------------------------------------------


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_without_capture_no_content_reaches_any_telemetry(
    capture_off: AgentRun, secret: str
) -> None:
    assert holding(capture_off.telemetry(), getattr(capture_off, secret)) == []


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_without_capture_notification_bodies_carry_no_content(
    capture_off: AgentRun, secret: str
) -> None:
    needle = getattr(capture_off, secret).encode()
    for path in ("/notify", "/queued", "/plain"):
        requests = capture_off.requests_to(path)
        assert requests
        assert [r for r in requests if needle in r.body] == [], path
    vault = [r.json() for r in capture_off.requests_to("/notify") if b"vault" in r.body]
    assert [(b["apiName"], b["success"], b["result"]["success"]) for b in vault] == [
        ("lookup", True, True)  # the call is reported, without its content
    ]


def test_the_pending_outbox_row_carries_content_only_with_capture_on(
    capture_off: AgentRun, capture_on: AgentRun
) -> None:
    for run in (capture_off, capture_on):
        pending = run.file("outbox-pending.bin")
        assert b"vault" in pending  # the row of the secret tool call is in the copy
        assert (run.arg_secret.encode() in pending) is run.capture
        assert (run.result_secret.encode() in pending) is run.capture


# -- content, whatever the capture switch ----------------------------------------------------------


def test_a_webhook_whose_event_fields_name_the_arguments_receives_them(either: AgentRun) -> None:
    bodies = [r.json() for r in either.requests_to("/opt-in")]
    assert [(b["apiName"], b["args"]) for b in bodies] == [("lookup", {"query": either.arg_secret})]
    assert either.result_secret not in json.dumps(bodies)  # the result was not named


def test_a_webhook_limited_by_event_fields_receives_no_content(either: AgentRun) -> None:
    for request in either.requests_to("/plain"):
        assert either.arg_secret.encode() not in request.body
        assert either.result_secret.encode() not in request.body


def test_a_control_webhook_sees_the_arguments_but_not_yet_a_result(either: AgentRun) -> None:
    bodies = [r.json() for r in either.requests_to("/control")]
    assert [b["args"] for b in bodies] == [{"query": either.arg_secret}]
    assert either.result_secret not in json.dumps(bodies)


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_the_command_hook_gets_content_only_in_its_payload_channels(
    either: AgentRun, secret: str
) -> None:
    needle = getattr(either, secret)
    (given,) = [g for g in either.commands() if needle in json.dumps(g)]
    assert {k for k, v in given["env"].items() if needle in v} <= COMMAND_CONTENT_VARIABLES
    stdin = json.loads(given["stdin"])
    assert {p.split("/")[1] for p in json_paths(stdin, needle)} <= {
        *BODY_CONTENT_FIELDS,
        "tool_input",
        "tool_response",
    }


# -- content, capture on ---------------------------------------------------------------------------


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_notification_bodies_carry_content_only_with_capture_on_in_their_payload_fields(
    capture_off: AgentRun, capture_on: AgentRun, secret: str
) -> None:
    carriers: dict[bool, set[str]] = {}
    for run in (capture_off, capture_on):
        needle = getattr(run, secret)
        carriers[run.capture] = set()
        for request in run.webhooks:
            paths = json_paths(request.json(), needle)
            if paths and request.path in NOTIFICATIONS:
                carriers[run.capture].add(request.path)
            assert {p.split("/")[1] for p in paths} <= BODY_CONTENT_FIELDS, (request.path, paths)
    opted_in = {"/opt-in"} if secret == "arg_secret" else set()  # its eventFields name args
    assert carriers[False] == opted_in
    assert carriers[True] == {"/notify", "/queued"} | opted_in


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_with_capture_on_exported_spans_hold_content_only_in_gen_ai_attributes(
    capture_on: AgentRun, secret: str
) -> None:
    needle = getattr(capture_on, secret)
    paths: set[str] = set()
    for request in capture_on.otlp:
        if request.path == "/v1/traces":
            paths |= protobuf_paths(ExportTraceServiceRequest.FromString(request.body), needle)
    keys = {attribute_key(p) for p in paths}
    assert keys  # capture on: the content is there
    assert keys <= CONTENT_ATTRIBUTES


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_with_capture_on_the_traces_file_holds_content_only_in_gen_ai_attributes(
    capture_on: AgentRun, secret: str
) -> None:
    needle = getattr(capture_on, secret)
    lines = capture_on.file("traces.jsonl").decode().splitlines()
    paths = set().union(*(json_paths(json.loads(line), needle) for line in lines))
    keys = {attribute_key(p) for p in paths}
    assert keys
    assert keys <= CONTENT_ATTRIBUTES


@pytest.mark.parametrize("secret", ["arg_secret", "result_secret"])
def test_with_capture_on_metrics_logs_and_records_still_hold_no_content(
    capture_on: AgentRun, secret: str
) -> None:
    assert holding(capture_on.metrics_and_records(), getattr(capture_on, secret)) == []
