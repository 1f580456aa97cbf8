"""A recording says the attribute length limit it was made under, and replay reads it.

Every provider otelhooks makes puts the span attribute value length limit in effect on its
resource (``otelhooks.attribute_value_length_limit``). Without it, a span none of whose values
is provably cut could not show that its ids were: a session id cut to the limit was handed to
hooks as if whole, and a guard comparing it read "changes: none", exit 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks import semconv
from tests.replay.conftest import replay_main

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
SESSION = "session-0123456789abcdef"  # 24 characters; every other value read is at most 21
AGENT = f"""\
import otelhooks

oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False, capture_content=True)


@otelhooks.tool(identifier="fs", name="rm", tracer=oh.tracer)
def rm(path: str) -> str:
    return "deleted"


with oh.tracer.operation("research-assistant", session_id="{SESSION}") as op:
    with op.step():
        rm("/")
oh.shutdown()
"""
GUARD = f"""\
hooks:
  - id: session-guard
    type: before_tool_call
    matcher: fs/rm
    command: 'test "$HOOK_SESSION_ID" = {SESSION} && exit 2; exit 0'
"""


def unsay_limit(recording: Path) -> None:
    """Take the limit off ``recording``'s resources: a recording no otelhooks provider made."""
    lines = []
    for line in recording.read_text().splitlines():
        request = json.loads(line)
        for resource_spans in request["resourceSpans"]:
            attributes = resource_spans["resource"]["attributes"]
            attributes[:] = [
                kv for kv in attributes if kv["key"] != semconv.ATTRIBUTE_VALUE_LENGTH_LIMIT
            ]
        lines.append(json.dumps(request))
    recording.write_text("".join(f"{line}\n" for line in lines))


def _limits(recording: Path) -> list[int]:
    return [
        int(kv["value"]["intValue"])
        for line in recording.read_text().splitlines()
        for resource_spans in json.loads(line)["resourceSpans"]
        for kv in resource_spans["resource"]["attributes"]
        if kv["key"] == semconv.ATTRIBUTE_VALUE_LENGTH_LIMIT
    ]


def _env(limit: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL")}
    env["PYTHONPATH"] = str(REPO)
    if limit is not None:
        env["OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"] = str(limit)
    return env


def _configured_run(folder: Path, limit: int | None) -> Path:
    (folder / "agent.py").write_text(AGENT)
    done = subprocess.run(
        [sys.executable, "agent.py"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(limit),
        cwd=folder,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (folder / "policy.yaml").write_text(GUARD)
    return folder / "traces.jsonl"


def test_a_session_id_cut_where_nothing_else_is_is_not_a_policy_that_passed(
    tmp_path: Path,
) -> None:
    # 22 cuts the session id alone: no value of the run's span or the call's shows the limit
    traces = _configured_run(tmp_path, 22)
    assert set(_limits(traces)) == {22}
    run = replay_main(traces, "--hooks", tmp_path / "policy.yaml", "--format", "json")
    assert run.code == 2, run.stdout
    summary = run.one("summary")
    assert summary["events"] == 0
    assert summary["unreadable"] == 2  # the run and the call (which inherits its session)
    assert f"{SESSION[:22]!r} was cut short, or may have been" in run.stderr

    # the same recording without the limit said: the call is replayed on the cut id
    unsay_limit(traces)
    run = replay_main(traces, "--hooks", tmp_path / "policy.yaml", "--format", "json")
    assert run.code == 0, run.stderr
    assert run.one("summary")["unreadable"] == 0


def test_a_recording_made_with_no_limit_says_none_and_replays_as_before(tmp_path: Path) -> None:
    traces = _configured_run(tmp_path, None)
    assert _limits(traces) == []
    run = replay_main(traces, "--hooks", tmp_path / "policy.yaml", "--format", "json")
    assert run.code == 0, run.stderr
    summary = run.one("summary")
    assert summary["unreadable"] == 0
    assert summary["changes"] == {"deny": 1}  # the guard reads the whole session id


def test_a_claude_code_bridge_recording_says_its_limit(tmp_path: Path) -> None:
    # the one-process bridge (a real process) under a limit that cuts the session id alone
    session = "s-0123456789abcdef0123456789abcdef"
    (tmp_path / "none.yaml").write_text("hooks: []\n")
    traces = tmp_path / "traces.jsonl"
    env = _env(24) | {"OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3")}
    for event in ("PreToolUse", "PostToolUse"):
        payload = {
            "session_id": session,
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": "use-Bash",
            "cwd": "/",
            "tool_response": "done",
        }
        done = subprocess.run(
            [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "none.yaml",
             "--traces-out", str(traces)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert set(_limits(traces)) == {24}
    guard = GUARD.replace("fs/rm", "Bash").replace(SESSION, session)
    (tmp_path / "policy.yaml").write_text(guard.replace("before_tool_call", "PreToolUse"))
    run = replay_main(traces, "--hooks", tmp_path / "policy.yaml", "--format", "json")
    assert run.code == 2, run.stdout
    assert run.one("summary")["unreadable"] >= 1
    assert f"gen_ai.conversation.id {session[:24]!r} was cut short" in run.stderr


def test_every_provider_otelhooks_makes_says_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # in process: configure() (the MCP gateway's and the bridges' too), serve's web serving and
    # the bridges' span writer (the daemon's and serve's); the span limit wins over the general
    from otelhooks import configure
    from otelhooks._resource import recording_resource
    from otelhooks.integrations.coding_agents import _spans
    from otelhooks.web._serving import web_serving

    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "64")
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "48")
    oh = configure(set_global=False, structured_logging=False, otlp=False)
    serving = web_serving(token="t")
    try:
        writer = _spans.SpanWriter((), recording_resource({"service.name": "bridge"}))
        for provider in (oh.tracer_provider, serving.provider, writer.provider):
            assert provider.resource.attributes[semconv.ATTRIBUTE_VALUE_LENGTH_LIMIT] == 48
    finally:
        serving.close()
        oh.shutdown()
    monkeypatch.delenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    monkeypatch.delenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    oh = configure(set_global=False, structured_logging=False, otlp=False)
    try:
        assert semconv.ATTRIBUTE_VALUE_LENGTH_LIMIT not in oh.tracer_provider.resource.attributes
    finally:
        oh.shutdown()
