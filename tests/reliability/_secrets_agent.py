"""The agent process of the secrets test: the demo with every exporter and hook kind on.

Run as ``python _secrets_agent.py SETTINGS_JSON``. The secret to keep is in the environment
(``RELIABILITY_SECRET_TOKEN``); the content secrets (a tool argument and a tool result) are in
the settings. Everything it can only see from inside (the Prometheus page, the event log over
HTTP, the SQLite files while open) is written to ``workdir`` for the test to search; its log
lines are its stdout and stderr.

Besides the hooks that work, three fail quoting the environment secret: a command interceptor
that prints it to stderr and exits 1, and a Python interceptor and a Python observer that raise
with it in their message.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from prometheus_client import CollectorRegistry, start_http_server

from otelhooks import AgentEvents, EventLogServer, HookEvent, OtelHooks, configure, load_config

# The demo's scenario (every lifecycle event, hooks firing) has no public API: its public face is
# `otelhooks demo`, which takes neither this run's exporters nor Python hooks that fail.
from otelhooks._demo import missing_events, run_demo

POINTS = ["after_tool_result", "after_turn", "after_loop", "on_terminate", "on_error",
          "on_budget_threshold"]  # fmt: skip
COMMAND = (
    "import json, os, sys, uuid\n"
    "data = {'stdin': sys.stdin.read(),\n"
    "        'env': {k: v for k, v in os.environ.items() if k.startswith('HOOK_')}}\n"
    "with open(os.path.join(sys.argv[1], 'command-' + uuid.uuid4().hex + '.json'), 'w') as f:\n"
    "    json.dump(data, f)\n"
)
LEAKY_COMMAND = 'echo "vault token: $RELIABILITY_SECRET_TOKEN" >&2; exit 1'


def leaky_handler(event: HookEvent) -> None:
    """A Python hook that fails quoting the secret (a connection string in an error, say)."""
    raise RuntimeError(f"cannot reach the vault with {os.environ['RELIABILITY_SECRET_TOKEN']}")


def hook_files(settings: dict[str, Any], workdir: Path) -> list[Path]:
    """The hooks, as a user writes them: an otelhooks/LobeHub list and an agent_events doc."""
    url = settings["webhook_url"]
    secret_header = "Bearer ${RELIABILITY_SECRET_TOKEN}"
    allowed = ["RELIABILITY_SECRET_TOKEN"]
    hooks = [
        {"id": "notify", "type": "afterToolCall",
         "webhook": {"url": f"{url}/notify", "headers": {"Authorization": secret_header},
                     "allowedEnvVars": allowed}},
        {"id": "queued", "type": "afterToolCall",
         "webhook": {"url": f"{url}/queued", "delivery": "queue",
                     "headers": {"X-Api-Key": "${RELIABILITY_SECRET_TOKEN}"},
                     "allowedEnvVars": allowed}},
        {"id": "control", "type": "beforeToolCall", "matcher": "^vault/",
         "webhook": {"url": f"{url}/control", "responseHandling": "toolCall",
                     "headers": {"Authorization": secret_header}, "allowedEnvVars": allowed}},
        {"id": "plain", "type": "afterToolCall",
         "webhook": {"url": f"{url}/plain", "eventFields": ["toolCallId", "apiName", "success"]}},
        {"id": "opt-in", "type": "afterToolCall", "matcher": "^vault/",
         "webhook": {"url": f"{url}/opt-in", "eventFields": ["toolCallId", "apiName", "args"]}},
        {"id": "leaky-command", "type": "beforeToolCall", "matcher": "^vault/",
         "command": LEAKY_COMMAND},
        {"id": "recorder", "type": "afterToolCall", "matcher": "^vault/",
         "command": [sys.executable, "-c", COMMAND, str(workdir / "commands")]},
    ]  # fmt: skip
    events = {"kind": "agent_events", "name": "reliability", "on": POINTS, "durable": True,
              "path": "events.sqlite3", "show_notice": True}  # fmt: skip
    (workdir / "hooks.yaml").write_text(yaml.safe_dump({"hooks": hooks}))
    (workdir / "events.yaml").write_text(yaml.safe_dump(events))
    return [workdir / "hooks.yaml", workdir / "events.yaml"]


def files_bytes(path: Path) -> bytes:
    """A SQLite file with its ``-wal`` and ``-shm`` companions, as bytes."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def vault_run(oh: OtelHooks, settings: dict[str, Any]) -> str:
    """One tool call carrying the content secrets, instrumented as a runtime does it with the
    public API: a model call asks for it, the tool answers, a second model call reads the answer
    (with capture on, it is in that call's input messages), and the reply is sent."""
    prompt = "find the key"
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    args = {"query": settings["arg_secret"]}
    with oh.operation("vault-agent", input=prompt, session_id="vault", user_id="user-1") as op:
        with op.step() as step:
            with step.llm("scripted-model", messages=messages) as model:
                model.record("looking it up", finish_reason="tool_calls")
            messages.append({"role": "assistant", "content": "looking it up"})
            result = step.run_tool(
                "vault", "lookup", args, lambda query: f"the key is {settings['result_secret']}"
            )
            messages.append({"role": "tool", "content": result.content})
        with op.step() as step:
            with step.llm("scripted-model", messages=messages) as model:
                model.record("found it", finish_reason="stop")
            op.send_message("chat", "user-1", "found it")
    return op.reason


def main() -> int:
    settings = json.loads(sys.argv[1])
    workdir = Path(settings["workdir"])
    (workdir / "commands").mkdir()
    loaded = load_config(hook_files(settings, workdir))
    # the Prometheus page as `otelhooks demo --prometheus-port` serves it: OTel's reader on a
    # registry of its own, served on 127.0.0.1
    registry = CollectorRegistry()
    prometheus = PrometheusMetricReader(registry=registry)
    page, page_thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    oh = configure(
        service_name="reliability-secrets",
        traces_out=workdir / "traces.jsonl",
        otlp=True,
        metric_readers=[prometheus],
        capture_content=settings["capture"],
        outbox_path=workdir / "outbox.sqlite3",
    )
    events = AgentEvents(loaded.agent_events[0])
    events.install(oh.hooks)
    report = run_demo(oh, extra_hooks=loaded.hooks)
    oh.register(
        [
            {"id": "leaky-interceptor", "type": "beforeToolCall", "matcher": "^vault/",
             "handler": leaky_handler},
            {"id": "leaky-observer", "type": "afterToolCall", "matcher": "^vault/",
             "handler": leaky_handler},
        ]
    )  # fmt: skip
    reason = vault_run(oh, settings)
    assert reason == "done", reason
    # The endpoint holds the vault event's queued delivery for a while: its row is pending now.
    (workdir / "outbox-pending.bin").write_bytes(files_bytes(workdir / "outbox.sqlite3"))
    assert oh.force_flush(30)
    (workdir / "prometheus.txt").write_text(
        httpx.get(f"http://127.0.0.1:{page.server_port}/metrics", timeout=10).text
    )
    with EventLogServer([events.log], token="reliability-admin") as server:
        answer = httpx.get(
            f"{server.url}/v1/events?limit=1000",
            headers={"Authorization": "Bearer reliability-admin"},
            timeout=10,
        )
    (workdir / "events.json").write_text(answer.text)
    records = answer.json()["events"]
    (workdir / "eventlog-open.bin").write_bytes(files_bytes(workdir / "events.sqlite3"))
    oh.shutdown()
    events.log.close()
    page.shutdown()
    page.server_close()
    page_thread.join(5)
    summary = {"missing": missing_events(report), "records": len(records)}
    (workdir / "summary.json").write_text(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
